"""Spider-trap guards: each fires on its trap, stays quiet on look-alike real URLs, and is configurable."""

from __future__ import annotations

import calendar

import pytest

from seolens_core.urls import (
    FINDING_CODES,
    NormalizedURL,
    TrapConfig,
    TrapReason,
    TrapVerdict,
    check_traps,
    normalize,
)

CONFIG = TrapConfig(reference_year=2025)


def url(href: str) -> NormalizedURL:
    result = normalize(href)
    assert isinstance(result, NormalizedURL), result
    return result


def verdict(href: str, config: TrapConfig = CONFIG) -> TrapVerdict | None:
    return check_traps(url(href), config)


@pytest.mark.parametrize(
    ("href", "reason"),
    [
        ("http://e.com/search?a=1&b=2&c=3", TrapReason.TOO_MANY_QUERY_PARAMS),
        ("http://e.com/f?color=red&color=blue&color=green", TrapReason.TOO_MANY_QUERY_PARAMS),
        ("http://e.com/" + "/".join(f"d{i}" for i in range(33)), TrapReason.PATH_TOO_DEEP),
        ("http://e.com/a/b/a/b/a/b/", TrapReason.REPEATED_SEGMENTS),
        ("http://e.com/x/a/b/c/a/b/c/a/b/c/y", TrapReason.REPEATED_SEGMENTS),
        ("http://e.com/docs/docs/docs/", TrapReason.REPEATED_SEGMENTS),
        ("http://e.com/a/1/a/2/a/3/a/4/a/5", TrapReason.REPEATED_SEGMENTS),  # 'a' occurs 5 times
        ("http://e.com/list?page=1001", TrapReason.PAGINATION),
        ("http://e.com/list?PG=937000", TrapReason.PAGINATION),
        ("http://e.com/list?page=99999999999999999999999999", TrapReason.PAGINATION),
        ("http://e.com/blog/page/1001/", TrapReason.PAGINATION),
        ("http://e.com/events/2031/05/", TrapReason.CALENDAR),
        ("http://e.com/events/1970/01/15", TrapReason.CALENDAR),
        ("http://e.com/events/2040-11/", TrapReason.CALENDAR),
        ("http://e.com/cal?month=2099-05", TrapReason.CALENDAR),
        ("http://e.com/cal?date=2031%2F05%2F17", TrapReason.CALENDAR),
        ("http://e.com/cal?year=2035", TrapReason.CALENDAR),
    ],
)
def test_traps_fire(href: str, reason: TrapReason) -> None:
    result = verdict(href)
    assert result is not None
    assert result.reason is reason
    assert result.code == FINDING_CODES[reason]
    assert result.detail


@pytest.mark.parametrize(
    "href",
    [
        "http://e.com/",
        "http://e.com/search?a=1&b=2",  # exactly the limit
        "http://e.com/search?a=1&utm_source=x&sort=price&b=2",  # stripped parameters do not count
        "http://e.com/a/b/a/b/",  # twice is not a loop
        "http://e.com/2024/01/01/",  # "01" twice, not three times in a row
        "http://e.com/a/1/a/2/a/3/a/4",  # 'a' occurs 4 times: at the limit
        "http://e.com/" + "/".join(f"d{i}" for i in range(32)),
        "http://e.com/list?page=1000",
        "http://e.com/list?page=two",
        "http://e.com/blog/page/12/",
        "http://e.com/product/page/99999-x",  # not a number
        "http://e.com/events/2025/05/",
        "http://e.com/events/2027/12/31",  # reference_year + 2
        "http://e.com/archive/1995/03/",  # reference_year - 30
        "http://e.com/item/9999",  # a bare 4-digit id is not a date
        "http://e.com/item/9999/55",  # not followed by a month
        "http://e.com/cal?month=2025-05",
        "http://e.com/p?id=2099",  # 'id' is not a year parameter
        "http://e.com/cal?month=2099-13",  # not a month
    ],
)
def test_traps_stay_quiet(href: str) -> None:
    assert verdict(href) is None


def test_pruning_depends_on_the_limit() -> None:
    href = "http://e.com/s?a=1&b=2&c=3"
    assert verdict(href, TrapConfig(max_query_params=3)) is None
    assert verdict(href, TrapConfig(max_query_params=None)) is None
    zero = verdict("http://e.com/s?a=1", TrapConfig(max_query_params=0))
    assert zero is not None and zero.code == "ALERT_TRAP_TOO_MANY_PARAMS"
    assert verdict("http://e.com/s", TrapConfig(max_query_params=0)) is None


def test_calendar_guard_is_off_without_a_reference_year() -> None:
    assert verdict("http://e.com/events/2999/05/", TrapConfig()) is None


def test_calendar_window_is_configurable() -> None:
    narrow = TrapConfig(reference_year=2025, calendar_years_ahead=0, calendar_years_back=1)
    assert verdict("http://e.com/events/2026/01/", narrow) is not None
    assert verdict("http://e.com/events/2023/12/", narrow) is not None
    assert verdict("http://e.com/events/2024/01/", narrow) is None


def test_trap_config_at_takes_the_utc_year_of_now() -> None:
    now = calendar.timegm((2025, 12, 31, 23, 59, 59, 0, 0, 0))
    config = TrapConfig.at(now, max_query_params=5)
    assert (config.reference_year, config.max_query_params) == (2025, 5)
    assert TrapConfig.at(now + 1).reference_year == 2026


def test_pagination_and_repeat_limits_are_configurable() -> None:
    assert verdict("http://e.com/l?page=1001", TrapConfig(max_page=None)) is None
    assert verdict("http://e.com/l?page=51", TrapConfig(max_page=50)) is not None
    assert verdict("http://e.com/l?pagina=5000", TrapConfig(page_params=frozenset({"Pagina"}))) is not None
    assert verdict("http://e.com/a/b/a/b/", TrapConfig(sequence_repeats=2)) is not None
    assert verdict("http://e.com/a/b/a/b/a/b/", TrapConfig(sequence_repeats=4)) is None
    assert verdict("http://e.com/x/a/1/a/2/a", TrapConfig(max_segment_occurrences=2)) is not None


def test_the_cheapest_guard_reports_first() -> None:
    result = verdict("http://e.com/2099/01/a/a/a?page=5000&b=1&c=2")
    assert result is not None and result.reason is TrapReason.TOO_MANY_QUERY_PARAMS
    result = verdict("http://e.com/2099/01/page/5000/a/a/a")
    assert result is not None and result.reason is TrapReason.REPEATED_SEGMENTS


@pytest.mark.parametrize(
    "kwargs",
    [{"sequence_repeats": 1}, {"max_query_params": -1}, {"max_page": -5}, {"calendar_years_ahead": -1}],
)
def test_trap_config_validates(kwargs: dict[str, int]) -> None:
    with pytest.raises(ValueError):
        TrapConfig(**kwargs)  # type: ignore[arg-type]


def test_a_calendar_trap_stops_at_the_guard() -> None:
    """Follow a 'next month' link forever: the guard cuts the walk a bounded number of steps ahead."""
    year, month, followed = 2025, 1, 0
    while check_traps(url(f"http://e.com/cal/{year}/{month:02d}/"), CONFIG) is None:
        followed += 1
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
        assert followed < 1000
    assert (year, month) == (2028, 1)
    assert followed == 36
