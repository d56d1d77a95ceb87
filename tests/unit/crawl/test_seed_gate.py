"""The seeding gate: when a crawl with a budget claims its sitemap URLs, holds them back, or stops."""

from __future__ import annotations

from dataclasses import replace

import pytest

from seolens_core.adapters.crawls import CrawlRecord, CrawlStatus
from seolens_core.crawl._seed import HOLD_STALL_ROUNDS, SEED_AHEAD, SEED_AHEAD_MIN, SeedGate, seed_gate
from seolens_core.settings import CrawlSettings

START = 1_000.0


def record(
    status: CrawlStatus = CrawlStatus.RUNNING,
    max_pages: int | None = 30,
    max_seconds: float | None = None,
    **counters: int,
) -> CrawlRecord:
    settings = CrawlSettings(
        start_urls=("https://shop.example/",), max_pages=max_pages, max_seconds=max_seconds
    )
    return CrawlRecord("c1", status, settings, "shop.example", "", START, counters=dict(counters))


def test_claims_while_the_queue_has_fewer_than_the_budget_left_plus_the_lead() -> None:
    # 20 pages left, a lead of 50 (the least): room for one more URL, then it holds.
    assert seed_gate(record(n_fetched=10, qs=20 + SEED_AHEAD_MIN - 1), START + 1) == SeedGate(room=1)
    assert seed_gate(record(n_fetched=10, qs=5), START + 1) == SeedGate(room=20 + SEED_AHEAD_MIN - 5)


def test_holds_once_the_queue_can_fill_the_budget_and_the_lead() -> None:
    assert seed_gate(record(n_fetched=10, qs=SEED_AHEAD_MIN, q1=20), START + 1) == SeedGate(hold=True)


@pytest.mark.parametrize(("left", "lead"), [(20, SEED_AHEAD_MIN), (300, 300), (5_000, SEED_AHEAD)])
def test_the_lead_is_what_the_budget_has_left_between_its_bounds(left: int, lead: int) -> None:
    crawl = record(max_pages=10_000, n_fetched=10_000 - left)
    assert not seed_gate(replace(crawl, counters={**crawl.counters, "qs": left + lead - 1}), START + 1).hold
    assert seed_gate(replace(crawl, counters={**crawl.counters, "qs": left + lead}), START + 1).hold


def test_claims_anyway_after_rounds_without_a_fetch() -> None:
    """The queued count is a hint (a crashed flush leaves it high): a held crawl never waits on it for ever."""
    stuck = record(n_fetched=0, qs=10 * SEED_AHEAD)
    assert seed_gate(stuck, START + 1, stalled_rounds=HOLD_STALL_ROUNDS - 1).hold
    assert seed_gate(stuck, START + 1, stalled_rounds=HOLD_STALL_ROUNDS) == SeedGate()


def test_without_a_page_budget_it_never_holds() -> None:
    assert seed_gate(record(max_pages=None, qs=10**6), START + 1) == SeedGate()


@pytest.mark.parametrize(
    ("crawl", "now", "reason"),
    [
        (record(n_fetched=30), START + 1, "page budget"),
        (record(n_fetched=31, qs=0), START + 1, "page budget"),
        (record(max_pages=None, max_seconds=60), START + 60, "time budget"),
        (record(status=CrawlStatus.CANCELLED), START + 1, "cancelled"),
        (record(status=CrawlStatus.FINISHING), START + 1, "finishing"),
        (record(status=CrawlStatus.FAILED), START + 1, "failed"),
    ],
)
def test_stops_when_nothing_it_claims_would_be_fetched(crawl: CrawlRecord, now: float, reason: str) -> None:
    assert seed_gate(crawl, now) == SeedGate(stopped=reason)


def test_a_paused_crawl_still_claims() -> None:
    """Pause stops fetching, not discovery: its URLs wait queued for the resume."""
    assert seed_gate(record(status=CrawlStatus.PAUSED, n_fetched=0), START + 1) == SeedGate(room=30 + 50)
