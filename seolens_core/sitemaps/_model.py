"""Values exchanged with the sitemap parser: limits, entries, findings and the final result."""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Literal

ALERT_SITEMAP_DTD_REJECTED = "ALERT_SITEMAP_DTD_REJECTED"
ALERT_SITEMAP_TOO_LARGE = "ALERT_SITEMAP_TOO_LARGE"
ALERT_SITEMAP_TOO_MANY_URLS = "ALERT_SITEMAP_TOO_MANY_URLS"
ALERT_SITEMAP_MALFORMED = "ALERT_SITEMAP_MALFORMED"
ALERT_SITEMAP_NOT_A_SITEMAP = "ALERT_SITEMAP_NOT_A_SITEMAP"
ALERT_SITEMAP_INVALID_ENTRIES = "ALERT_SITEMAP_INVALID_ENTRIES"
ALERT_SITEMAP_INDEX_CYCLE = "ALERT_SITEMAP_INDEX_CYCLE"
ALERT_SITEMAP_INDEX_TOO_DEEP = "ALERT_SITEMAP_INDEX_TOO_DEEP"
ALERT_SITEMAP_TOO_MANY_SITEMAPS = "ALERT_SITEMAP_TOO_MANY_SITEMAPS"

MiB = 1024 * 1024


class SitemapKind(enum.Enum):
    """What the document turned out to be, decided by sniffing its bytes and its root element."""

    URLSET = "urlset"
    INDEX = "sitemapindex"
    TEXT = "text"
    UNKNOWN = "unknown"


@dataclass(frozen=True, slots=True)
class SitemapLimits:
    """Bounds on one sitemap document; the protocol's own limits are the defaults (sitemaps.org)."""

    max_urls: int = 50_000
    """Entries (urls or child sitemaps) accepted; the next one stops parsing."""
    max_uncompressed_bytes: int = 50 * MiB
    """Decompressed bytes accepted; beyond this parsing stops (the decompression cap)."""
    max_compression_ratio: float = 250.0
    """Decompressed/compressed ratio that stops a gzip early (bomb); checked once past `ratio_grace_bytes`."""
    ratio_grace_bytes: int = 1 * MiB
    """Decompressed bytes before the ratio check applies, so tiny repetitive sitemaps pass."""
    max_loc_length: int = 2048
    """Longest `<loc>` (or text line) kept; longer ones are skipped and counted."""
    max_field_length: int = 64
    """Longest lastmod/changefreq/priority kept; longer values become None."""
    max_token_bytes: int = 1 * MiB
    """Bytes the XML tokenizer may hold without completing a token (one giant tag or comment)."""

    def __post_init__(self) -> None:
        for name in (
            "max_urls",
            "max_uncompressed_bytes",
            "max_loc_length",
            "max_field_length",
            "max_token_bytes",
        ):
            if getattr(self, name) <= 0:
                raise ValueError(f"SitemapLimits.{name} must be positive")
        if self.max_compression_ratio <= 1.0:
            raise ValueError("SitemapLimits.max_compression_ratio must be > 1")
        if self.ratio_grace_bytes < 0:
            raise ValueError("SitemapLimits.ratio_grace_bytes must be >= 0")


@dataclass(frozen=True, slots=True)
class SitemapEntry:
    """One `<url>` of a urlset, one `<sitemap>` of an index, or one line of a text sitemap."""

    loc: str
    lastmod: str | None = None
    kind: Literal["url", "sitemap"] = "url"
    changefreq: str | None = None
    priority: str | None = None
    alternates: tuple[tuple[str, str], ...] = ()
    """hreflang alternates of a `<url>` (`<xhtml:link rel="alternate" hreflang=".." href=".."/>`), as written."""


@dataclass(frozen=True, slots=True)
class SitemapFinding:
    """A problem seen in the document; `position` is the offset in the decompressed bytes, if known."""

    code: str
    detail: str
    position: int | None = None


@dataclass(frozen=True, slots=True)
class SitemapResult:
    """Summary returned by `SitemapParser.close()`; entries themselves were handed out by `feed()`."""

    kind: SitemapKind
    entries: int
    """Entries returned by feed()."""
    skipped: int
    """Entries dropped: empty, non-http(s) or over-long loc, or a text line that is not a URL."""
    compressed: bool
    """The bytes were gzip (detected by magic bytes)."""
    bytes_in: int
    """Bytes given to feed()."""
    bytes_decompressed: int
    """Bytes after gzip decoding (equal to bytes_in for plain input), up to where parsing stopped."""
    complete: bool
    """The whole document was parsed; False when a limit, a DTD or an error stopped it."""
    findings: tuple[SitemapFinding, ...] = ()
    tail: tuple[SitemapEntry, ...] = ()
    """Entries completed only by close() (a text sitemap's last line without newline): handle them too."""

    def has(self, code: str) -> bool:
        """True when a finding with this code was recorded."""
        return any(f.code == code for f in self.findings)
