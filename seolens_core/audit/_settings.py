"""Audit thresholds, all in one place with their defaults; validated when built."""

from __future__ import annotations

from dataclasses import dataclass

WAF_BLOCK_STATUSES = frozenset({401, 403, 405, 406, 429, 503})


@dataclass(frozen=True, slots=True)
class AuditSettings:
    """Thresholds for per-page and site-wide rules.

    Defaults: title 30-60 characters (what fits a desktop result), meta description 70-160
    characters, thin content below 200 visible words (CrawlSettings.thin_content_words), slow TTFB
    above 1000 ms, large page above 2 MiB of HTML. A body with fewer than `waf_stub_words` visible
    words on a 2xx answer "looks like a challenge" for the weak WAF signatures (see detect_waf).
    """

    title_min_chars: int = 30
    title_max_chars: int = 60
    meta_desc_min_chars: int = 70
    meta_desc_max_chars: int = 160
    thin_content_words: int = 200
    slow_ttfb_ms: float = 1000.0
    large_page_bytes: int = 2 * 1024 * 1024
    waf_stub_words: int = 150
    waf_block_statuses: frozenset[int] = WAF_BLOCK_STATUSES

    def __post_init__(self) -> None:
        if not 0 <= self.title_min_chars <= self.title_max_chars:
            raise ValueError("need 0 <= title_min_chars <= title_max_chars")
        if not 0 <= self.meta_desc_min_chars <= self.meta_desc_max_chars:
            raise ValueError("need 0 <= meta_desc_min_chars <= meta_desc_max_chars")
        if self.thin_content_words < 0 or self.waf_stub_words < 0:
            raise ValueError("word thresholds must be >= 0")
        if self.slow_ttfb_ms <= 0 or self.large_page_bytes <= 0:
            raise ValueError("slow_ttfb_ms and large_page_bytes must be > 0")
