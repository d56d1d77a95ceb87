"""Sitemap ingestion without I/O: a streaming parser (XML, gzip, text, index) and the recursion policy."""

from __future__ import annotations

from seolens_core.sitemaps._model import (
    ALERT_SITEMAP_DTD_REJECTED,
    ALERT_SITEMAP_INDEX_CYCLE,
    ALERT_SITEMAP_INDEX_TOO_DEEP,
    ALERT_SITEMAP_INVALID_ENTRIES,
    ALERT_SITEMAP_MALFORMED,
    ALERT_SITEMAP_NOT_A_SITEMAP,
    ALERT_SITEMAP_TOO_LARGE,
    ALERT_SITEMAP_TOO_MANY_SITEMAPS,
    ALERT_SITEMAP_TOO_MANY_URLS,
    SitemapEntry,
    SitemapFinding,
    SitemapKind,
    SitemapLimits,
    SitemapResult,
)
from seolens_core.sitemaps._parser import SitemapParser
from seolens_core.sitemaps._walk import PROBE_PATHS, SitemapWalk, WalkDecision, candidate_sitemaps

__all__ = [
    "ALERT_SITEMAP_DTD_REJECTED",
    "ALERT_SITEMAP_INDEX_CYCLE",
    "ALERT_SITEMAP_INDEX_TOO_DEEP",
    "ALERT_SITEMAP_INVALID_ENTRIES",
    "ALERT_SITEMAP_MALFORMED",
    "ALERT_SITEMAP_NOT_A_SITEMAP",
    "ALERT_SITEMAP_TOO_LARGE",
    "ALERT_SITEMAP_TOO_MANY_SITEMAPS",
    "ALERT_SITEMAP_TOO_MANY_URLS",
    "PROBE_PATHS",
    "SitemapEntry",
    "SitemapFinding",
    "SitemapKind",
    "SitemapLimits",
    "SitemapParser",
    "SitemapResult",
    "SitemapWalk",
    "WalkDecision",
    "candidate_sitemaps",
    "parse_sitemap",
]


def parse_sitemap(
    body: bytes, limits: SitemapLimits | None = None
) -> tuple[list[SitemapEntry], SitemapResult]:
    """Parse a whole body already in memory (tests, small fixtures); streaming callers use SitemapParser."""
    parser = SitemapParser(limits)
    entries = parser.feed(body)
    result = parser.close()
    entries.extend(result.tail)
    return entries, result
