"""The monitor loop's wait between progress checks: each check is three state transitions, so it grows."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from seolens_core.adapters.crawls import CrawlRecord, CrawlStatus
from seolens_core.adapters.urls import PendingUrl
from seolens_core.crawl._progress import (
    MAX_PROGRESS_WAIT_S,
    ProgressChecker,
    ProgressServices,
    progress_wait_s,
)
from seolens_core.settings import CrawlSettings


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


class _Crawl:
    def __init__(self, settings: CrawlSettings, started: float) -> None:
        self.record = CrawlRecord("c1", CrawlStatus.RUNNING, settings, "shop.example", "", started)

    async def get(self, crawl_id: str) -> CrawlRecord:
        return self.record


class _OnePending:
    async def pending(self, crawl_id: str, limit: int = 1000) -> tuple[list[PendingUrl], bool]:
        return [PendingUrl("http://shop.example/a", "k", 1, "http://shop.example")], False


class _NoRobotsTrouble:
    async def stored_decision(self, host: str) -> None:
        return None


@pytest.mark.parametrize(
    ("max_seconds", "expected_wait"),
    [(None, 20), (403.0, 3)],  # 5% of 400 s; or the 3 s left of the time budget
)
def test_the_monitor_is_told_the_grown_wait(max_seconds: float | None, expected_wait: int) -> None:
    """What the state machine's Wait state reads: a running crawl 400 s old polled every second."""
    settings = CrawlSettings(start_urls=("http://shop.example/",), progress_poll_s=1, max_seconds=max_seconds)
    services = ProgressServices(
        crawls=cast(Any, _Crawl(settings, started=1_000.0)),
        urls=cast(Any, _OnePending()),
        robots=cast(Any, _NoRobotsTrouble()),
        clock=lambda: 1_400.0,
    )
    out = asyncio.run(ProgressChecker(services).check("c1"))
    assert out["state"] == "RUNNING"
    assert out["wait_seconds"] == expected_wait
