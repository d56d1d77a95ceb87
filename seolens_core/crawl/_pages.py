"""Result rows (pure): one dict per URL for pages.jsonl, from the fetch result and the extracted facts."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from seolens_core.audit import (
    AuditSettings,
    FetchFacts,
    WafMatch,
    audit_page,
    detect_waf,
    expired,
    redirect_type,
)
from seolens_core.crawl._links import CrawlScope, LinkPlan, plan_discovered, plan_links, plan_redirect
from seolens_core.fetch import FetchResult
from seolens_core.frontier import FrontierMessage
from seolens_core.html import MULTI_VALUE_SEP, PageFacts, extract_page, non_html_facts, parse_refresh
from seolens_core.settings import CrawlSettings
from seolens_core.urls import NormalizedURL

HTML_TYPES = ("text/html", "application/xhtml+xml")
HTML_PARSE_CAP = 2 * 1024 * 1024
MAX_ALTERNATES = 256
"""hreflang alternates kept per page (as per sitemap entry): a site has at most a few hundred versions."""


def dead_letter_row(msg: FrontierMessage) -> dict[str, Any]:
    """A URL whose message failed `maxReceiveCount` times (and its redrives): reported, never silently lost."""
    return {
        "url": msg.url,
        "status": None,
        "depth": msg.depth,
        "outcome": "dead_letter",
        "alerts": ["ALERT_DEAD_LETTER"],
        "dead_letter_redrives": msg.redrives,
    }


def _base(msg: FrontierMessage, now: float) -> dict[str, Any]:
    return {
        "crawl_id": msg.crawl_id,
        "url": msg.url,
        "depth": msg.depth,
        "crawl_time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now)),
        "external": msg.check_only,
        "lastmod": msg.lastmod,
        "meta": msg.meta or None,
    }


def skipped_row(msg: FrontierMessage, outcome: str, alert: str, detail: str) -> dict[str, Any]:
    """A URL that was not fetched (robots, SSRF guard, refused Crawl-delay): still a row, never silently dropped."""
    row = _base(msg, time.time())
    row.update({"status": None, "outcome": outcome, "alerts": [alert], "alert_detail": detail})
    if alert == "ALERT_ROBOTS_DISALLOWED":
        row["robots_disallowed"] = True
    return row


def error_row(msg: FrontierMessage, result: FetchResult) -> dict[str, Any]:
    row = _base(msg, time.time())
    error = result.error
    code = (
        "ALERT_SSRF_BLOCKED"
        if error is not None and error.kind.value == "ssrf_blocked"
        else "ALERT_FETCH_ERROR"
    )
    row.update(
        {
            "status": None,
            "outcome": "error",
            "error": f"{error.kind.value}: {error.detail}" if error is not None else "no response",
            "alerts": [code],
            "download_ms": round(result.total_ms, 1),
        }
    )
    return row


def page_row(
    msg: FrontierMessage,
    url: NormalizedURL,
    result: FetchResult,
    scope: CrawlScope,
    settings: CrawlSettings,
    known: Callable[[str], bool] | None = None,
) -> tuple[dict[str, Any], LinkPlan | None]:
    """The row for a fetched URL and, for an internal HTML page, the plan for its links (`known`: see
    `plan_links`)."""
    now = time.time()
    row = _base(msg, now)
    content_type = result.content_type
    row.update(
        {
            "status": result.status,
            "outcome": "fetched",
            "ttfb_ms": round(result.ttfb_ms, 1) if result.ttfb_ms is not None else None,
            "download_ms": round(result.total_ms, 1),
            "size": len(result.body),
            "truncated": result.truncated,
            "content_type": content_type,
            "http_version": result.http_version,
            "redirect_to": None,
            "internal": not msg.check_only,
        }
    )
    if result.location is not None:
        target = scope.normalize(result.location, url)
        row["redirect_to"] = target.url if target is not None else result.location[:2048]
    waf = detect_waf(result.body, result.headers, status=result.status)
    row["waf_provider"] = waf.provider if waf is not None else None
    is_html = content_type is not None and content_type.split(";", 1)[0].strip().lower() in HTML_TYPES
    row["is_html"] = is_html
    facts = PageFacts(url=url.url, is_html=False)
    plan = None
    if not msg.check_only and not (is_html and result.body):
        facts = non_html_facts(url.url, result.headers)  # X-Robots-Tag, Link and HSTS: a PDF has them too
        row.update({"x_robots_tag": facts.x_robots_tag, "hsts": facts.hsts})
    if is_html and result.body and not msg.check_only:
        # Like Googlebot, only the first 2 MiB of HTML count; it also bounds the DOM (~35x the input) in a
        # 256 MB worker. Bigger pages get ALERT_LARGE_PAGE from the audit.
        facts = extract_page(
            result.body[:HTML_PARSE_CAP], url=url.url, content_type=content_type, headers=result.headers
        )
        row.update(facts.to_row())
        row["url"] = msg.url
        if waf is None and 200 <= (result.status or 0) < 300 and not msg.probe:
            base = scope.normalize(facts.base_href, url) if facts.base_href else None
            plan = plan_links(
                msg, url, facts.links, scope, settings, base=base, page_nofollow=facts.nofollow, known=known
            )
            row["links_internal"] = sum(1 for e in plan.edges if e["internal"])
            row["links_external"] = sum(1 for e in plan.edges if not e["internal"])
    named = _named_urls(url, result, facts, scope, row)
    if plan is not None:
        _plan_named(plan, msg, url, named, scope, settings, known)
    row["noindex"] = facts.noindex or expired(facts, now)
    # An external URL is no page of the https site, whatever its scheme.
    https_site = not msg.check_only and any(u.scheme == "https" for u in scope.start_urls)
    row["alerts"], details = _audit(
        url, result, facts, waf, named, row["redirect_to"], settings, https_site, now
    )
    if details:
        row["alert_details"] = details
    return row, plan


@dataclass(frozen=True, slots=True)
class _Named:
    """The URLs a page names besides its links, normalized: canonical, hreflang alternates, meta refresh."""

    canonical: str | None
    alternates: list[tuple[str, NormalizedURL]]
    refresh: str | None
    refresh_href: str | None


def _named_urls(
    url: NormalizedURL,
    result: FetchResult,
    facts: PageFacts,
    scope: CrawlScope,
    row: dict[str, Any],
) -> _Named:
    """What the page names (written to the row too) and how it redirects (`redirect_type`)."""
    canonical = _canonical(facts, url, scope, row)
    alternates = _alternates(facts, url, scope, row)
    row["redirect_type"] = redirect_type(result.status, facts)
    refresh = parse_refresh(facts.meta_refresh) if row["redirect_type"] else None
    refresh_to = None
    if refresh is not None and refresh.url is not None:
        target = scope.normalize(refresh.url, url)
        refresh_to = target.url if target is not None else None
        row["meta_refresh_to"] = refresh_to or refresh.url[:2048]
    return _Named(canonical, alternates, refresh_to, refresh.url if refresh is not None else None)


def _plan_named(
    plan: LinkPlan,
    msg: FrontierMessage,
    url: NormalizedURL,
    named: _Named,
    scope: CrawlScope,
    settings: CrawlSettings,
    known: Callable[[str], bool] | None,
) -> None:
    """Crawl what the page names as search engines do: a meta refresh target is a redirect (an edge, the same
    depth); the canonical and the alternates are enqueued without an edge (they are not links)."""
    if named.refresh_href is not None:
        hop = plan_redirect(msg, url, named.refresh_href, scope, settings)
        plan.edges.extend(hop.edges)
        claimed = {m.url for m in plan.enqueue}
        for message, host in zip(hop.enqueue, hop.enqueue_hosts, strict=True):
            if message.url not in claimed and (known is None or not known(message.key)):
                plan.add(message, host)
    canonical = scope.normalize(named.canonical) if named.canonical else None
    listed = [*([canonical] if canonical is not None else []), *(u for _, u in named.alternates)]
    plan_discovered(plan, msg, listed, scope, settings, known)


def _audit(
    url: NormalizedURL,
    result: FetchResult,
    facts: PageFacts,
    waf: WafMatch | None,
    named: _Named,
    redirect_to: str | None,
    settings: CrawlSettings,
    https_site: bool,
    now: float,
) -> tuple[list[str], dict[str, str]]:
    """The page's finding codes and their details."""
    fetch = FetchFacts(
        status=result.status,
        final_url=url.url,
        ttfb_ms=result.ttfb_ms,
        size=len(result.body),
        content_type=result.content_type,
        redirect_to=redirect_to,
        refresh_to=named.refresh,
    )
    findings = audit_page(
        facts,
        fetch,
        _audit_settings(settings.thin_content_words),
        waf=waf,
        canonical_url=named.canonical,
        now=now,
        hreflang_urls=[(lang, u.url) for lang, u in named.alternates],
        https_site=https_site,
    )
    return sorted({f.code for f in findings}), {f.code: f.detail for f in findings if f.detail}


def _canonical(facts: PageFacts, url: NormalizedURL, scope: CrawlScope, row: dict[str, Any]) -> str | None:
    """The page's normalized canonical (the first `<link>` one against `<base>`, else the Link header's
    against the URL), written to the row with the header's canonicals; None when it has none."""
    if facts.header_canonicals:
        resolved = [(scope.normalize(href, url), href) for href in facts.header_canonicals]
        row["canonical_header"] = _joined(tuple(u.url if u is not None else raw for u, raw in resolved))
    if not facts.canonical:
        return None
    base = url
    if facts.canonicals and facts.base_href:
        base = scope.normalize(facts.base_href, url) or url
    target = scope.normalize(facts.canonical, base)
    canonical = target.url if target is not None else None
    row["canonical"] = canonical or facts.canonical
    return canonical


def _alternates(
    facts: PageFacts, url: NormalizedURL, scope: CrawlScope, row: dict[str, Any]
) -> list[tuple[str, NormalizedURL]]:
    """The page's hreflang alternates, normalized (HTML ones against `<base>`, the Link header's against the
    URL), each once; written to the row as `hreflang` [[lang, url], ...] when there are any."""
    html_base = url
    if facts.base_href:
        html_base = scope.normalize(facts.base_href, url) or url
    found: list[tuple[str, NormalizedURL]] = []
    seen: set[tuple[str, str]] = set()
    for base, pairs in ((html_base, facts.hreflang), (url, facts.header_hreflang)):
        for lang, href in pairs:
            target = scope.normalize(href, base)
            if target is not None and (lang, target.url) not in seen and len(found) < MAX_ALTERNATES:
                seen.add((lang, target.url))
                found.append((lang, target))
    if found:
        row["hreflang"] = [[lang, target.url] for lang, target in found]
    return found


def _joined(values: tuple[str, ...]) -> str | None:
    return MULTI_VALUE_SEP.join(values) if values else None


@functools.lru_cache(maxsize=32)
def _audit_settings(thin_content_words: int) -> AuditSettings:
    return AuditSettings(thin_content_words=thin_content_words)
