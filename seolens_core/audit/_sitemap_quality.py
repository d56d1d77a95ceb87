"""Sitemap quality: what one sitemap document says about itself (its lastmods, its hosts), judged as
search engines judge it. Google ignores lastmod values it finds inaccurate: dates in the future, or the
same date on every entry (a generation time, not a modification time).

Pure: the document's entries and the time in, (code, detail) out. The entries' crawl results (a listed URL
that redirects, errors or is not indexable) are judged by the site rules (`ALERT_SITEMAP_NON_INDEXABLE`).
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from seolens_core.audit._catalogue import FindingCode

if TYPE_CHECKING:
    from seolens_core.sitemaps import SitemapEntry

F = FindingCode
FUTURE_TOLERANCE_S = 86_400.0
"""A lastmod up to a day ahead is time zones, not the future."""
EXAMPLE_CHARS = 200
"""Characters of a URL or value a detail quotes: the seeding keeps its findings in its (bounded) cursor."""
UNIFORM_MIN_ENTRIES = 10
"""A sitemap needs this many entries, all with the same lastmod, before it is called uniform."""
_W3C_DATE = re.compile(r"^\d{4}(-\d{2}(-\d{2})?)?$")
_W3C_DATETIME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:\d{2})$")


def lastmod_epoch(value: str) -> float | None:
    """Epoch seconds of a W3C Datetime lastmod (YYYY, YYYY-MM, YYYY-MM-DD, or a date-time with a zone)."""
    text = value.strip()
    if _W3C_DATE.match(text):
        parts = [int(p) for p in text.split("-")] + [1, 1]
        try:
            day = datetime.datetime(parts[0], parts[1], parts[2], tzinfo=datetime.UTC)
        except ValueError:
            return None
        return day.timestamp()
    if _W3C_DATETIME.match(text):
        try:
            return datetime.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return None
    return None


class SitemapQuality:
    """The quality findings of one sitemap document, fed entry by entry (a document can hold 50,000)."""

    def __init__(self, sitemap_url: str, now: float) -> None:
        self._host = urlsplit(sitemap_url).netloc.lower()
        self._now = now
        self.entries = 0
        self._future: list[str] = []
        self._future_count = 0
        self._invalid: list[str] = []
        self._invalid_count = 0
        self._lastmods: set[str] = set()
        self._dated = 0
        self._other_hosts: dict[str, int] = {}

    def add(self, entry: SitemapEntry) -> None:
        if entry.kind != "url":
            return
        self.entries += 1
        try:
            host = urlsplit(entry.loc).netloc.lower()
        except ValueError:
            host = ""
        if host and host != self._host and (len(self._other_hosts) < 100 or host in self._other_hosts):
            self._other_hosts[host] = self._other_hosts.get(host, 0) + 1
        if entry.lastmod is None:
            return
        self._dated += 1
        if len(self._lastmods) < 2:
            self._lastmods.add(entry.lastmod.strip())
        when = lastmod_epoch(entry.lastmod)
        if when is None:
            self._invalid_count += 1
            if len(self._invalid) < 3:
                self._invalid.append(f"{entry.loc[:EXAMPLE_CHARS]} ({entry.lastmod[:EXAMPLE_CHARS]!r})")
        elif when > self._now + FUTURE_TOLERANCE_S:
            self._future_count += 1
            if len(self._future) < 3:
                self._future.append(f"{entry.loc[:EXAMPLE_CHARS]} ({entry.lastmod[:EXAMPLE_CHARS]})")

    def findings(self) -> Iterator[tuple[str, str]]:
        """(code, detail) of the document, once all its entries were added."""
        if self._future_count:
            shown = ", ".join(self._future)
            yield F.SITEMAP_LASTMOD_FUTURE, f"{self._future_count} of {self.entries} entries: {shown}"
        if self._invalid_count:
            shown = ", ".join(self._invalid)
            yield F.SITEMAP_LASTMOD_INVALID, f"{self._invalid_count} of {self.entries} entries: {shown}"
        if self._dated == self.entries >= UNIFORM_MIN_ENTRIES and len(self._lastmods) == 1:
            yield (
                F.SITEMAP_LASTMOD_UNIFORM,
                f"all {self.entries} entries have lastmod {next(iter(self._lastmods))[:EXAMPLE_CHARS]}",
            )
        if self._other_hosts:
            count = sum(self._other_hosts.values())
            hosts = ", ".join(host[:EXAMPLE_CHARS] for host in sorted(self._other_hosts)[:5])
            yield (
                F.SITEMAP_OTHER_HOSTS,
                f"{count} of {self.entries} URLs on other hosts than {self._host}: {hosts}",
            )


def sitemap_quality(sitemap_url: str, entries: Iterable[SitemapEntry], now: float) -> list[tuple[str, str]]:
    """`SitemapQuality` over a whole list of entries."""
    quality = SitemapQuality(sitemap_url, now)
    for entry in entries:
        quality.add(entry)
    return list(quality.findings())
