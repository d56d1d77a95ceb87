"""What a worker saw when a fetch completed, and how Retry-After reads (RFC 9110 section 10.2.3)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC
from email.utils import parsedate_to_datetime

ERROR_STATUSES = frozenset({429, 500, 502, 503, 504})
"""Statuses that count as errors in the window (network failures and WAF challenges count too)."""
RATE_LIMIT_STATUSES = frozenset({429, 503})
"""Statuses that act immediately: Retry-After block, or a back-off step when there is none."""


@dataclass(frozen=True, slots=True)
class Observation:
    """One completed request: status (None on a network failure), TTFB, raw Retry-After, WAF challenge."""

    status: int | None
    ttfb_ms: float | None = None
    network_error: bool = False
    retry_after: str | None = None
    waf: bool = False

    @property
    def is_error(self) -> bool:
        """Counts against the window's error rate E."""
        return self.network_error or self.waf or self.status in ERROR_STATUSES

    @property
    def is_distress(self) -> bool:
        """The host says "slow down" now: 429, 503 or a WAF challenge page."""
        return self.waf or self.status in RATE_LIMIT_STATUSES


def parse_retry_after(value: str | None, now: float) -> float | None:
    """Seconds to wait from `now`, from delay-seconds or an HTTP-date; None when absent or unreadable.

    A date in the past gives 0. Per RFC 9110 delay-seconds is 1*DIGIT, so "1.5" or "-3" are
    unreadable; an HTTP-date without a zone (asctime form) is UTC.
    """
    if value is None:
        return None
    text = value.strip()
    if not text:
        return None
    if text.isascii() and text.isdigit():
        return float(int(text))
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    wait = when.timestamp() - now
    if not math.isfinite(wait):
        return None
    return max(wait, 0.0)
