"""The inlink/depth shard count grows with the URLs the crawl finished, so one step's share stays small and a
small crawl does not pay for shards it does not need."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from seolens_core.crawl._report import PAGES_PER_INLINK_SHARD, _urls_finished, inlink_shards


@pytest.mark.parametrize(
    ("urls", "shards"),
    [
        (0, 1),
        (47, 1),
        (4_000, 1),
        (4_001, 2),
        (64_001, 32),
        (100_000, 32),
        (1_000_000, 256),
        (10_000_000, 1024),
    ],
)
def test_shards_for_the_crawl_size(urls: int, shards: int) -> None:
    assert inlink_shards(1, urls) == shards
    if shards < 1024:
        assert urls / shards <= PAGES_PER_INLINK_SHARD


def test_the_configured_minimum_is_kept() -> None:
    assert inlink_shards(64, 1_000) == 64
    assert inlink_shards(0, 0) == 1


def test_the_size_is_the_urls_finished_once_each() -> None:
    """A 20,000-page crawl's counters: discovered URLs are counted again by their outcome, deliveries and
    page-budget units are not URLs (counted, the units doubled its shards and the report's S3 calls)."""
    counters = {
        "n_discovered": 20_001,
        "n_fetched": 20_000,
        "n_disallowed": 1,
        "n_deferred": 7,
        "n_reserved": 20_000,
        "q0": 0,
    }
    record = SimpleNamespace(counters=counters)
    assert _urls_finished(record) == 20_001  # type: ignore[arg-type]
    assert inlink_shards(1, _urls_finished(record)) == 8  # type: ignore[arg-type]
