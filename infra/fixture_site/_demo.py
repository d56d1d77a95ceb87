"""The demo shop: a small shop and blog whose pages are declared once, in PAGES, and from which both
the served site and the expected crawl facts (DEMO_EXPECTED) are derived.

Link hrefs may hold `{origin}` ('http://IP:PORT') and `{hostport}` ('IP:PORT'), filled in per request,
because ports are only known once the server is bound.
"""

from __future__ import annotations

import html as _html
import re
import zlib
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from infra.fixture_site._http import Request, Response
from infra.fixture_site._routes import (
    GzipWhenAccepted,
    RouteContext,
    RouteLike,
    html,
    not_found,
    redirect,
    text,
    xml,
)
from infra.fixture_site._server import SiteSpec

DEMO = "demo"
PARTNER = "partner"
PARTNER_IP = "127.0.0.2"
# Used when the partner site is not served: a closed port on loopback, so a link check fails locally.
PARTNER_FALLBACK = "http://127.0.0.2:9"
DISALLOW = ("/private/",)
THIN_WORDS = 200
# The audit's default bounds (seolens_core.audit.AuditSettings); every demo page keeps within them.
TITLE_CHARS = (30, 60)
META_DESC_CHARS = (70, 160)
CALENDAR = "/calendar"
CALENDAR_START = "2024-01"
LASTMOD = "2024-05-01"


@dataclass(frozen=True, slots=True)
class Link:
    """An <a href> on a page. target: the internal path+query it means after normalization (default:
    href); site: set for a link to another fixture site, whose path is href."""

    href: str
    anchor: str = ""
    target: str | None = None
    site: str | None = None

    @property
    def resolved(self) -> str:
        return self.target if self.target is not None else self.href


@dataclass(frozen=True, slots=True)
class Page:
    """One HTML page of the demo. h1: () for a missing H1, two for multiple; words: prose length."""

    path: str
    title: str | None
    h1: tuple[str, ...]
    description: str | None
    links: tuple[Link, ...] = ()
    words: int = 320
    noindex: bool = False
    canonical: str | None = None
    in_sitemap: bool = True
    prose: tuple[str, ...] = ()

    @property
    def all_links(self) -> tuple[Link, ...]:
        """Every page but the home page also links home."""
        return self.links if self.path == "/" else (Link("/", "Home"), *self.links)


# The ten spellings of one product URL on /products/compare; each means PRODUCT.
PRODUCT = "/products/widget"
PRODUCT_SPELLINGS: tuple[str, ...] = (
    "/products/widget",
    "HTTP://{hostport}/products/widget",
    "//{hostport}/products/widget",
    "{origin}/products/widget#reviews",
    "/products/widget?utm_source=newsletter&utm_medium=email",
    "/products/widget?gclid=abc123&fbclid=xyz789",
    "/products/./widget",
    "/products/archive/../widget",
    "/products//widget",
    "widget?",
)
# Two spellings of one search URL whose query differs only in order.
SEARCH = "/search"
SEARCH_TARGET = "/search?page=2&q=widget"
SEARCH_SPELLINGS = ("/search?q=widget&page=2", "/search?page=2&q=widget")

REDIRECTS: Mapping[str, str] = {"/old-sale": "/promo", "/promo": "/shop/sale"}
WAF_PATH = "/members"

_CLOUDFLARE_PROSE = (
    "Last spring we moved our image hosting behind Cloudflare, and product photos now load from a cache "
    "close to each shopper.",
    "We chose Cloudflare for its simple pricing and because our small team did not want to run cache "
    "servers ourselves.",
    "The switch took one afternoon: we changed the name servers, waited for the certificates, and "
    "watched the cache hit rate climb.",
)


def _page(
    path: str,
    title: str | None,
    h1: str | None,
    description: str | None,
    *links: Link,
    words: int = 320,
    noindex: bool = False,
    canonical: str | None = None,
    in_sitemap: bool = True,
    prose: tuple[str, ...] = (),
) -> Page:
    return Page(
        path, title, (h1,) if h1 else (), description, links, words, noindex, canonical, in_sitemap, prose
    )


PAGES: tuple[Page, ...] = (
    _page(
        "/",
        "Acme Widgets — Handmade widgets and gadgets",
        "Handmade widgets and gadgets",
        "Acme Widgets makes durable widgets, gadgets and accessories in a small workshop.",
        Link("/shop", "Shop"),
        Link("/blog", "Blog"),
        Link("/about", "About us"),
        Link("/contact", "Contact"),
        Link("/faq", "FAQ"),
        Link("/events", "Events"),
        Link(WAF_PATH, "Members area"),
        Link("/", "Our partner store", site=PARTNER),
    ),
    _page(
        "/shop",
        "Shop all products — Acme Widgets workshop",
        "Shop",
        "Browse every widget, gadget and accessory we make, with prices and stock.",
        Link("/shop/widgets", "Widgets"),
        Link("/shop/gadgets", "Gadgets"),
        Link("/shop/accessories", "Accessories"),
        Link("/old-sale", "Summer sale"),
        Link("/private/orders", "Your orders"),
    ),
    _page(
        "/shop/widgets",
        "Widgets — Acme Widgets workshop",
        "Widgets",
        "Our range of widgets, from the classic steel widget to the blue edition.",
        Link(PRODUCT, "Classic widget"),
        Link("/products/widget-blue", "Blue widget"),
        Link("/products/compare", "Compare widgets"),
    ),
    _page(
        "/shop/gadgets",
        "Gadgets — Acme Widgets workshop",
        "Gadgets",
        "Gadgets for the workshop and the kitchen, tested by our own team."
        " Handmade in the Acme workshop, five-year warranty.",
        Link("/products/gadget", "Pocket gadget"),
        Link("/products/gizmo", "Gizmo"),
    ),
    _page(
        "/shop/accessories",
        "Accessories — Acme Widgets workshop",
        None,
        "Cables, cases and spare parts that fit every Acme product."
        " Handmade in the Acme workshop, five-year warranty.",
        Link("/products/cable", "Braided cable"),
    ),
    _page(
        "/shop/sale",
        "Summer sale — Acme Widgets workshop",
        "Sale",
        "Seasonal discounts on last year's widgets while stock lasts."
        " Handmade in the Acme workshop, five-year warranty.",
        Link(PRODUCT, "Classic widget on sale"),
    ),
    _page(
        "/products/widget",
        "Classic steel widget — Acme Widgets workshop",
        "Classic steel widget",
        "The classic steel widget: hand finished, five year warranty, ships in two days.",
    ),
    _page(
        "/products/widget-blue",
        "Blue steel widget — Acme Widgets workshop",
        "Blue steel widget",
        "The classic widget with a blue powder coat; same parts and warranty."
        " Handmade in the Acme workshop, five-year warranty.",
        canonical=PRODUCT,
        in_sitemap=False,
    ),
    _page(
        "/products/compare",
        "Compare widgets — Acme Widgets workshop",
        "Compare widgets",
        "Side by side: sizes, weights and finishes of every widget we sell."
        " Handmade in the Acme workshop, five-year warranty.",
        *(
            Link(href, f"Classic widget ({i + 1})", target=PRODUCT)
            for i, href in enumerate(PRODUCT_SPELLINGS)
        ),
        *(Link(href, "More widgets", target=SEARCH_TARGET) for href in SEARCH_SPELLINGS),
    ),
    _page(
        "/products/gadget",
        "Pocket gadget — Acme Widgets workshop",
        "Pocket gadget",
        "A pocket gadget with seven tools, a steel clip and a leather pouch."
        " Handmade in the Acme workshop, five-year warranty.",
        Link("/products/gadget/specs", "Technical specifications"),
    ),
    _page(
        "/products/gadget/specs",
        "Pocket gadget specifications — Acme Widgets workshop",
        "Pocket gadget specifications",
        "Dimensions, materials and tolerances of the pocket gadget."
        " Handmade in the Acme workshop, five-year warranty.",
    ),
    _page(
        "/products/gizmo",
        "Gizmo multi-tool — Acme Widgets workshop",
        "Gizmo",
        "The gizmo clamps, measures and levels in one small tool."
        " Handmade in the Acme workshop, five-year warranty.",
    ),
    _page(
        "/products/cable",
        "Braided cable — Acme Widgets workshop",
        "Braided cable",
        "A braided cable that survives ten thousand bends, in three lengths."
        " Handmade in the Acme workshop, five-year warranty.",
    ),
    _page(
        "/blog",
        "Workshop blog — Acme Widgets workshop",
        "Workshop blog",
        "Stories from the workshop: how we design, test and ship our widgets."
        " Handmade in the Acme workshop, five-year warranty.",
        Link("/blog/post-1", "Why steel"),
        Link("/blog/post-2", "Spring notes"),
        Link("/blog/post-3", "Spring notes, part two"),
        Link("/blog/cdn-choices", "How we serve images"),
    ),
    Page(
        "/blog/post-1",
        "Why we build widgets from steel — Acme Widgets workshop",
        ("Why we build widgets from steel", "Steel versus aluminium"),
        "The reasons behind our choice of steel for every widget we make."
        " Handmade in the Acme workshop, five-year warranty.",
        (Link("/blog/old-post", "Our first post"),),
    ),
    _page(
        "/blog/post-2",
        "Notes from the workshop — Acme Widgets workshop",
        "Spring notes from the workshop",
        "What we built this spring, and what we learned from it."
        " Handmade in the Acme workshop, five-year warranty.",
    ),
    _page(
        "/blog/post-3",
        "Notes from the workshop — Acme Widgets workshop",
        "More spring notes from the workshop",
        "More of what we built this spring, with photos of the new bench."
        " Handmade in the Acme workshop, five-year warranty.",
    ),
    _page(
        "/blog/cdn-choices",
        "How we serve product images — Acme Widgets workshop",
        "How we serve product images",
        "Why our product photos now come from a content delivery network."
        " Handmade in the Acme workshop, five-year warranty.",
        prose=_CLOUDFLARE_PROSE,
    ),
    _page(
        "/about",
        "About us — Acme Widgets workshop",
        "About us",
        "A family workshop making widgets since 1987. Handmade in the Acme workshop, five-year warranty.",
        Link("/about/team", "Our team"),
        Link("/about/history", "Our history"),
    ),
    _page(
        "/about/team",
        None,
        "Our team",
        "Meet the nine people who design, build and ship Acme widgets."
        " Handmade in the Acme workshop, five-year warranty.",
        Link("/private/admin", "Staff login"),
    ),
    _page(
        "/about/history",
        "Our history — Acme Widgets workshop",
        "Our history",
        "From a garage in 1987 to a workshop with nine benches."
        " Handmade in the Acme workshop, five-year warranty.",
        Link("/about/history/founders", "The founders"),
    ),
    _page(
        "/about/history/founders",
        "The founders — Acme Widgets workshop",
        "The founders",
        "How two machinists started Acme Widgets with one lathe."
        " Handmade in the Acme workshop, five-year warranty.",
        Link("/about/history/founders/letters", "Their letters"),
    ),
    _page(
        "/about/history/founders/letters",
        "Letters from the founders — Acme Widgets workshop",
        "Letters from the founders",
        "Letters the founders wrote to early customers, scanned and transcribed.",
    ),
    _page(
        "/contact",
        "Contact us — Acme Widgets workshop",
        "Contact us",
        None,
        Link("/thank-you", "Message sent"),
    ),
    _page(
        "/thank-you",
        "Thank you — Acme Widgets workshop",
        "Thank you",
        "Your message reached us; we answer within two working days."
        " Handmade in the Acme workshop, five-year warranty.",
        noindex=True,
        in_sitemap=False,
    ),
    _page(
        "/faq",
        "Frequently asked questions — Acme Widgets workshop",
        "FAQ",
        "Short answers about shipping, returns and warranty."
        " Handmade in the Acme workshop, five-year warranty.",
        words=30,
    ),
    _page(
        "/events",
        "Workshop events — Acme Widgets workshop",
        "Workshop events",
        "Open days, repair cafés and classes at the Acme workshop."
        " Handmade in the Acme workshop, five-year warranty.",
        Link(f"{CALENDAR}?month={CALENDAR_START}", "Calendar"),
    ),
    _page(
        "/private/orders",
        "Your orders — Acme Widgets workshop",
        "Your orders",
        "Orders placed with your account. Handmade in the Acme workshop, five-year warranty.",
        in_sitemap=False,
    ),
    _page(
        "/private/admin",
        "Administration — Acme Widgets workshop",
        "Administration",
        "Shop administration. Handmade in the Acme workshop, five-year warranty.",
        in_sitemap=False,
    ),
    # Orphans: listed in the sitemap, linked from no page.
    _page(
        "/products/legacy-gadget",
        "Legacy gadget — Acme Widgets workshop",
        "Legacy gadget",
        "The first gadget we ever sold, kept for owners looking for parts."
        " Handmade in the Acme workshop, five-year warranty.",
    ),
    _page(
        "/blog/draft-notes",
        "Draft notes on packaging — Acme Widgets workshop",
        "Draft notes on packaging",
        "Early thoughts on plastic-free packaging for our widgets."
        " Handmade in the Acme workshop, five-year warranty.",
    ),
    _page(
        "/landing/spring",
        "Spring collection — Acme Widgets workshop",
        "Spring collection",
        "The spring collection: three new widgets in seasonal colours."
        " Handmade in the Acme workshop, five-year warranty.",
    ),
    _page(
        "/landing/summer",
        "Summer collection — Acme Widgets workshop",
        "Summer collection",
        "The summer collection: outdoor gadgets built for the garden."
        " Handmade in the Acme workshop, five-year warranty.",
    ),
    _page(
        "/shop/clearance",
        "Clearance — Acme Widgets workshop",
        "Clearance",
        "Last units of discontinued widgets at half price."
        " Handmade in the Acme workshop, five-year warranty.",
    ),
)

_SENTENCES = (
    "Every widget leaves the workshop only after two people have checked its finish and its fit.",
    "We buy our steel from a mill two hours away, so we know exactly where each batch comes from.",
    "Orders placed before noon ship the same day, packed in recycled cardboard without plastic.",
    "Our warranty covers five years of normal use, and we repair what we can instead of replacing it.",
    "Customers often tell us that their widget outlived the machine it was bought for.",
    "The design starts on paper, moves to a prototype on the lathe, and ends with a week of testing.",
    "We publish the measurements of each product so that you can check that it fits before buying.",
    "Spare parts stay in stock for at least ten years after a product leaves the catalogue.",
    "Our workshop runs on solar power for most of the year and on green electricity in winter.",
    "If something arrives damaged, send us a photo and we will post a replacement the next day.",
    "Each batch gets a number, stamped on the part, so that we can trace any problem to its source.",
    "We test every gadget in the kitchen and the garage before it goes into the catalogue.",
    "The powder coat is baked at high temperature and resists scratches from everyday tools.",
    "Small details matter to us: rounded edges, honest weights and screws that fit common drivers.",
    "We answer every email ourselves, usually within one working day, and never with a script.",
    "Returns are free for thirty days, and we pay the postage for exchanges within the country.",
    "Our team meets every Monday to read customer feedback and to decide what to improve next.",
    "Prices include tax and shipping, so the number on the page is the number on your card.",
    "We keep the catalogue short on purpose: fewer products, each of them made with more care.",
    "Visitors are welcome in the workshop on the first Saturday of each month, coffee included.",
)


def _prose(page: Page) -> list[str]:
    """Deterministic paragraphs of about `page.words` words, different for each page."""
    if page.prose:
        base = list(page.prose)
    else:
        start = zlib.crc32(page.path.encode()) % len(_SENTENCES)
        base = [_SENTENCES[(start + i) % len(_SENTENCES)] for i in range(len(_SENTENCES))]
    sentences: list[str] = []
    words = 0
    i = 0
    while words < page.words:
        sentence = base[i % len(base)]
        if words + len(sentence.split()) > page.words and sentences and page.words < THIN_WORDS:
            break
        sentences.append(sentence)
        words += len(sentence.split())
        i += 1
    return [" ".join(sentences[j : j + 5]) for j in range(0, len(sentences), 5)]


def _fill(href: str, ctx: RouteContext) -> str:
    hostport = ctx.base_url.split("://", 1)[1]
    return href.replace("{origin}", ctx.base_url).replace("{hostport}", hostport)


def _href(link: Link, ctx: RouteContext) -> str:
    if link.site is not None:
        return ctx.sites.get(link.site, PARTNER_FALLBACK) + link.href
    return _fill(link.href, ctx)


def render_page(page: Page, ctx: RouteContext) -> str:
    """The page's HTML; absolute URLs use the serving site's origin."""
    esc = _html.escape
    head = ['<meta charset="utf-8">', '<meta name="viewport" content="width=device-width, initial-scale=1">']
    if page.title is not None:
        head.append(f"<title>{esc(page.title)}</title>")
    if page.description is not None:
        head.append(f'<meta name="description" content="{esc(page.description)}">')
    if page.noindex:
        head.append('<meta name="robots" content="noindex, follow">')
    if page.canonical is not None:
        head.append(f'<link rel="canonical" href="{esc(ctx.base_url + page.canonical)}">')
    body = [f"<h1>{esc(h)}</h1>" for h in page.h1]
    body.extend(f"<p>{esc(p)}</p>" for p in _prose(page))
    if page.all_links:
        items = "".join(
            f'<li><a href="{esc(_href(link, ctx))}">{esc(link.anchor or link.resolved)}</a></li>'
            for link in page.all_links
        )
        body.append(f"<ul>{items}</ul>")
    return (
        '<!doctype html>\n<html lang="en">\n<head>\n'
        + "\n".join(head)
        + "\n</head>\n<body>\n<main>\n"
        + "\n".join(body)
        + "\n</main>\n<footer><p>Acme Widgets, 12 Mill Lane</p></footer>\n</body>\n</html>\n"
    )


class PageRoute:
    """Serve one declared Page."""

    def __init__(self, page: Page) -> None:
        self.page = page

    def __call__(self, request: Request, ctx: RouteContext) -> Response:
        return html(render_page(self.page, ctx))


def robots_txt(origin: str) -> str:
    rules = "".join(f"Disallow: {prefix}\n" for prefix in DISALLOW)
    return f"# Acme Widgets\nUser-agent: *\n{rules}Allow: /\n\nSitemap: {origin}/sitemap.xml\n"


def sitemap_paths() -> tuple[str, ...]:
    return tuple(p.path for p in PAGES if p.in_sitemap)


def sitemap_xml(origin: str) -> str:
    urls = "".join(
        f"  <url><loc>{_html.escape(origin + path)}</loc><lastmod>{LASTMOD}</lastmod></url>\n"
        for path in sitemap_paths()
    )
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n'
        '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">\n' + urls + "</urlset>\n"
    )


_MONTH = re.compile(r"^(\d{4})-(\d{2})$")


def _month(query: str) -> tuple[int, int]:
    for part in query.split("&"):
        key, _, value = part.partition("=")
        match = _MONTH.match(value)
        if key == "month" and match and 1 <= int(match.group(2)) <= 12:
            return int(match.group(1)), int(match.group(2))
    year, month = CALENDAR_START.split("-")
    return int(year), int(month)


def calendar(request: Request, ctx: RouteContext) -> Response:
    """A spider trap: every month links the next one, forever."""
    year, month = _month(request.query)
    nyear, nmonth = (year + 1, 1) if month == 12 else (year, month + 1)
    label = f"{year}-{month:02d}"
    page = Page(
        f"{CALENDAR}?month={label}",
        f"Events in {label} — Acme Widgets workshop",
        (f"Events in {label}",),
        f"Open days, repair cafés and classes at the Acme Widgets workshop in {label}, with times.",
        (Link("/events", "All events"), Link(f"{CALENDAR}?month={nyear}-{nmonth:02d}", "Next month")),
    )
    return html(render_page(page, ctx))


def search_page(q: str, number: str) -> Page:
    return _page(
        f"{SEARCH}?page={number}&q={q}",
        f"Search results for {q} (page {number}) — Acme Widgets workshop",
        f"Search results for {q}",
        f"Products in the Acme Widgets catalogue matching {q}, results page {number}, best matches first.",
        Link(PRODUCT, "Classic steel widget"),
        Link("/products/widget-blue", "Blue steel widget"),
        in_sitemap=False,
    )


def search(request: Request, ctx: RouteContext) -> Response:
    """Search results for any query; the demo links one query in two parameter orders."""
    params = dict(part.partition("=")[::2] for part in request.query.split("&") if part)
    return html(render_page(search_page(params.get("q", ""), params.get("page", "1")), ctx))


_RAY = "8a1b2c3d4e5f6a7b"
WAF_HEADERS = (("Server", "cloudflare"), ("CF-RAY", f"{_RAY}-AMS"), ("cf-mitigated", "challenge"))


def waf_challenge(request: Request, ctx: RouteContext) -> Response:
    """A Cloudflare managed-challenge interstitial, as a bot without JavaScript sees it."""
    host = ctx.base_url.split("://", 1)[1]
    body = f"""<!DOCTYPE html><html lang="en-US"><head><title>Just a moment...</title>
<meta http-equiv="Content-Type" content="text/html; charset=UTF-8">
<meta name="robots" content="noindex,nofollow">
<meta name="viewport" content="width=device-width,initial-scale=1"></head>
<body class="no-js"><div class="main-wrapper" role="main"><div class="main-content">
<h1 class="zone-name-title h1">{host}</h1>
<h2 class="h2" id="challenge-running">Checking your browser before accessing {host}.</h2>
<div id="cf-browser-verification" class="cf-browser-verification"></div>
<noscript><div class="h2">Enable JavaScript and cookies to continue</div></noscript>
<form id="challenge-form" action="{WAF_PATH}?__cf_chl_f_tk=x1y2z3" method="POST"
 enctype="application/x-www-form-urlencoded"><input type="hidden" name="md" value="abc"></form>
</div></div>
<script>(function(){{window._cf_chl_opt={{cvId: '3',cZone: '{host}',cType: 'managed',cRay: '{_RAY}'}};
var cpo=document.createElement('script');
cpo.src='/cdn-cgi/challenge-platform/h/g/orchestrate/chl_page/v1?ray={_RAY}';
document.getElementsByTagName('head')[0].appendChild(cpo);}}());</script>
<div class="footer" role="contentinfo"><div class="ray-id">Cloudflare Ray ID: <code>{_RAY}</code></div>
<div id="footer-text">Performance &amp; security by Cloudflare</div></div></body></html>
"""
    return html(body, status=403, headers=WAF_HEADERS)


def demo_site(ip: str = "127.0.0.1", port: int = 0, name: str = DEMO) -> SiteSpec:
    """The demo shop and blog (see DEMO_EXPECTED for what a correct crawl finds)."""
    routes: dict[str, RouteLike] = {p.path: GzipWhenAccepted(PageRoute(p)) for p in PAGES}
    routes.update({src: redirect(dst, 301) for src, dst in REDIRECTS.items()})
    routes["/robots.txt"] = lambda request, ctx: text(robots_txt(ctx.base_url))
    routes["/sitemap.xml"] = lambda request, ctx: xml(sitemap_xml(ctx.base_url))
    routes[CALENDAR] = GzipWhenAccepted(calendar)
    routes[SEARCH] = GzipWhenAccepted(search)
    routes[WAF_PATH] = waf_challenge
    return SiteSpec(name, routes, fallback=not_found(), ip=ip, port=port)


PARTNER_PAGES = (
    _page(
        "/",
        "Partner Tools — Workshop supplies",
        "Workshop supplies",
        "Partner Tools sells lathes, files and benches to small workshops."
        " Delivered to workshops across the country.",
        Link("/catalogue", "Catalogue"),
    ),
    _page(
        "/catalogue",
        "Tool catalogue — Partner Tools workshop supplies",
        "Catalogue",
        "Every tool Partner Tools stocks, with prices. Delivered to workshops across the country.",
    ),
)


def partner_site(ip: str = PARTNER_IP, port: int = 0, name: str = PARTNER) -> SiteSpec:
    """Another host the demo links to (an external link that stays on this machine)."""
    routes: dict[str, RouteLike] = {p.path: PageRoute(p) for p in PARTNER_PAGES}
    routes["/robots.txt"] = text("User-agent: *\nAllow: /\n")
    return SiteSpec(name, routes, ip=ip, port=port)


def demo_sites(port: int = 0) -> list[SiteSpec]:
    """The demo shop (on 127.0.0.1) and its partner site (on 127.0.0.2)."""
    return [demo_site(port=port), partner_site()]


DESIGNED_DEFECTS = (
    "missing_title",
    "duplicate_title",
    "missing_h1",
    "multiple_h1",
    "thin_content",
    "noindex",
    "canonical_elsewhere",
    "missing_meta_description",
)


@dataclass(frozen=True, slots=True)
class DemoExpected:
    """What a correct, polite crawl of the demo site from '/' finds; paths are normalized path+query.

    linked: internal URLs reached by following links (redirect hops included, robots-disallowed ones and
    the calendar trap excluded). crawlable: linked plus sitemap orphans, i.e. every URL a crawl fetches
    besides robots.txt, sitemap.xml and calendar pages. depth: link depth from '/', a redirect hop
    counting as one more level. defects: finding code -> pages, over the HTML pages answered 200
    (DESIGNED_DEFECTS are non-empty; the length and duplicate-description codes are empty on purpose).
    """

    pages: frozenset[str]
    linked: frozenset[str]
    crawlable: frozenset[str]
    ok_pages: frozenset[str]
    sitemap: frozenset[str]
    orphans: frozenset[str]
    disallowed: frozenset[str]
    disallow_prefixes: tuple[str, ...]
    broken: frozenset[str]
    redirects: Mapping[str, str]
    waf: frozenset[str]
    cloudflare_prose: frozenset[str]
    status: Mapping[str, int]
    depth: Mapping[str, int]
    titles: Mapping[str, str | None]
    defects: Mapping[str, frozenset[str]]
    edges: frozenset[tuple[str, str]]
    external: frozenset[tuple[str, str, str]]
    product: str
    product_page: str
    product_spellings: tuple[str, ...]
    search_target: str
    search_spellings: tuple[str, ...]
    trap_prefix: str
    trap_entry: str
    thin_words: int
    redirect_chains: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


def _blocked(path: str) -> bool:
    return any(path.startswith(prefix) for prefix in DISALLOW)


def _defects(pages: list[Page]) -> dict[str, frozenset[str]]:
    titles: dict[str, int] = {}
    descriptions: dict[str, int] = {}
    for page in pages:
        if page.title is not None:
            titles[page.title] = titles.get(page.title, 0) + 1
        if page.description is not None:
            descriptions[page.description] = descriptions.get(page.description, 0) + 1
    rules: dict[str, Callable[[Page], bool]] = {
        "missing_title": lambda p: p.title is None,
        "duplicate_title": lambda p: p.title is not None and titles[p.title] > 1,
        "missing_h1": lambda p: not p.h1,
        "multiple_h1": lambda p: len(p.h1) > 1,
        "thin_content": lambda p: p.words < THIN_WORDS,
        "noindex": lambda p: p.noindex,
        "canonical_elsewhere": lambda p: p.canonical is not None and p.canonical != p.path,
        "missing_meta_description": lambda p: p.description is None,
        # designed to stay empty: the demo's other pages are clean
        "title_too_short": lambda p: p.title is not None and len(p.title) < TITLE_CHARS[0],
        "title_too_long": lambda p: p.title is not None and len(p.title) > TITLE_CHARS[1],
        "meta_description_too_short": lambda p: (
            p.description is not None and len(p.description) < META_DESC_CHARS[0]
        ),
        "meta_description_too_long": lambda p: (
            p.description is not None and len(p.description) > META_DESC_CHARS[1]
        ),
        "duplicate_meta_description": lambda p: p.description is not None and descriptions[p.description] > 1,
    }
    return {code: frozenset(p.path for p in pages if rule(p)) for code, rule in rules.items()}


@dataclass(slots=True)
class _Walk:
    depth: dict[str, int] = field(default_factory=dict)
    status: dict[str, int] = field(default_factory=dict)
    edges: set[tuple[str, str]] = field(default_factory=set)
    external: set[tuple[str, str, str]] = field(default_factory=set)
    disallowed: set[str] = field(default_factory=set)


def _walk(seeds: list[str], by_path: Mapping[str, Page]) -> _Walk:
    """Breadth-first crawl of the declared site: follows links and redirects, skips robots-disallowed
    URLs and the calendar trap."""
    walk = _Walk(depth={seed: 0 for seed in seeds})
    queue = deque(seeds)
    while queue:
        path = queue.popleft()
        targets: list[str] = []
        if path in REDIRECTS:
            walk.status[path] = 301
            targets.append(REDIRECTS[path])
        elif path == WAF_PATH:
            walk.status[path] = 403
        elif path in by_path:
            walk.status[path] = 200
            for link in by_path[path].all_links:
                if link.site is not None:
                    walk.external.add((path, link.site, link.href))
                else:
                    walk.edges.add((path, link.resolved))
                    targets.append(link.resolved)
        else:
            walk.status[path] = 404
        for target in targets:
            if target.startswith(CALENDAR):
                continue
            if _blocked(target):
                walk.disallowed.add(target)
                continue
            if target not in walk.depth:
                walk.depth[target] = walk.depth[path] + 1
                queue.append(target)
    return walk


def expected() -> DemoExpected:
    """Derive the demo's crawl facts from PAGES, REDIRECTS and DISALLOW by walking the declared site."""
    by_path = {p.path: p for p in PAGES}
    by_path[SEARCH_TARGET] = search_page("widget", "2")
    from_home = _walk(["/"], by_path)
    depth = from_home.depth
    linked = frozenset(depth)
    sitemap = frozenset(sitemap_paths())
    orphans = sitemap - linked
    crawl = _walk(["/", *sorted(orphans)], by_path)
    status = crawl.status
    crawlable = frozenset(crawl.depth)
    ok_pages = frozenset(p for p in crawlable if status[p] == 200)
    html_pages = [by_path[p] for p in sorted(ok_pages)]
    chains: dict[str, tuple[str, ...]] = {}
    for src in REDIRECTS:
        hops: list[str] = []
        hop = src
        while hop in REDIRECTS:
            hop = REDIRECTS[hop]
            hops.append(hop)
        chains[src] = tuple(hops)
    return DemoExpected(
        pages=frozenset(p.path for p in PAGES),
        linked=linked,
        crawlable=crawlable,
        ok_pages=ok_pages,
        sitemap=sitemap,
        orphans=orphans,
        disallowed=frozenset(crawl.disallowed),
        disallow_prefixes=DISALLOW,
        broken=frozenset(p for p, s in status.items() if s == 404),
        redirects=dict(REDIRECTS),
        waf=frozenset({WAF_PATH}) & linked,
        cloudflare_prose=frozenset(p.path for p in PAGES if p.prose == _CLOUDFLARE_PROSE),
        status=status,
        depth=dict(depth),
        titles={p.path: p.title for p in html_pages},
        defects=_defects(html_pages),
        edges=frozenset(crawl.edges),
        external=frozenset(crawl.external),
        product=PRODUCT,
        product_page="/products/compare",
        product_spellings=PRODUCT_SPELLINGS,
        search_target=SEARCH_TARGET,
        search_spellings=SEARCH_SPELLINGS,
        trap_prefix=CALENDAR,
        trap_entry=f"{CALENDAR}?month={CALENDAR_START}",
        thin_words=THIN_WORDS,
        redirect_chains=chains,
    )


DEMO_EXPECTED = expected()
