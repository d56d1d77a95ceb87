"""The inlink/depth shard count grows with the crawl's page budget, so one step's share stays small."""

from __future__ import annotations

import pytest

from seolens_core.crawl._report import PAGES_PER_INLINK_SHARD, inlink_shards


@pytest.mark.parametrize(
    ("max_pages", "shards"),
    [
        (None, 16),
        (10_000, 16),
        (64_000, 16),
        (64_001, 32),
        (100_000, 32),
        (1_000_000, 256),
        (10_000_000, 1024),
    ],
)
def test_shards_for_the_page_budget(max_pages: int | None, shards: int) -> None:
    assert inlink_shards(16, max_pages) == shards
    if max_pages is not None and shards < 1024:
        assert max_pages / shards <= PAGES_PER_INLINK_SHARD


def test_the_configured_minimum_is_kept() -> None:
    assert inlink_shards(64, 1_000) == 64
    assert inlink_shards(0, None) == 1
