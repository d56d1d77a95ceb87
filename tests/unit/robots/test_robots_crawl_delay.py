"""Crawl-delay policy (refuse or cap, never less polite), floor changes, and settings validation."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from seolens_core.robots import (
    ALERT_ROBOTS_CRAWL_DELAY_TOO_LONG,
    CrawlDelayVerdict,
    FloorChange,
    RobotsRules,
    RobotsSettings,
    crawl_delay_policy,
    effective_delay,
    next_floor,
    validate_settings,
)

DEFAULT = RobotsSettings()
FORCED = RobotsSettings(force_crawl_delay_cap=True)


@pytest.mark.parametrize(
    ("delay", "settings", "expected"),
    [
        (None, DEFAULT, CrawlDelayVerdict(None, 0.0, None, False)),
        (0.0, DEFAULT, CrawlDelayVerdict(0.0, 0.0, None, False)),
        (0.5, DEFAULT, CrawlDelayVerdict(0.5, 0.5, None, False)),
        (30.0, DEFAULT, CrawlDelayVerdict(30.0, 30.0, None, False)),
        (30.5, DEFAULT, CrawlDelayVerdict(30.5, 30.5, None, True, ALERT_ROBOTS_CRAWL_DELAY_TOO_LONG)),
        (3600.0, DEFAULT, CrawlDelayVerdict(3600.0, 3600.0, None, True, ALERT_ROBOTS_CRAWL_DELAY_TOO_LONG)),
        # Forced: the local wait is capped, the pacing floor keeps the full request.
        (30.0, FORCED, CrawlDelayVerdict(30.0, 30.0, None, False)),
        (120.0, FORCED, CrawlDelayVerdict(120.0, 120.0, 30.0, False)),
        (45.5, replace(FORCED, max_crawl_delay_s=10.0), CrawlDelayVerdict(45.5, 45.5, 10.0, False)),
        (float("nan"), DEFAULT, CrawlDelayVerdict(None, 0.0, None, False)),
        (-1.0, DEFAULT, CrawlDelayVerdict(None, 0.0, None, False)),
    ],
)
def test_crawl_delay_policy(
    delay: float | None, settings: RobotsSettings, expected: CrawlDelayVerdict
) -> None:
    assert crawl_delay_policy(delay, settings) == expected


def test_pacing_floor_is_never_below_the_request() -> None:
    for delay in (0.001, 0.5, 1.2345, 29.9999, 31.0, 86_400.0):
        for settings in (DEFAULT, FORCED):
            verdict = crawl_delay_policy(delay, settings)
            assert verdict.pacing_floor_s == delay
            assert verdict.pacing_floor_ms >= delay * 1000


def test_pacing_floor_ms_rounds_up() -> None:
    assert crawl_delay_policy(1.2341, DEFAULT).pacing_floor_ms == 1235
    assert crawl_delay_policy(None, DEFAULT).pacing_floor_ms == 0


def test_delay_comes_from_the_applied_group_of_the_rules() -> None:
    rules = RobotsRules.parse("User-agent: Googlebot\nCrawl-delay: 45\n\nUser-agent: *\nCrawl-delay: 1\n")
    assert crawl_delay_policy(rules.crawl_delay, DEFAULT).refused
    assert crawl_delay_policy(rules.crawl_delay, FORCED).local_wait_cap_s == 30.0


@pytest.mark.parametrize(
    ("previous", "new", "expected"),
    [
        (0.0, 5.0, FloorChange(5.0, True)),
        (5.0, 10.0, FloorChange(10.0, True)),
        (10.0, 10.0, FloorChange(10.0, False)),
        # A lower or removed delay lowers the floor; the current delay is not touched at once.
        (10.0, 2.0, FloorChange(2.0, False)),
        (10.0, None, FloorChange(0.0, False)),
        (10.0, float("nan"), FloorChange(0.0, False)),
    ],
)
def test_next_floor(previous: float, new: float | None, expected: FloorChange) -> None:
    assert next_floor(previous, new) == expected


def test_lowered_floor_does_not_speed_up_a_running_crawl() -> None:
    current = effective_delay(2.0, 10.0)
    assert current == 10.0
    change = next_floor(10.0, 1.0)
    # Nothing lifts or lowers `current` now; only AIMD recovery walks it down, not below the new floor.
    assert not change.raise_current_now
    assert effective_delay(current, change.floor_s) == 10.0
    assert effective_delay(0.5, change.floor_s) == 1.0


def test_default_settings_are_valid() -> None:
    assert validate_settings(DEFAULT) is DEFAULT
    assert validate_settings(FORCED) is FORCED
    assert validate_settings(RobotsSettings(robots_5xx_allow_after_days=30)).robots_5xx_allow_after_days == 30


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"cache_ttl_s": 86_401.0}, "24 h"),
        ({"cache_ttl_s": 0.0}, "cache_ttl_s must be > 0"),
        ({"cache_ttl_s": float("inf")}, "finite"),
        ({"min_cache_ttl_s": -1.0}, "min_cache_ttl_s must be > 0"),
        ({"min_cache_ttl_s": 7200.0, "cache_ttl_s": 3600.0}, "must not exceed cache_ttl_s"),
        ({"max_redirects": 4}, "max_redirects"),
        ({"max_redirects": 5.0}, "max_redirects must be an int"),
        ({"good_copy_max_age_s": -5.0}, "good_copy_max_age_s"),
        ({"retry_base_s": 0.0}, "retry_base_s"),
        ({"retry_base_s": 600.0, "retry_max_s": 60.0}, "retry_base_s must not exceed"),
        ({"retry_max_s": 3 * 86_400.0}, "retry_max_s"),
        ({"max_crawl_delay_s": 0.0, "force_crawl_delay_cap": True}, "max_crawl_delay_s must be > 0"),
        ({"max_crawl_delay_s": -1.0}, "max_crawl_delay_s"),
        ({"max_crawl_delay_s": float("nan")}, "finite"),
        (
            {"max_crawl_delay_s": 200_000.0, "force_crawl_delay_cap": True},
            "max_crawl_delay_s must be at most",
        ),
        ({"robots_5xx_allow_after_days": 1.0}, ">= 30"),
        ({"robots_5xx_allow_after_days": float("inf")}, "finite"),
        ({"max_bytes": 1000}, "500 KiB"),
        ({"force_crawl_delay_cap": "yes"}, "bool"),
        ({"disallow_on_401_403": 1}, "bool"),
    ],
)
def test_unsafe_settings_fail_fast(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        validate_settings(replace(DEFAULT, **changes))
