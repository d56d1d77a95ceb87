"""Robots settings with their product defaults, and the start-up check that they can be enforced safely."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ._rules import DEFAULT_MAX_BYTES

DAY_S = 86_400.0


@dataclass(frozen=True, slots=True)
class RobotsSettings:
    """How robots.txt fetch outcomes and Crawl-delay are turned into decisions (seconds throughout)."""

    cache_ttl_s: float = DAY_S
    """Longest time a good robots.txt is used before a refetch (RFC 9309 section 2.4: at most 24 h)."""
    min_cache_ttl_s: float = 60.0
    """Floor under `Cache-Control: max-age`, so `max-age=0` does not mean one robots fetch per page."""
    max_redirects: int = 5
    """Redirect hops followed to reach robots.txt (RFC 9309 section 2.3.1.2: at least five)."""
    disallow_on_401_403: bool = False
    """401/403 on robots.txt: False = unavailable, allow all (RFC); True = disallow all."""
    good_copy_max_age_s: float = 30 * DAY_S
    """During an outage a good copy fetched at most this long ago keeps applying."""
    robots_5xx_allow_after_days: float | None = None
    """After this many days of continuous 5xx with no good copy, allow all; None (default) = never."""
    retry_base_s: float = 60.0
    """First robots retry after an unreachable answer; doubled per consecutive failure."""
    retry_max_s: float = 6 * 3600.0
    """Cap of the robots retry back-off (an outage is retried at least this often)."""
    max_crawl_delay_s: float = 30.0
    """Longest robots Crawl-delay accepted; a longer one is refused unless `force_crawl_delay_cap`."""
    force_crawl_delay_cap: bool = False
    """Crawl a host with a too-long Crawl-delay anyway: the local wait is capped, pacing keeps it all."""
    max_bytes: int = DEFAULT_MAX_BYTES
    """robots.txt bytes parsed; the rest is ignored at a line boundary (RFC 9309: at least 500 KiB)."""


DEFAULT_ROBOTS_SETTINGS = RobotsSettings()


def validate_settings(settings: RobotsSettings) -> RobotsSettings:
    """Return `settings` unchanged, or raise ValueError naming the first value that cannot be enforced."""
    floats = {
        "cache_ttl_s": settings.cache_ttl_s,
        "min_cache_ttl_s": settings.min_cache_ttl_s,
        "good_copy_max_age_s": settings.good_copy_max_age_s,
        "retry_base_s": settings.retry_base_s,
        "retry_max_s": settings.retry_max_s,
        "max_crawl_delay_s": settings.max_crawl_delay_s,
    }
    for name, value in floats.items():
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
            raise ValueError(f"robots setting {name} must be a finite number of seconds, got {value!r}")
        if value <= 0:
            raise ValueError(f"robots setting {name} must be > 0, got {value!r}")
    if settings.cache_ttl_s > DAY_S:
        raise ValueError(f"cache_ttl_s={settings.cache_ttl_s} exceeds 24 h: RFC 9309 forbids longer caching")
    if settings.min_cache_ttl_s > settings.cache_ttl_s:
        raise ValueError("min_cache_ttl_s must not exceed cache_ttl_s")
    if settings.retry_base_s > settings.retry_max_s:
        raise ValueError("retry_base_s must not exceed retry_max_s")
    if settings.retry_max_s > DAY_S:
        raise ValueError(
            "retry_max_s must be at most 24 h, or an outage would hide a recovered host too long"
        )
    for name, flag in (
        ("disallow_on_401_403", settings.disallow_on_401_403),
        ("force_crawl_delay_cap", settings.force_crawl_delay_cap),
    ):
        if not isinstance(flag, bool):
            raise ValueError(f"robots setting {name} must be a bool, got {flag!r}")
    if isinstance(settings.max_redirects, bool) or not isinstance(settings.max_redirects, int):
        raise ValueError(f"max_redirects must be an int, got {settings.max_redirects!r}")
    if not 5 <= settings.max_redirects <= 20:
        raise ValueError("max_redirects must be in 5..20 (RFC 9309 asks for at least five hops)")
    if isinstance(settings.max_bytes, bool) or not isinstance(settings.max_bytes, int):
        raise ValueError(f"max_bytes must be an int, got {settings.max_bytes!r}")
    if settings.max_bytes < DEFAULT_MAX_BYTES:
        raise ValueError(f"max_bytes must be >= {DEFAULT_MAX_BYTES} (RFC 9309: parse at least 500 KiB)")
    days = settings.robots_5xx_allow_after_days
    if days is not None:
        if isinstance(days, bool) or not isinstance(days, int | float) or not math.isfinite(days):
            raise ValueError(f"robots_5xx_allow_after_days must be a finite number or None, got {days!r}")
        if days < 30:
            raise ValueError(
                "robots_5xx_allow_after_days must be >= 30: a shorter outage must not turn into allow-all"
            )
    if settings.force_crawl_delay_cap and settings.max_crawl_delay_s > DAY_S:
        raise ValueError("max_crawl_delay_s must be at most 24 h when force_crawl_delay_cap is set")
    return settings
