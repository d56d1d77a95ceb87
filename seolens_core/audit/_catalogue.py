"""The one place that defines every finding: stable code, severity, category, title and advice.

Codes are part of the public contract (reports, CSV, user filters): never rename one, only add.
Other modules (e.g. URL trap guards, `ALERT_TRAP_*`) register their own codes with `CATALOGUE.register`.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass


class Severity(enum.StrEnum):
    CRITICAL = "critical"
    WARNING = "warning"
    NOTICE = "notice"
    INFO = "info"


class Category(enum.StrEnum):
    CONTENT = "content"
    INDEXABILITY = "indexability"
    LINKS = "links"
    REDIRECTS = "redirects"
    RESPONSE = "response"
    PERFORMANCE = "performance"
    INTERNATIONAL = "international"
    SITEMAP = "sitemap"
    ACCESS = "access"
    CRAWL = "crawl"
    STRUCTURED_DATA = "structured_data"
    SECURITY = "security"


class FindingCode(enum.StrEnum):
    """Built-in finding codes; the value is the stable string written to reports."""

    TITLE_MISSING = "ALERT_TITLE_MISSING"
    TITLE_EMPTY = "ALERT_TITLE_EMPTY"
    TITLE_DUPLICATE = "ALERT_TITLE_DUPLICATE"
    TITLE_TOO_LONG = "ALERT_TITLE_TOO_LONG"
    TITLE_TOO_SHORT = "ALERT_TITLE_TOO_SHORT"
    META_DESC_MISSING = "ALERT_META_DESC_MISSING"
    META_DESC_DUPLICATE = "ALERT_META_DESC_DUPLICATE"
    META_DESC_TOO_LONG = "ALERT_META_DESC_TOO_LONG"
    META_DESC_TOO_SHORT = "ALERT_META_DESC_TOO_SHORT"
    H1_MISSING = "ALERT_H1_MISSING"
    H1_MULTIPLE = "ALERT_H1_MULTIPLE"
    THIN_CONTENT = "ALERT_THIN_CONTENT"
    DUPLICATE_CONTENT = "ALERT_DUPLICATE_CONTENT"
    IMAGES_WITHOUT_ALT = "ALERT_IMAGES_WITHOUT_ALT"
    NOINDEX = "ALERT_NOINDEX"
    NOFOLLOW_PAGE = "ALERT_NOFOLLOW_PAGE"
    CANONICAL_ELSEWHERE = "ALERT_CANONICAL_ELSEWHERE"
    CANONICAL_NON_200 = "ALERT_CANONICAL_NON_200"
    CANONICAL_CHAIN = "ALERT_CANONICAL_CHAIN"
    BROKEN_INTERNAL_LINK = "ALERT_BROKEN_INTERNAL_LINK"
    BROKEN_EXTERNAL_LINK = "ALERT_BROKEN_EXTERNAL_LINK"
    INTERNAL_LINK_TO_REDIRECT = "ALERT_INTERNAL_LINK_TO_REDIRECT"
    LINKS_TRUNCATED = "ALERT_LINKS_TRUNCATED"
    REDIRECT_CHAIN = "ALERT_REDIRECT_CHAIN"
    REDIRECT_LOOP = "ALERT_REDIRECT_LOOP"
    SITEMAP_NON_INDEXABLE = "ALERT_SITEMAP_NON_INDEXABLE"
    GRAPH_ORPHAN_PAGE = "ALERT_GRAPH_ORPHAN_PAGE"
    SLOW_TTFB = "ALERT_SLOW_TTFB"
    LARGE_PAGE = "ALERT_LARGE_PAGE"
    HREFLANG_NO_RETURN = "ALERT_HREFLANG_NO_RETURN"
    WAF_BOT_CHALLENGE = "ALERT_WAF_BOT_CHALLENGE"
    HTTP_4XX = "ALERT_HTTP_4XX"
    HTTP_5XX = "ALERT_HTTP_5XX"
    FETCH_ERROR = "ALERT_FETCH_ERROR"
    ROBOTS_DISALLOWED = "ALERT_ROBOTS_DISALLOWED"
    # Signals search engines read (issue 47, items 1-4 and 7), one family after the other.
    CANONICAL_MULTIPLE = "ALERT_CANONICAL_MULTIPLE"
    CANONICAL_RELATIVE = "ALERT_CANONICAL_RELATIVE"
    CANONICAL_CROSS_DOMAIN = "ALERT_CANONICAL_CROSS_DOMAIN"
    CANONICAL_TO_NOINDEX = "ALERT_CANONICAL_TO_NOINDEX"
    NOINDEX_AND_CANONICAL = "ALERT_NOINDEX_AND_CANONICAL"
    UNAVAILABLE_AFTER = "ALERT_UNAVAILABLE_AFTER"
    HREFLANG_INVALID_CODE = "ALERT_HREFLANG_INVALID_CODE"
    HREFLANG_NO_SELF = "ALERT_HREFLANG_NO_SELF"
    HREFLANG_NO_X_DEFAULT = "ALERT_HREFLANG_NO_X_DEFAULT"
    HREFLANG_TO_NON_200 = "ALERT_HREFLANG_TO_NON_200"
    HREFLANG_TO_NON_CANONICAL = "ALERT_HREFLANG_TO_NON_CANONICAL"
    JSONLD_INVALID = "ALERT_JSONLD_INVALID"
    JSONLD_NO_CONTEXT = "ALERT_JSONLD_NO_CONTEXT"
    JSONLD_NO_TYPE = "ALERT_JSONLD_NO_TYPE"
    REDIRECT_TEMPORARY = "ALERT_REDIRECT_TEMPORARY"
    META_REFRESH = "ALERT_META_REFRESH"
    META_REFRESH_DELAYED = "ALERT_META_REFRESH_DELAYED"
    HTTP_PAGE_ON_HTTPS_SITE = "ALERT_HTTP_PAGE_ON_HTTPS_SITE"
    HTTPS_REDIRECT_MISSING = "ALERT_HTTPS_REDIRECT_MISSING"
    MIXED_CONTENT = "ALERT_MIXED_CONTENT"
    HSTS_MISSING = "ALERT_HSTS_MISSING"
    SITEMAP_LASTMOD_FUTURE = "ALERT_SITEMAP_LASTMOD_FUTURE"
    SITEMAP_LASTMOD_UNIFORM = "ALERT_SITEMAP_LASTMOD_UNIFORM"
    SITEMAP_LASTMOD_INVALID = "ALERT_SITEMAP_LASTMOD_INVALID"
    SITEMAP_OTHER_HOSTS = "ALERT_SITEMAP_OTHER_HOSTS"


_CODE_SHAPE = re.compile(r"ALERT_[A-Z0-9]+(?:_[A-Z0-9]+)*")


@dataclass(frozen=True, slots=True)
class FindingDef:
    """Definition of one finding. `waf_suppressed`: meaningless when the body is a WAF challenge."""

    code: str
    severity: Severity
    category: Category
    title: str
    advice: str
    waf_suppressed: bool = False


class UnknownFindingError(KeyError):
    """A finding code that nobody registered."""


class FindingConflictError(ValueError):
    """A code registered twice with different definitions."""


class Catalogue:
    """Registry of finding definitions keyed by code; re-registering an identical definition is a no-op."""

    def __init__(self, definitions: Iterable[FindingDef] = ()) -> None:
        self._defs: dict[str, FindingDef] = {}
        for definition in definitions:
            self.register(definition)

    def register(self, definition: FindingDef) -> FindingDef:
        if not _CODE_SHAPE.fullmatch(definition.code):
            raise ValueError(f"finding code must look like ALERT_UPPER_SNAKE: {definition.code!r}")
        existing = self._defs.get(definition.code)
        if existing is not None and existing != definition:
            raise FindingConflictError(f"{definition.code} is already defined differently")
        self._defs[definition.code] = definition
        return definition

    def get(self, code: str) -> FindingDef:
        try:
            return self._defs[code]
        except KeyError:
            raise UnknownFindingError(code) from None

    def __contains__(self, code: object) -> bool:
        return code in self._defs

    def __iter__(self) -> Iterator[FindingDef]:
        return iter(self._defs.values())

    def __len__(self) -> int:
        return len(self._defs)


C, S = Category, Severity
F = FindingCode
_BUILTIN = (
    # code, severity, category, title, advice, waf_suppressed
    (F.TITLE_MISSING, S.WARNING, C.CONTENT, "Missing title",
     "Add a unique, descriptive <title> to the page's <head>.", True),
    (F.TITLE_EMPTY, S.WARNING, C.CONTENT, "Empty title",
     "The <title> tag has no text; write a descriptive title.", True),
    (F.TITLE_DUPLICATE, S.WARNING, C.CONTENT, "Duplicate title",
     "Several indexable pages share this title; make each title unique.", True),
    (F.TITLE_TOO_LONG, S.NOTICE, C.CONTENT, "Title too long",
     "Search engines truncate long titles; keep the key words early and shorten it.", True),
    (F.TITLE_TOO_SHORT, S.NOTICE, C.CONTENT, "Title too short",
     "A very short title wastes the most visible search snippet; describe the page.", True),
    (F.META_DESC_MISSING, S.NOTICE, C.CONTENT, "Missing meta description",
     "Add a meta description; otherwise search engines pick a snippet themselves.", True),
    (F.META_DESC_DUPLICATE, S.NOTICE, C.CONTENT, "Duplicate meta description",
     "Several indexable pages share this meta description; write one per page.", True),
    (F.META_DESC_TOO_LONG, S.INFO, C.CONTENT, "Meta description too long",
     "Long descriptions are truncated in results; shorten it.", True),
    (F.META_DESC_TOO_SHORT, S.INFO, C.CONTENT, "Meta description too short",
     "A short description gives searchers little reason to click; expand it.", True),
    (F.H1_MISSING, S.WARNING, C.CONTENT, "Missing H1",
     "Give the page one <h1> that states its main topic.", True),
    (F.H1_MULTIPLE, S.NOTICE, C.CONTENT, "Multiple H1",
     "Use one <h1> for the main topic and <h2>-<h6> for sections.", True),
    (F.THIN_CONTENT, S.WARNING, C.CONTENT, "Thin content",
     "The page has little visible text; expand it, merge it, or mark it noindex.", True),
    (F.DUPLICATE_CONTENT, S.WARNING, C.CONTENT, "Exact duplicate content",
     "Pages have identical visible text; canonicalize, redirect or differentiate them.", True),
    (F.IMAGES_WITHOUT_ALT, S.NOTICE, C.CONTENT, "Images without alt text",
     "Add alt text to informative images (alt=\"\" for decorative ones).", True),
    (F.NOINDEX, S.NOTICE, C.INDEXABILITY, "Noindex",
     "The page asks not to be indexed (meta robots or X-Robots-Tag); check this is intended.", True),
    (F.NOFOLLOW_PAGE, S.NOTICE, C.INDEXABILITY, "Page-level nofollow",
     "Search engines will not follow this page's links; check this is intended.", True),
    (F.CANONICAL_ELSEWHERE, S.NOTICE, C.INDEXABILITY, "Canonicalised to another URL",
     "The canonical points to another URL, so this one is not meant to be indexed.", True),
    (F.CANONICAL_NON_200, S.WARNING, C.INDEXABILITY, "Canonical target not 200",
     "The canonical URL redirects, errors or was not crawlable; point it to a live 200 page.", True),
    (F.CANONICAL_CHAIN, S.WARNING, C.INDEXABILITY, "Canonical chain",
     "The canonical target canonicalises elsewhere again; point directly at the final URL.", True),
    (F.BROKEN_INTERNAL_LINK, S.CRITICAL, C.LINKS, "Broken internal link",
     "This page links to an internal URL answering 4xx/5xx; fix or remove the link.", False),
    (F.BROKEN_EXTERNAL_LINK, S.WARNING, C.LINKS, "Broken external link",
     "This page links to an external URL that errors; update or remove the link.", False),
    (F.INTERNAL_LINK_TO_REDIRECT, S.NOTICE, C.LINKS, "Internal link to redirect",
     "Link straight to the redirect's final URL to save a hop.", False),
    (F.LINKS_TRUNCATED, S.INFO, C.CRAWL, "Too many links",
     "The page has more links than the crawler records; only the first ones were followed.", True),
    (F.REDIRECT_CHAIN, S.WARNING, C.REDIRECTS, "Redirect chain",
     "The URL redirects more than once; redirect straight to the final URL.", False),
    (F.REDIRECT_LOOP, S.CRITICAL, C.REDIRECTS, "Redirect loop",
     "Redirects lead back to a URL already visited; the page can never load.", False),
    (F.SITEMAP_NON_INDEXABLE, S.WARNING, C.SITEMAP, "Non-indexable URL in sitemap",
     "Sitemaps should list only indexable 200 pages; remove or fix this URL.", False),
    (F.GRAPH_ORPHAN_PAGE, S.WARNING, C.LINKS, "Orphan page",
     "The URL is in a sitemap but no crawled page links to it; add internal links.", False),
    (F.SLOW_TTFB, S.WARNING, C.PERFORMANCE, "Slow time to first byte",
     "The server was slow to start answering; check caching and backend load.", True),
    (F.LARGE_PAGE, S.NOTICE, C.PERFORMANCE, "Large page",
     "The HTML is very large; trim inline data and markup.", True),
    (F.HREFLANG_NO_RETURN, S.WARNING, C.INTERNATIONAL, "Hreflang without return link",
     "The alternate page does not link back with hreflang; annotations must be reciprocal.", True),
    (F.WAF_BOT_CHALLENGE, S.CRITICAL, C.ACCESS, "Blocked by WAF challenge",
     "Blocked by a WAF challenge. Whitelist the crawler IP or supply a session cookie.", False),
    (F.HTTP_4XX, S.WARNING, C.RESPONSE, "Client error (4xx)",
     "The URL answers with a 4xx status; fix it or remove links to it.", True),
    (F.HTTP_5XX, S.CRITICAL, C.RESPONSE, "Server error (5xx)",
     "The URL answers with a 5xx status; check the server.", True),
    (F.FETCH_ERROR, S.WARNING, C.RESPONSE, "Fetch error",
     "No HTTP answer (DNS, connection, TLS or timeout); check the host is reachable.", False),
    (F.ROBOTS_DISALLOWED, S.INFO, C.CRAWL, "Blocked by robots.txt",
     "robots.txt disallows this URL for our crawler, so it was not fetched.", False),
    # Indexability (issue 47)
    (F.CANONICAL_MULTIPLE, S.WARNING, C.INDEXABILITY, "Several different canonicals",
     "The page declares more than one canonical URL (HTML and/or Link header); search engines then ignore "
     "them all. Keep one.", True),
    (F.CANONICAL_RELATIVE, S.NOTICE, C.INDEXABILITY, "Relative canonical URL",
     "Write the canonical as an absolute URL (scheme and host): a relative one breaks on mirrors, "
     "staging hosts and scrapers.", True),
    (F.CANONICAL_CROSS_DOMAIN, S.NOTICE, C.INDEXABILITY, "Canonical to another host",
     "The canonical points to another host; check that the other site is meant to rank instead of this "
     "one.", True),
    (F.CANONICAL_TO_NOINDEX, S.WARNING, C.INDEXABILITY, "Canonical target is noindex",
     "The canonical URL asks not to be indexed, so neither page may be; point the canonical to an "
     "indexable page.", True),
    (F.NOINDEX_AND_CANONICAL, S.WARNING, C.INDEXABILITY, "Noindex with a canonical elsewhere",
     "Noindex and a canonical to another URL are opposite signals; use the canonical alone to consolidate, "
     "or noindex alone to drop the page.", True),
    (F.UNAVAILABLE_AFTER, S.NOTICE, C.INDEXABILITY, "Scheduled removal (unavailable_after)",
     "The page asks to leave search results after a date; check it is intended and the date is valid. "
     "Once it has passed the page counts as noindex.", True),
    # hreflang (issue 47)
    (F.HREFLANG_INVALID_CODE, S.WARNING, C.INTERNATIONAL, "Invalid hreflang code",
     "Search engines ignore this annotation: use x-default or an ISO 639-1 language, optionally with an "
     "ISO 3166-1 alpha-2 region (en-GB, not en-UK or en_GB).", True),
    (F.HREFLANG_NO_SELF, S.WARNING, C.INTERNATIONAL, "Hreflang without self-reference",
     "Each language version must list itself among its alternates as well as the others.", True),
    (F.HREFLANG_NO_X_DEFAULT, S.NOTICE, C.INTERNATIONAL, "Hreflang without x-default",
     "Add an x-default alternate for visitors whose language no version matches.", True),
    (F.HREFLANG_TO_NON_200, S.WARNING, C.INTERNATIONAL, "Hreflang to a non-200 URL",
     "The alternate redirects or errors; point hreflang to the final 200 URL of each version.", True),
    (F.HREFLANG_TO_NON_CANONICAL, S.WARNING, C.INTERNATIONAL, "Hreflang to a non-canonical URL",
     "The alternate canonicalises to another URL; hreflang must name canonical URLs only.", True),
    # Structured data (issue 47)
    (F.JSONLD_INVALID, S.WARNING, C.STRUCTURED_DATA, "Invalid JSON-LD",
     "A JSON-LD block does not parse, so search engines ignore all of it; validate it (a trailing comma or "
     "an unescaped quote is the usual cause).", True),
    (F.JSONLD_NO_CONTEXT, S.WARNING, C.STRUCTURED_DATA, "JSON-LD without @context",
     "Add \"@context\": \"https://schema.org\" to each top-level item (or to the object holding @graph).", True),
    (F.JSONLD_NO_TYPE, S.WARNING, C.STRUCTURED_DATA, "JSON-LD item without @type",
     "Give each top-level item a schema.org @type; without one it is eligible for no rich result.", True),
    # Security and transport (issue 47)
    (F.REDIRECT_TEMPORARY, S.NOTICE, C.REDIRECTS, "Temporary redirect",
     "A 302, 303 or 307 keeps the old URL in the index; if the move is for good, answer 301 or 308.", False),
    (F.META_REFRESH, S.NOTICE, C.REDIRECTS, "Meta refresh redirect",
     "The page redirects with an instant meta refresh; use a server-side 301 (or 308) instead.", True),
    (F.META_REFRESH_DELAYED, S.WARNING, C.REDIRECTS, "Delayed meta refresh",
     "A delayed meta refresh is read as a temporary redirect and shows users a page that then moves; "
     "use a server-side redirect.", True),
    (F.HTTP_PAGE_ON_HTTPS_SITE, S.WARNING, C.SECURITY, "HTTP page on an HTTPS site",
     "The page is served over plain http while the site is https; redirect it to its https URL and link "
     "to that.", True),
    (F.HTTPS_REDIRECT_MISSING, S.WARNING, C.SECURITY, "No redirect from HTTP to HTTPS",
     "The http:// URL does not answer with a redirect to https; add a 301 from every http URL to its "
     "https twin.", True),
    (F.MIXED_CONTENT, S.WARNING, C.SECURITY, "Mixed content",
     "The https page loads http:// subresources, which browsers block or flag; load them over https.", True),
    (F.HSTS_MISSING, S.NOTICE, C.SECURITY, "HSTS missing",
     "The host's https pages send no Strict-Transport-Security header with a positive max-age; add one so "
     "browsers never try http first.", False),
    # Sitemap quality (issue 47)
    (F.SITEMAP_LASTMOD_FUTURE, S.WARNING, C.SITEMAP, "Sitemap lastmod in the future",
     "Search engines stop trusting lastmod values that cannot be true; write the page's real last "
     "modification time.", False),
    (F.SITEMAP_LASTMOD_UNIFORM, S.NOTICE, C.SITEMAP, "Same lastmod on every sitemap entry",
     "Every entry has the same lastmod, which looks like the sitemap's generation time; search engines "
     "then ignore it. Write each page's own modification time.", False),
    (F.SITEMAP_LASTMOD_INVALID, S.NOTICE, C.SITEMAP, "Invalid sitemap lastmod",
     "Write lastmod in W3C Datetime format (2024-05-01 or 2024-05-01T10:00:00+00:00); other values are "
     "ignored.", False),
    (F.SITEMAP_OTHER_HOSTS, S.WARNING, C.SITEMAP, "Sitemap lists URLs on other hosts",
     "A sitemap may list only URLs of its own host (unless cross-submitted through that host's robots.txt); "
     "move the others to a sitemap on their host.", False),
)  # fmt: skip

CATALOGUE = Catalogue(FindingDef(c.value, s, cat, t, a, w) for c, s, cat, t, a, w in _BUILTIN)


@dataclass(frozen=True, slots=True)
class Finding:
    """One finding on one URL; `related_url` is the other end (link target, duplicate, canonical...)."""

    code: str
    severity: Severity
    url: str
    detail: str = ""
    related_url: str | None = None

    def to_row(self) -> dict[str, str | None]:
        return {
            "code": self.code,
            "severity": self.severity.value,
            "url": self.url,
            "detail": self.detail,
            "related_url": self.related_url,
        }


def make_finding(
    code: str,
    url: str,
    detail: str = "",
    related_url: str | None = None,
    *,
    catalogue: Catalogue = CATALOGUE,
) -> Finding:
    """Build a Finding with the severity from the catalogue (raises UnknownFindingError)."""
    return Finding(str(code), catalogue.get(code).severity, url, detail, related_url)
