"""Which sitemaps to fetch: discovery order (robots.txt, then well-known paths) and index recursion bounds."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from urllib.parse import urljoin, urlsplit, urlunsplit

from seolens_core.sitemaps._model import (
    ALERT_SITEMAP_INDEX_CYCLE,
    ALERT_SITEMAP_INDEX_TOO_DEEP,
    ALERT_SITEMAP_TOO_MANY_SITEMAPS,
)

PROBE_PATHS: tuple[str, ...] = ("/sitemap.xml", "/sitemap_index.xml", "/wp-sitemap.xml")
"""Well-known locations tried after robots.txt (guide 5.2); the caller checks robots.txt allows each."""


def _key(url: str) -> str:
    """Light canonical form for cycle detection: scheme and host lowercased, fragment dropped."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return url.strip()
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), parts.path or "/", parts.query, ""))


def candidate_sitemaps(origin: str, robots_sitemaps: Sequence[str]) -> list[str]:
    """Sitemap URLs to try, in order: robots.txt `Sitemap:` lines (relative ones resolved), then the probes.

    Duplicates are dropped (first occurrence wins); non-http(s) entries from robots.txt are ignored.
    """
    base = origin.strip().rstrip("/") + "/"
    seen: set[str] = set()
    found: list[str] = []
    for raw in (*robots_sitemaps, *PROBE_PATHS):
        raw = raw.strip()
        if not raw:
            continue
        try:
            url = urljoin(base, raw)
        except ValueError:
            continue
        if not url.lower().startswith(("http://", "https://")):
            continue
        key = _key(url)
        if key not in seen:
            seen.add(key)
            found.append(url)
    return found


@dataclass(frozen=True, slots=True)
class WalkDecision:
    """Whether to fetch a sitemap; when not, `finding` names the reason. Truthy when allowed."""

    fetch: bool
    finding: str | None = None

    def __bool__(self) -> bool:
        return self.fetch


_FETCH = WalkDecision(True)


class SitemapWalk:
    """Tracks one crawl's sitemaps so index recursion stays finite: no URL twice, none past max_depth.

    Depth counts index hops: a sitemap found in robots.txt or by probing is depth 0, a child listed
    by a depth-d index is depth d + 1. With max_depth=3 index entries are followed three hops down:
    sitemaps at depth 3 are read, the children they list are refused as too deep.
    The seen set is exported by `seen` and accepted back, so a batched seed task can resume the walk.
    """

    def __init__(self, max_depth: int = 3, max_sitemaps: int = 50_000, seen: Iterable[str] = ()) -> None:
        if max_depth < 0:
            raise ValueError("max_depth must be >= 0")
        if max_sitemaps <= 0:
            raise ValueError("max_sitemaps must be positive")
        self.max_depth = max_depth
        self.max_sitemaps = max_sitemaps
        self._seen: set[str] = {_key(u) for u in seen}

    @property
    def seen(self) -> frozenset[str]:
        """Canonical keys of the sitemaps accepted so far."""
        return frozenset(self._seen)

    def should_fetch(self, url: str, depth: int) -> WalkDecision:
        """Accept `url` at `depth` and remember it, or say why not: a repeat (cycle), too deep, too many."""
        key = _key(url)
        if key in self._seen:
            return WalkDecision(False, ALERT_SITEMAP_INDEX_CYCLE)
        if depth > self.max_depth:
            return WalkDecision(False, ALERT_SITEMAP_INDEX_TOO_DEEP)
        if len(self._seen) >= self.max_sitemaps:
            return WalkDecision(False, ALERT_SITEMAP_TOO_MANY_SITEMAPS)
        self._seen.add(key)
        return _FETCH
