"""Indexability: the page's own canonical and robots signals checked for conflicts, and the verdict column.

Search engines read a page's canonical from `<link rel=canonical>` and from the HTTP `Link` header, and its
robots directives from meta robots, `<meta name="googlebot">` and `X-Robots-Tag`. These rules are pure
functions of the page facts; the rules across pages (a canonical to a redirect or to a noindex page) are
site rules (`_site.py`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any
from urllib.parse import urldefrag, urljoin, urlsplit

from seolens_core.audit._catalogue import FindingCode
from seolens_core.html import PageFacts, parse_http_date

F = FindingCode
INDEXABLE = "indexable"
NON_INDEXABLE = "non-indexable"
_SKIPPED_OUTCOMES = {"disallowed": "not fetched", "suspended": "not fetched", "pruned": "not fetched"}


def absolute_url(base: str, href: str) -> str | None:
    """`href` joined to `base` (RFC 3986), without fragment, scheme and host lower-cased; None if invalid."""
    try:
        joined = urldefrag(urljoin(base, href.strip())).url
        parts = urlsplit(joined)
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.netloc:
        return None
    return parts._replace(scheme=parts.scheme.lower(), netloc=parts.netloc.lower()).geturl()


def _is_absolute(href: str) -> bool:
    return href.strip().lower().startswith(("http://", "https://"))


def _host(url: str) -> str:
    try:
        return urlsplit(url).netloc.lower()
    except ValueError:
        return ""


def canonical_targets(facts: PageFacts) -> list[str]:
    """The distinct absolute canonicals the page declares (HTML ones against `<base>`, header ones against
    the URL), in order: more than one is a conflict search engines resolve by ignoring them all."""
    html_base = urljoin(facts.url, facts.base_href) if facts.base_href else facts.url
    found: list[str] = []
    for base, hrefs in ((html_base, facts.canonicals), (facts.url, facts.header_canonicals)):
        for href in hrefs:
            url = absolute_url(base, href)
            if url is not None and url not in found:
                found.append(url)
    return found


def canonical_signals(facts: PageFacts, canonical: str | None) -> Iterator[tuple[str, str, str | None]]:
    """(code, detail, related URL) of the page's canonical conflicts; `canonical` is its normalized canonical.

    Several distinct canonicals, a relative one, one on another host, and noindex together with a canonical
    elsewhere (two opposite signals: "do not index this" and "index that instead").
    """
    page = urldefrag(facts.url).url
    targets = canonical_targets(facts)
    if len(targets) > 1:
        sources = f"{len(facts.canonicals)} in HTML, {len(facts.header_canonicals)} in the Link header"
        yield (
            F.CANONICAL_MULTIPLE,
            f"{len(targets)} different canonicals ({sources}): " + " | ".join(targets[:5]),
            None,
        )
    relative = [href for href in (*facts.canonicals, *facts.header_canonicals) if not _is_absolute(href)]
    if relative:
        yield F.CANONICAL_RELATIVE, f"written as {relative[0]!r}", canonical
    if canonical is not None and _host(canonical) and _host(canonical) != _host(page):
        yield F.CANONICAL_CROSS_DOMAIN, f"canonical on {_host(canonical)}", canonical
    if canonical is not None and canonical != page and facts.noindex:
        yield F.NOINDEX_AND_CANONICAL, "noindex, and canonical to another URL", canonical


def robots_signals(facts: PageFacts, now: float | None) -> Iterator[tuple[str, str]]:
    """(code, detail) of the page's `unavailable_after` directive: a date still ahead (the page drops out of
    results then); one already past makes the page noindex (`expired`)."""
    date = facts.unavailable_after
    if date is None:
        return
    when = parse_http_date(date)
    if when is None:
        yield F.UNAVAILABLE_AFTER, f"unavailable_after {date!r} is not a date search engines can read"
    elif now is None or when > now:
        yield F.UNAVAILABLE_AFTER, f"drops out of search results after {date}"


def expired(facts: PageFacts, now: float | None) -> bool:
    """True when the page's `unavailable_after` date has passed: search engines treat it as noindex."""
    date = facts.unavailable_after
    when = parse_http_date(date) if date is not None else None
    return when is not None and now is not None and when <= now


def indexability(row: Mapping[str, Any]) -> tuple[str | None, str | None]:
    """A pages.jsonl row's (indexability, reason), as Screaming Frog's Indexability / Indexability Status.

    ("indexable", None), or ("non-indexable", why): blocked by robots.txt, fetch error, not fetched,
    redirected, meta refresh, client error, server error, WAF challenge, noindex, canonicalised. (None, None)
    for a URL the crawl never fetched (pending, not crawled) and for external URLs (only status-checked).
    """
    outcome = row.get("outcome")
    if outcome in ("pending", "not_crawled") or row.get("external") or not row.get("internal", True):
        return None, None
    if row.get("robots_disallowed"):
        return NON_INDEXABLE, "blocked by robots.txt"
    if outcome == "error":
        return NON_INDEXABLE, "fetch error"
    status = row.get("status")
    if outcome != "fetched" or not isinstance(status, int):
        return NON_INDEXABLE, _SKIPPED_OUTCOMES.get(str(outcome), "not fetched")
    reason = _status_reason(status)
    if reason is None and row.get("waf_provider"):
        reason = "WAF challenge"
    if reason is None and row.get("noindex"):
        reason = "noindex"
    if reason is None and row.get("canonical") not in (None, row.get("url")):
        reason = "canonicalised"
    if reason is None and row.get("redirect_type") == "meta refresh":
        reason = "meta refresh"
    return (NON_INDEXABLE, reason) if reason is not None else (INDEXABLE, None)


def _status_reason(status: int) -> str | None:
    if 200 <= status < 300:
        return None
    if 300 <= status < 400:
        return "redirected"
    if 400 <= status < 500:
        return "client error"
    if status >= 500:
        return "server error"
    return f"status {status}"
