"""Finding codes raised by the crawl pipeline itself (traps, sitemaps, robots, frontier), registered once
in the audit catalogue so every finding has a severity, a category and advice."""

from __future__ import annotations

from seolens_core.audit import CATALOGUE, Category, FindingDef, Severity
from seolens_core.crawl._links import ALERT_REDIRECT_HOPS_EXCEEDED
from seolens_core.robots import ALERT_ROBOTS_CRAWL_DELAY_TOO_LONG
from seolens_core.sitemaps import (
    ALERT_SITEMAP_DTD_REJECTED,
    ALERT_SITEMAP_INDEX_CYCLE,
    ALERT_SITEMAP_INDEX_TOO_DEEP,
    ALERT_SITEMAP_INVALID_ENTRIES,
    ALERT_SITEMAP_MALFORMED,
    ALERT_SITEMAP_NOT_A_SITEMAP,
    ALERT_SITEMAP_TOO_LARGE,
    ALERT_SITEMAP_TOO_MANY_SITEMAPS,
    ALERT_SITEMAP_TOO_MANY_URLS,
)
from seolens_core.urls._traps import FINDING_CODES

ALERT_CRAWL_STOPPED = "ALERT_CRAWL_STOPPED"
ALERT_SITEMAP_NOT_READ = "ALERT_SITEMAP_NOT_READ"

S, C = Severity, Category
_PIPELINE = [
    *(
        (
            code,
            S.NOTICE,
            C.CRAWL,
            "URL pruned as a likely spider trap",
            "Add rel=nofollow or robots rules for generated URLs.",
        )
        for code in FINDING_CODES.values()
    ),
    (
        ALERT_REDIRECT_HOPS_EXCEEDED,
        S.WARNING,
        C.REDIRECTS,
        "Redirect chain too long to follow",
        "Redirect straight to the final URL; the crawler follows at most max_redirect_hops (10) redirects.",
    ),
    (
        ALERT_ROBOTS_CRAWL_DELAY_TOO_LONG,
        S.WARNING,
        C.CRAWL,
        "Crawl-delay too long",
        "robots.txt asks for a longer Crawl-delay than max_crawl_delay; the host was skipped (or use --force-crawl-delay-cap).",
    ),
    (
        "ALERT_NOT_IN_SITEMAP",
        S.NOTICE,
        C.SITEMAP,
        "Indexable page missing from the sitemaps",
        "List every indexable page you want found in an XML sitemap.",
    ),
    (
        "ALERT_HOST_SUSPENDED",
        S.WARNING,
        C.CRAWL,
        "Host suspended by a long Retry-After",
        "The host asked to wait longer than retry_after_cap_s; its URLs were not fetched earlier than asked.",
    ),
    (
        "ALERT_ROBOTS_TEXT_TRUNCATED",
        S.NOTICE,
        C.CRAWL,
        "robots.txt too large to store whole",
        "Only its records were stored (same rules), or, if even they did not fit, the host was disallowed;"
        " keep robots.txt well under 500 KiB.",
    ),
    (
        "ALERT_SSRF_BLOCKED",
        S.WARNING,
        C.ACCESS,
        "Address refused by the SSRF guard",
        "The host resolves to a private or local address; pass it with --allow-host to crawl it.",
    ),
    (
        "ALERT_URL_PENDING",
        S.WARNING,
        C.CRAWL,
        "URL still pending when the crawl ended",
        "Its host was suspended (robots.txt unreachable or Retry-After) until the crawl ended.",
    ),
    (
        ALERT_CRAWL_STOPPED,
        S.NOTICE,
        C.CRAWL,
        "Crawl ended before it was complete",
        "A page or time budget, a cancel or a failure ended it: raise the budget to audit the rest.",
    ),
    (
        ALERT_SITEMAP_NOT_READ,
        S.NOTICE,
        C.SITEMAP,
        "Sitemap not read: the crawl ended first",
        "The crawl's budget ended before this sitemap was read; its URLs were not seeded.",
    ),
    (
        "ALERT_DEAD_LETTER",
        S.CRITICAL,
        C.CRAWL,
        "URL dead-lettered",
        "Processing failed repeatedly; see the dead-letter queue and redrive it after fixing the cause.",
    ),
    (
        "ALERT_SITEMAP_UNREADABLE",
        S.WARNING,
        C.SITEMAP,
        "Sitemap could not be read",
        "Check the sitemap URL and its status.",
    ),
    (
        "ALERT_SITEMAP_INVALID_URL",
        S.NOTICE,
        C.SITEMAP,
        "Sitemap URL is not crawlable",
        "Use absolute http(s) sitemap URLs.",
    ),
    (
        "ALERT_SITEMAP_URLS_OUTSIDE_SCOPE",
        S.NOTICE,
        C.SITEMAP,
        "Sitemap lists URLs outside the crawl",
        "Sitemaps should list URLs of their own host only.",
    ),
    (
        ALERT_SITEMAP_DTD_REJECTED,
        S.WARNING,
        C.SITEMAP,
        "Sitemap with a DTD rejected",
        "Remove the DOCTYPE/ENTITY declarations.",
    ),
    (
        ALERT_SITEMAP_INDEX_CYCLE,
        S.NOTICE,
        C.SITEMAP,
        "Sitemap index cycle",
        "An index lists a sitemap already read.",
    ),
    (
        ALERT_SITEMAP_INDEX_TOO_DEEP,
        S.NOTICE,
        C.SITEMAP,
        "Sitemap index nested too deep",
        "Keep sitemap indexes within 3 levels.",
    ),
    (
        ALERT_SITEMAP_INVALID_ENTRIES,
        S.NOTICE,
        C.SITEMAP,
        "Sitemap has invalid entries",
        "Fix empty or non-http(s) <loc> values.",
    ),
    (
        ALERT_SITEMAP_MALFORMED,
        S.WARNING,
        C.SITEMAP,
        "Malformed sitemap",
        "Entries before the error were kept; fix the XML.",
    ),
    (
        ALERT_SITEMAP_NOT_A_SITEMAP,
        S.WARNING,
        C.SITEMAP,
        "Not a sitemap",
        "The document is neither a urlset, an index nor a text sitemap.",
    ),
    (
        ALERT_SITEMAP_TOO_LARGE,
        S.WARNING,
        C.SITEMAP,
        "Sitemap over 50 MB",
        "Split it: the protocol allows 50 MB uncompressed.",
    ),
    (
        ALERT_SITEMAP_TOO_MANY_SITEMAPS,
        S.NOTICE,
        C.SITEMAP,
        "Too many sitemaps",
        "The crawl's sitemap limit was reached.",
    ),
    (
        ALERT_SITEMAP_TOO_MANY_URLS,
        S.WARNING,
        C.SITEMAP,
        "Sitemap over 50,000 URLs",
        "Split it: the protocol allows 50,000 URLs.",
    ),
]
for _code, _sev, _cat, _title, _advice in _PIPELINE:
    if _code not in CATALOGUE:
        CATALOGUE.register(FindingDef(_code, _sev, _cat, _title, _advice))


def describe(code: str) -> tuple[str, str]:
    """Severity and title of a code (unknown codes are reported as notices, never dropped)."""
    if code in CATALOGUE:
        definition = CATALOGUE.get(code)
        return definition.severity.value, definition.title
    return Severity.NOTICE.value, code
