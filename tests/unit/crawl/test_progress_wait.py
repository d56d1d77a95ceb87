"""The monitor loop's wait between progress checks: each check is three state transitions, so it grows."""

from __future__ import annotations

import pytest

from seolens_core.crawl._progress import MAX_PROGRESS_WAIT_S, progress_wait_s


def test_a_young_crawl_is_checked_at_its_base_interval() -> None:
    assert progress_wait_s(1, 0.0) == 1
    assert progress_wait_s(1, 19.0) == 1
    assert progress_wait_s(10, 100.0) == 10


def test_the_wait_grows_with_the_crawls_age_up_to_the_cap() -> None:
    assert progress_wait_s(1, 200.0) == 10
    assert progress_wait_s(1, 599.0) == 30
    assert progress_wait_s(1, 86_400.0) == MAX_PROGRESS_WAIT_S


def test_a_base_above_the_cap_is_kept() -> None:
    assert progress_wait_s(120, 86_400.0) == 120


def test_a_time_budget_is_checked_when_it_ends() -> None:
    assert progress_wait_s(1, 1_000.0, budget_left_s=4.2) == 5
    assert progress_wait_s(1, 1_000.0, budget_left_s=-3.0) == 1


@pytest.mark.parametrize("seconds", [600, 1_500, 7_200])
def test_transitions_of_a_long_crawl_are_a_fraction_of_one_check_a_second(seconds: int) -> None:
    t, checks = 0.0, 0
    while t < seconds:
        t += progress_wait_s(1, t)
        checks += 1
    assert checks < seconds / 5
