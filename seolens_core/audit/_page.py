"""Per-page rules: one page's facts and fetch outcome in, its findings out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urldefrag

from seolens_core.audit._catalogue import CATALOGUE, Catalogue, Finding, FindingCode, make_finding
from seolens_core.audit._hreflang import alternate_signals, page_alternates
from seolens_core.audit._indexability import canonical_signals, canonical_targets, expired, robots_signals
from seolens_core.audit._settings import AuditSettings
from seolens_core.audit._structured import structured_data_signals
from seolens_core.audit._transport import transport_signals
from seolens_core.audit._waf import WafMatch
from seolens_core.html import PageFacts

F = FindingCode
_DEFAULT_SETTINGS = AuditSettings()


@dataclass(frozen=True, slots=True)
class FetchFacts:
    """How the page was fetched.

    `redirect_chain` lists the URLs that answered with a redirect, in order, starting with the
    requested URL, and excludes `final_url`; it is empty when the fetcher returns single hops
    (then chains are found by `site_findings` from the hop rows). `status` is None only with `error`.
    """

    status: int | None
    final_url: str
    redirect_chain: tuple[str, ...] = ()
    ttfb_ms: float | None = None
    size: int = 0
    content_type: str | None = None
    error: str | None = None
    redirect_to: str | None = None
    """The normalized Location of a 3xx answer; `refresh_to` the normalized target of a meta refresh."""
    refresh_to: str | None = None


def _redirect_findings(fetch: FetchFacts, catalogue: Catalogue) -> list[Finding]:
    chain = fetch.redirect_chain
    if not chain:
        return []
    path = " -> ".join((*chain, fetch.final_url))
    if len({*chain, fetch.final_url}) < len(chain) + 1:
        return [make_finding(F.REDIRECT_LOOP, chain[0], path, fetch.final_url, catalogue=catalogue)]
    if len(chain) > 1:
        detail = f"{len(chain)} hops: {path}"
        return [make_finding(F.REDIRECT_CHAIN, chain[0], detail, fetch.final_url, catalogue=catalogue)]
    return []


def _resolved_canonical(facts: PageFacts) -> str | None:
    """Fallback resolution when the caller gives no normalized canonical: RFC 3986 join, no fragment."""
    targets = canonical_targets(facts)
    return targets[0] if targets else None


def _indexability_findings(
    facts: PageFacts, canonical_url: str | None, now: float | None, catalogue: Catalogue
) -> list[Finding]:
    """Canonical and robots signals of a 2xx answer, HTML or not (a PDF has them in its headers)."""
    url = facts.url
    out: list[Finding] = []
    if facts.noindex or expired(facts, now):
        detail = ", ".join(sorted(facts.robots_directives))
        if expired(facts, now):
            detail = f"unavailable_after {facts.unavailable_after} has passed" + (
                f"; {detail}" if detail else ""
            )
        out.append(make_finding(F.NOINDEX, url, detail, catalogue=catalogue))
    canonical = canonical_url if canonical_url is not None else _resolved_canonical(facts)
    if canonical is not None and canonical != urldefrag(url).url:
        out.append(make_finding(F.CANONICAL_ELSEWHERE, url, "", canonical, catalogue=catalogue))
    for code, detail, related in canonical_signals(facts, canonical):
        out.append(make_finding(code, url, detail, related, catalogue=catalogue))
    for code, detail in robots_signals(facts, now):
        out.append(make_finding(code, url, detail, catalogue=catalogue))
    return out


def _hreflang_findings(
    facts: PageFacts, alternates: Sequence[tuple[str, str]] | None, catalogue: Catalogue
) -> list[Finding]:
    """The page's own hreflang annotations (HTML and Link header): codes, self-reference, x-default."""
    pairs = alternates if alternates is not None else page_alternates(facts)
    page = urldefrag(facts.url).url
    return [
        make_finding(code, facts.url, detail, related, catalogue=catalogue)
        for code, detail, related in alternate_signals(page, pairs, "HTML")
    ]


def _content_findings(facts: PageFacts, settings: AuditSettings, catalogue: Catalogue) -> list[Finding]:
    url = facts.url
    out: list[Finding] = []

    def add(code: str, detail: str = "", related: str | None = None) -> None:
        out.append(make_finding(code, url, detail, related, catalogue=catalogue))

    title = facts.title
    if title is None:
        add(F.TITLE_MISSING)
    elif not title:
        add(F.TITLE_EMPTY)
    elif len(title) > settings.title_max_chars:
        add(F.TITLE_TOO_LONG, f"{len(title)} characters (max {settings.title_max_chars})")
    elif len(title) < settings.title_min_chars:
        add(F.TITLE_TOO_SHORT, f"{len(title)} characters (min {settings.title_min_chars})")

    desc = facts.meta_desc
    if not desc:
        add(F.META_DESC_MISSING, "empty" if desc == "" else "")
    elif len(desc) > settings.meta_desc_max_chars:
        add(F.META_DESC_TOO_LONG, f"{len(desc)} characters (max {settings.meta_desc_max_chars})")
    elif len(desc) < settings.meta_desc_min_chars:
        add(F.META_DESC_TOO_SHORT, f"{len(desc)} characters (min {settings.meta_desc_min_chars})")

    h1 = [text for text in facts.h1 if text]
    if not h1:
        add(F.H1_MISSING)
    elif len(h1) > 1:
        add(F.H1_MULTIPLE, f"{len(h1)} H1 elements")

    if facts.word_count < settings.thin_content_words:
        add(F.THIN_CONTENT, f"{facts.word_count} words (min {settings.thin_content_words})")
    if facts.images_without_alt:
        add(F.IMAGES_WITHOUT_ALT, f"{facts.images_without_alt} images")
    if facts.links_truncated:
        add(F.LINKS_TRUNCATED, f"first {len(facts.links)} links recorded")
    if facts.nofollow:
        add(F.NOFOLLOW_PAGE)
    for code, detail in structured_data_signals(facts):
        add(code, detail)
    return out


def audit_page(
    facts: PageFacts,
    fetch: FetchFacts,
    settings: AuditSettings = _DEFAULT_SETTINGS,
    *,
    waf: WafMatch | None = None,
    canonical_url: str | None = None,
    now: float | None = None,
    hreflang_urls: Sequence[tuple[str, str]] | None = None,
    https_site: bool = False,
    catalogue: Catalogue = CATALOGUE,
) -> list[Finding]:
    """Findings of one page. Findings are reported on `facts.url` (redirect ones on the first hop).

            `canonical_url` is the caller's normalized absolute canonical; without it the raw href is joined
            against the page URL; `hreflang_urls` likewise holds its normalized (language, URL) alternates. `now`
        (epoch s, the fetch time) dates `unavailable_after`; `https_site` (the crawl starts on https) makes its
    http:// URLs findings unless they redirect to https. Canonical and robots
            rules run on 2xx answers, content rules only on 2xx HTML answers. With `waf` set, the findings
            marked `waf_suppressed` in the catalogue are dropped (the body is a challenge, not the page) and
            ALERT_WAF_BOT_CHALLENGE carries the provider's advice as its detail.
    """
    url = facts.url
    if fetch.error is not None:
        return [make_finding(F.FETCH_ERROR, url, fetch.error, catalogue=catalogue)]
    out = _redirect_findings(fetch, catalogue)
    status = fetch.status
    if status is not None and 400 <= status < 500:
        out.append(make_finding(F.HTTP_4XX, url, str(status), catalogue=catalogue))
    elif status is not None and status >= 500:
        out.append(make_finding(F.HTTP_5XX, url, str(status), catalogue=catalogue))
    if fetch.ttfb_ms is not None and fetch.ttfb_ms > settings.slow_ttfb_ms:
        detail = f"{fetch.ttfb_ms:.0f} ms (max {settings.slow_ttfb_ms:.0f})"
        out.append(make_finding(F.SLOW_TTFB, url, detail, catalogue=catalogue))
    if fetch.size > settings.large_page_bytes:
        detail = f"{fetch.size} bytes (max {settings.large_page_bytes})"
        out.append(make_finding(F.LARGE_PAGE, url, detail, catalogue=catalogue))
    for code, detail, related in transport_signals(facts, fetch, https_site):
        out.append(make_finding(code, url, detail, related, catalogue=catalogue))
    ok = status is not None and 200 <= status < 300
    if ok:
        out.extend(_indexability_findings(facts, canonical_url, now, catalogue))
        out.extend(_hreflang_findings(facts, hreflang_urls, catalogue))
    if ok and facts.is_html:
        out.extend(_content_findings(facts, settings, catalogue))
    if waf is None:
        return out
    kept = [finding for finding in out if not catalogue.get(finding.code).waf_suppressed]
    return [make_finding(F.WAF_BOT_CHALLENGE, url, waf.advice, catalogue=catalogue), *kept]
