"""The signals site: one small page per signal search engines read (indexability, hreflang, structured data,
transport, sitemap quality), with the findings a correct audit gives it declared next to each page.

Bodies and headers may hold `{origin}` (this site, 'http://IP:PORT') and `{other}` (the second signals host),
filled in per request. Every page has a fitting title, description, H1 and enough words, so the only findings
of the issue-47 families are the declared ones (SIGNALS_EXPECTED).
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from infra.fixture_site._http import Request, Response
from infra.fixture_site._routes import RouteContext, RouteLike, data, html, redirect, text, xml
from infra.fixture_site._server import SiteSpec
from seolens_core.report_html._signals import SIGNAL_LINES

SIGNALS = "signals"
SIGNALS_OTHER = "signals-other"
SIGNALS_OTHER_IP = "127.0.0.5"
_WORDS = " ".join(
    "Signals fixture prose keeps every page above the thin content threshold with plain words."
    for _ in range(24)
)


@dataclass(frozen=True, slots=True)
class SignalPage:
    """One page: extra `<head>` markup, response headers, status and content type; `expected` holds the
    issue-47 findings (code, family) it must get and no others of those families."""

    path: str
    head: str = ""
    headers: tuple[tuple[str, str], ...] = ()
    body: str = ""
    status: int = 200
    content_type: str = "text/html"
    expected: tuple[tuple[str, str], ...] = ()
    title: str = ""

    def render(self, ctx: RouteContext) -> Response:
        fill = {"origin": ctx.base_url, "other": ctx.sites.get(SIGNALS_OTHER, ctx.base_url)}
        headers = tuple((k, v.format(**fill)) for k, v in self.headers)
        if self.content_type != "text/html":
            return data(self.body.format(**fill).encode(), self.content_type, self.status, headers)
        title = self.title or f"Signals fixture page {self.path} for the audit"
        page = (
            f"<!doctype html><html lang=en><head><title>{title[:60]}</title>"
            '<meta name="description" content="A page of the signals fixture site, made to carry exactly '
            'one signal that search engines read.">'
            f"{self.head.format(**fill)}</head><body><h1>{self.path}</h1><p>{_WORDS}</p>"
            f"{self.body.format(**fill)}</body></html>"
        )
        return html(page, self.status, headers)


INDEXABILITY = "Indexability"
_C = "CANONICAL"

SIGNAL_PAGES: tuple[SignalPage, ...] = (
    # 1. Indexability from every source.
    SignalPage("/idx/target"),
    SignalPage(
        "/idx/report.pdf",
        headers=(("X-Robots-Tag", "noindex"),),
        body="%PDF-1.4 not really a PDF",
        content_type="application/pdf",
        expected=(("ALERT_NOINDEX", INDEXABILITY),),
    ),
    SignalPage(
        "/idx/googlebot-noindex",
        head='<meta name="googlebot" content="noindex">',
        expected=(("ALERT_NOINDEX", INDEXABILITY),),
    ),
    SignalPage("/idx/bingbot-noindex", head='<meta name="bingbot" content="noindex">'),
    SignalPage(
        "/idx/header-canonical",
        headers=(("Link", '<{origin}/idx/target>; rel="canonical"'),),
        expected=((f"ALERT_{_C}_ELSEWHERE", INDEXABILITY),),
    ),
    SignalPage(
        "/idx/two-canonicals",
        head='<link rel="canonical" href="{origin}/idx/two-canonicals">',
        headers=(("Link", '<{origin}/idx/target>; rel="canonical"'),),
        expected=((f"ALERT_{_C}_MULTIPLE", INDEXABILITY),),
    ),
    SignalPage(
        "/idx/relative-canonical",
        head='<link rel="canonical" href="/idx/target">',
        expected=((f"ALERT_{_C}_RELATIVE", INDEXABILITY), (f"ALERT_{_C}_ELSEWHERE", INDEXABILITY)),
    ),
    SignalPage(
        "/idx/cross-domain",
        head='<link rel="canonical" href="{other}/idx/target">',
        expected=((f"ALERT_{_C}_CROSS_DOMAIN", INDEXABILITY), (f"ALERT_{_C}_ELSEWHERE", INDEXABILITY)),
    ),
    SignalPage(
        "/idx/noindex-canonical",
        head='<meta name="robots" content="noindex"><link rel="canonical" href="{origin}/idx/target">',
        expected=(
            ("ALERT_NOINDEX", INDEXABILITY),
            (f"ALERT_{_C}_ELSEWHERE", INDEXABILITY),
            ("ALERT_NOINDEX_AND_CANONICAL", INDEXABILITY),
        ),
    ),
    SignalPage(
        "/idx/to-redirect",
        head='<link rel="canonical" href="{origin}/idx/moved">',
        expected=((f"ALERT_{_C}_ELSEWHERE", INDEXABILITY), (f"ALERT_{_C}_NON_200", INDEXABILITY)),
    ),
    SignalPage(
        "/idx/to-noindex",
        head='<link rel="canonical" href="{origin}/idx/googlebot-noindex">',
        expected=((f"ALERT_{_C}_ELSEWHERE", INDEXABILITY), (f"ALERT_{_C}_TO_NOINDEX", INDEXABILITY)),
    ),
    SignalPage(
        "/idx/unavailable",
        headers=(("X-Robots-Tag", "googlebot: unavailable_after: 2099-12-31"),),
        expected=(("ALERT_UNAVAILABLE_AFTER", INDEXABILITY),),
    ),
)
HREFLANG = "hreflang"
_H = "ALERT_HREFLANG"


def _alternates(*pairs: tuple[str, str]) -> str:
    return "".join(
        f'<link rel="alternate" hreflang="{lang}" href="{{origin}}{path}">' for lang, path in pairs
    )


SIGNAL_PAGES += (
    # 2. hreflang: /hl/en's alternates are found through its annotations (crawled, not linked).
    SignalPage(
        "/hl/en",
        head=_alternates(
            ("en", "/hl/en"),
            ("de", "/hl/de"),
            ("fr", "/hl/fr"),
            ("es", "/hl/es-moved"),
            ("it", "/hl/it"),
            ("x-default", "/hl/en"),
        ),
        expected=(
            (f"{_H}_NO_RETURN", HREFLANG),
            (f"{_H}_TO_NON_200", HREFLANG),
            (f"{_H}_TO_NON_CANONICAL", HREFLANG),
        ),
    ),
    SignalPage("/hl/de", head=_alternates(("de", "/hl/de"), ("en", "/hl/en"), ("x-default", "/hl/en"))),
    SignalPage("/hl/fr"),
    SignalPage("/hl/es"),
    SignalPage(
        "/hl/it",
        head='<link rel="canonical" href="{origin}/hl/it-main">',
        expected=((f"ALERT_{_C}_ELSEWHERE", INDEXABILITY),),
    ),
    SignalPage("/hl/it-main"),
    SignalPage(
        "/hl/bad",
        head=_alternates(("en-UK", "/hl/bad"), ("de", "/hl/de")),
        expected=(
            (f"{_H}_INVALID_CODE", HREFLANG),
            (f"{_H}_NO_X_DEFAULT", HREFLANG),
            (f"{_H}_NO_RETURN", HREFLANG),
        ),
    ),
    SignalPage(
        "/hl/noself",
        head=_alternates(("de", "/hl/de"), ("x-default", "/hl/de")),
        expected=((f"{_H}_NO_SELF", HREFLANG), (f"{_H}_NO_RETURN", HREFLANG)),
    ),
    # Annotated only in the sitemap (xhtml:link): sm-a and sm-b return each other there.
    SignalPage("/hl/sm-a", expected=((f"{_H}_INVALID_CODE", HREFLANG), (f"{_H}_NO_X_DEFAULT", HREFLANG))),
    SignalPage("/hl/sm-b"),
)
STRUCTURED = "Structured data"
_LD = '<script type="application/ld+json">{{{{{}}}}}</script>'
_CONTEXT = '"@context": "https://schema.org", '

SIGNAL_PAGES += (
    # 3. Structured data.
    SignalPage(
        "/sd/product",
        head=_LD.format(_CONTEXT + '"@type": "Product", "offers": {{"@type": "Offer", "price": "9"}}'),
    ),
    SignalPage(
        "/sd/broken",
        head=_LD.format('"@type": "Product",'),
        expected=(("ALERT_JSONLD_INVALID", STRUCTURED),),
    ),
    SignalPage(
        "/sd/no-context",
        head=_LD.format('"@type": "Organization", "name": "Acme"'),
        expected=(("ALERT_JSONLD_NO_CONTEXT", STRUCTURED),),
    ),
    SignalPage(
        "/sd/no-type",
        head=_LD.format(_CONTEXT + '"@graph": [{{"@type": "WebSite"}}, {{"name": "untyped"}}]'),
        expected=(("ALERT_JSONLD_NO_TYPE", STRUCTURED),),
    ),
)
TRANSPORT = "Security and transport"

SIGNAL_PAGES += (
    # 4. Transport (the site is plain http: no https finding may fire) and redirect kinds.
    SignalPage(
        "/tr/refresh",
        head='<meta http-equiv="refresh" content="0; url=/tr/refreshed">',
        expected=(("ALERT_META_REFRESH", TRANSPORT),),
    ),
    SignalPage(
        "/tr/refresh-delayed",
        head='<meta http-equiv="refresh" content="5; url={origin}/tr/refreshed">',
        expected=(("ALERT_META_REFRESH_DELAYED", TRANSPORT),),
    ),
    SignalPage("/tr/refreshed"),
    SignalPage("/tr/http-assets", body='<img src="http://{other}/pixel.png" alt="">'),
)
_TEMPORARY = ("ALERT_REDIRECT_TEMPORARY", TRANSPORT)
REDIRECTS: Mapping[str, tuple[str, int]] = {
    "/idx/moved": ("/idx/target", 301),
    "/hl/es-moved": ("/hl/es", 301),
    "/tr/temp302": ("/idx/target", 302),
    "/tr/temp307": ("/idx/target", 307),
    "/tr/perm308": ("/idx/target", 308),
}
REDIRECT_EXPECTED: Mapping[str, tuple[tuple[str, str], ...]] = {
    "/tr/temp302": (_TEMPORARY,),
    "/tr/temp307": (_TEMPORARY,),
}
REDIRECT_TYPES: Mapping[str, str | None] = {
    "/tr/temp302": "temporary",
    "/tr/temp307": "temporary",
    "/tr/perm308": "permanent",
    "/idx/moved": "permanent",
    "/tr/refresh": "meta refresh",
    "/tr/refresh-delayed": "meta refresh (delayed)",
    "/tr/refreshed": None,
}
DISALLOWED = ("/idx/private",)
NOT_LINKED = frozenset(
    {
        "/tr/refreshed",
        "/hl/de",
        "/hl/fr",
        "/hl/es",
        "/hl/it",
        "/hl/it-main",
        "/hl/sm-a",
        "/hl/sm-b",
        "/hl/es-moved",
    }
)
SITEMAP = "Sitemap quality"
# 7. Sitemap quality: the main sitemap lists non-indexable URLs; two more sitemaps (declared in robots.txt)
# have lastmod and host problems.
SITEMAP_PATHS = (
    "/",
    "/idx/target",
    "/idx/googlebot-noindex",
    "/idx/moved",
    "/idx/header-canonical",
    "/sm/gone",
    "/hl/sm-a",
    "/hl/sm-b",
)
SITEMAP_EXPECTED: tuple[tuple[str, str], ...] = (
    ("ALERT_SITEMAP_NON_INDEXABLE", "/idx/googlebot-noindex"),
    ("ALERT_SITEMAP_NON_INDEXABLE", "/idx/moved"),
    ("ALERT_SITEMAP_NON_INDEXABLE", "/idx/header-canonical"),
    ("ALERT_SITEMAP_NON_INDEXABLE", "/sm/gone"),
    ("ALERT_SITEMAP_LASTMOD_UNIFORM", "/sitemap-dates.xml"),
    ("ALERT_SITEMAP_LASTMOD_FUTURE", "/sitemap-mixed.xml"),
    ("ALERT_SITEMAP_LASTMOD_INVALID", "/sitemap-mixed.xml"),
    ("ALERT_SITEMAP_OTHER_HOSTS", "/sitemap-mixed.xml"),
    ("ALERT_SITEMAP_URLS_OUTSIDE_SCOPE", "/sitemap-mixed.xml"),
)
# Ten indexable pages, all with the same lastmod; then a future, an unreadable lastmod and another host.
UNIFORM_PATHS = (
    "/idx/target",
    "/idx/bingbot-noindex",
    "/hl/en",
    "/hl/de",
    "/hl/fr",
    "/hl/es",
    "/hl/it-main",
    "/sd/product",
    "/tr/refreshed",
    "/tr/http-assets",
)
MIXED_ENTRIES = (("/idx/target", "2099-01-01"), ("/hl/en", "yesterday"), ("{other}/idx/target", "2024-05-01"))
SITEMAP_ALTERNATES: Mapping[str, tuple[tuple[str, str], ...]] = {
    "/hl/sm-a": (("en", "/hl/sm-a"), ("en_US", "/hl/sm-a"), ("de", "/hl/sm-b")),
    "/hl/sm-b": (("en", "/hl/sm-a"), ("de", "/hl/sm-b"), ("x-default", "/hl/sm-a")),
}
# Every code of each family (report.html's lines of it): a family's findings on this site must be exactly the
# declared ones.
FAMILY_CODES: Mapping[str, frozenset[str]] = {
    family: frozenset(code for code, _ in lines) for family, lines in SIGNAL_LINES
}
# Indexability of some rows: (indexability, indexability_status) by path.
INDEXABILITY_OF: Mapping[str, tuple[str | None, str | None]] = {
    "/idx/target": ("indexable", None),
    "/idx/bingbot-noindex": ("indexable", None),
    "/idx/report.pdf": ("non-indexable", "noindex"),
    "/idx/googlebot-noindex": ("non-indexable", "noindex"),
    "/idx/header-canonical": ("non-indexable", "canonicalised"),
    "/idx/moved": ("non-indexable", "redirected"),
    "/idx/private": ("non-indexable", "blocked by robots.txt"),
    "/tr/refresh": ("non-indexable", "meta refresh"),
    "/tr/refresh-delayed": ("indexable", None),
    "/tr/perm308": ("non-indexable", "redirected"),
}
FAMILIES = tuple(FAMILY_CODES)
assert set(FAMILIES) == {INDEXABILITY, HREFLANG, STRUCTURED, TRANSPORT, SITEMAP}


@dataclass(frozen=True)
class SignalsExpected:
    """What the audit of the signals site finds: (code, path) per family."""

    findings: Mapping[str, frozenset[tuple[str, str]]] = field(default_factory=dict)


def _expected() -> SignalsExpected:
    found: dict[str, set[tuple[str, str]]] = {family: set() for family in FAMILIES}
    for page in SIGNAL_PAGES:
        for code, family in page.expected:
            found[family].add((code, page.path))
    for path, expected in REDIRECT_EXPECTED.items():
        for code, family in expected:
            found[family].add((code, path))
    found[SITEMAP] |= set(SITEMAP_EXPECTED)
    return SignalsExpected({family: frozenset(pairs) for family, pairs in found.items()})


SIGNALS_EXPECTED = _expected()


def _home(request: Request, ctx: RouteContext) -> Response:
    del request
    paths = [p.path for p in SIGNAL_PAGES] + list(REDIRECTS) + list(DISALLOWED)
    paths = [path for path in paths if path not in NOT_LINKED]
    links = "".join(f'<li><a href="{path}">{path}</a></li>' for path in paths)
    return SignalPage("/", body=f"<ul>{links}</ul>", title="Signals fixture home page for the audit").render(
        ctx
    )


def _sitemap(request: Request, ctx: RouteContext) -> Response:
    del request
    urls = "".join(
        f"<url><loc>{ctx.url(path)}</loc>"
        + "".join(
            f'<xhtml:link rel="alternate" hreflang="{lang}" href="{ctx.url(alt)}"/>'
            for lang, alt in SITEMAP_ALTERNATES.get(path, ())
        )
        + "</url>"
        for path in SITEMAP_PATHS
    )
    return xml(
        '<?xml version="1.0"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"'
        f' xmlns:xhtml="http://www.w3.org/1999/xhtml">{urls}</urlset>'
    )


def _route(page: SignalPage) -> RouteLike:
    def route(request: Request, ctx: RouteContext) -> Response:
        del request
        return page.render(ctx)

    return route


def _dated_sitemap(entries: tuple[tuple[str, str], ...]) -> RouteLike:
    def route(request: Request, ctx: RouteContext) -> Response:
        del request
        fill = {"other": ctx.sites.get(SIGNALS_OTHER, ctx.base_url)}
        urls = "".join(
            f"<url><loc>{path.format(**fill) if path.startswith('{') else ctx.url(path)}</loc>"
            f"<lastmod>{lastmod}</lastmod></url>"
            for path, lastmod in entries
        )
        return xml(f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>')

    return route


def _robots_route(disallow: str) -> RouteLike:
    def route(request: Request, ctx: RouteContext) -> Response:
        del request
        sitemaps = "".join(
            f"Sitemap: {ctx.url(p)}\n" for p in ("/sitemap.xml", "/sitemap-dates.xml", "/sitemap-mixed.xml")
        )
        return text(f"User-agent: *\n{disallow}Allow: /\n{sitemaps}")

    return route


def signals_sites() -> list[SiteSpec]:
    """The signals site and the second host its cross-domain canonical points to."""
    disallow = "".join(f"Disallow: {path}\n" for path in DISALLOWED)
    routes: dict[str, RouteLike] = {
        "/robots.txt": _robots_route(disallow),
        "/sitemap.xml": _sitemap,
        "/sitemap-dates.xml": _dated_sitemap(tuple((path, "2024-05-01") for path in UNIFORM_PATHS)),
        "/sitemap-mixed.xml": _dated_sitemap(MIXED_ENTRIES),
        "/": _home,
        **{page.path: _route(page) for page in SIGNAL_PAGES},
        **{path: redirect(target, status) for path, (target, status) in REDIRECTS.items()},
    }
    other = SiteSpec(SIGNALS_OTHER, {"/robots.txt": text("User-agent: *\nAllow: /\n")}, ip=SIGNALS_OTHER_IP)
    return [SiteSpec(SIGNALS, routes), other]


# 4, over TLS: two https hosts on the default ports, one crawl starting on both. secure.test sends HSTS and
# redirects every plain http request to https (308); lax.test sends no HSTS and answers plain http with the
# same pages. The crawler reaches them on ports 443 and 80, which the test maps to each site's one port.
SECURE, LAX = "signals-secure", "signals-lax"
SECURE_NAME, LAX_NAME = "secure.test", "lax.test"
HTTPS_NAMES: Mapping[str, str] = {SECURE_NAME: "127.0.0.51", LAX_NAME: "127.0.0.52"}
HSTS = ("Strict-Transport-Security", "max-age=31536000; includeSubDomains")
_MIXED_ASSETS = (
    f'<img src="http://{SECURE_NAME}/pixel.png" alt="pixel">'
    f'<script src="http://{LAX_NAME}/app.js"></script>'
    '<link rel="stylesheet" href="/style.css">'  # relative: https like its page
)
HTTPS_PAGES: Mapping[str, tuple[SignalPage, ...]] = {
    SECURE: (
        SignalPage("/mixed", body=_MIXED_ASSETS),
        SignalPage("/old"),
    ),
    LAX: (
        SignalPage("/about"),
        SignalPage("/legacy"),
    ),
}
HTTPS_LINKS: Mapping[str, tuple[str, ...]] = {
    SECURE: ("/mixed", f"http://{SECURE_NAME}/old"),  # an http link that redirects to https: no finding
    LAX: ("/about", f"http://{LAX_NAME}/legacy", "{other}/elsewhere"),  # a plain third-party host
}
# The transport findings of the https crawl, (code, URL); of secure.test only the mixed content.
HTTPS_EXPECTED: frozenset[tuple[str, str]] = frozenset(
    {
        ("ALERT_MIXED_CONTENT", f"https://{SECURE_NAME}/mixed"),
        ("ALERT_HSTS_MISSING", f"https://{LAX_NAME}/"),
        # The seeding's probe of the start URL's http twin, and the page linked over http.
        ("ALERT_HTTP_PAGE_ON_HTTPS_SITE", f"http://{LAX_NAME}/"),
        ("ALERT_HTTPS_REDIRECT_MISSING", f"http://{LAX_NAME}/"),
        ("ALERT_HTTP_PAGE_ON_HTTPS_SITE", f"http://{LAX_NAME}/legacy"),
        ("ALERT_HTTPS_REDIRECT_MISSING", f"http://{LAX_NAME}/legacy"),
    }
)
HTTPS_REDIRECT_TYPES: Mapping[str, str | None] = {
    f"http://{SECURE_NAME}/": "permanent",
    f"http://{SECURE_NAME}/old": "permanent",
    f"http://{LAX_NAME}/": None,
    f"https://{SECURE_NAME}/": None,
}


def _https_route(site: str, page: SignalPage) -> RouteLike:
    """secure.test answers plain http with a 308 to https; lax.test serves the page either way."""

    def route(request: Request, ctx: RouteContext) -> Response:
        if site == SECURE and not ctx.tls:
            return redirect(f"https://{SECURE_NAME}{request.target}", 308)
        return page.render(ctx)

    return route


def https_signals_sites(tls: ssl.SSLContext) -> list[SiteSpec]:
    """secure.test and lax.test (TLS and plain http on one port each), and a plain third-party host."""
    sites: list[SiteSpec] = []
    for site, name in ((SECURE, SECURE_NAME), (LAX, LAX_NAME)):
        links = "".join(f'<li><a href="{href}">{href}</a></li>' for href in HTTPS_LINKS[site])
        home = SignalPage("/", body=f"<ul>{links}</ul>", title=f"Home page of {name} for the audit")
        robots = SignalPage("/robots.txt", body="User-agent: *\nAllow: /\n", content_type="text/plain")
        pages = (home, robots, *HTTPS_PAGES[site])
        if site == SECURE:
            pages = tuple(replace(page, headers=(*page.headers, HSTS)) for page in pages)
        routes = {page.path: _https_route(site, page) for page in pages}
        sites.append(SiteSpec(site, routes, ip=HTTPS_NAMES[name], tls=tls))
    other = {"/robots.txt": text("User-agent: *\nAllow: /\n")}
    sites.append(
        SiteSpec(SIGNALS_OTHER, other, fallback=_route(SignalPage("/elsewhere")), ip=SIGNALS_OTHER_IP)
    )
    return sites
