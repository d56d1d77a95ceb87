"""The crawl item stays under one write unit: it is rewritten by every flush's counter update."""

from __future__ import annotations

import asyncio
from typing import Any

from seolens_core.adapters._stored_units import write_units
from seolens_core.adapters.crawls import CrawlStore, stored_settings
from seolens_core.settings import CrawlSettings


class _Table:
    def __init__(self) -> None:
        self.items: dict[str, dict[str, Any]] = {}

    async def put_item(self, *, TableName: str, Item: dict[str, Any], **_: Any) -> None:
        self.items[Item["crawl_id"]["S"]] = dict(Item)

    async def get_item(self, *, TableName: str, Key: dict[str, Any], **_: Any) -> dict[str, Any]:
        item = self.items.get(Key["crawl_id"]["S"])
        return {"Item": item} if item else {}


def test_settings_are_stored_compressed_and_read_back_either_way() -> None:
    table = _Table()
    store = CrawlStore(table, "crawls")
    settings = CrawlSettings(
        start_urls=("https://www.example-shop.com/category/shoes?page=1",), user_agent="SEOLens/2.0"
    )
    asyncio.run(store.create("c" * 16, settings, "https://www.example-shop.com:443", 1.0))
    item = table.items["c" * 16]
    assert "B" in item["settings"] and stored_settings(item) == settings.to_storage()
    assert asyncio.run(store.get("c" * 16)).settings == settings
    counters = {f"n_{name}": {"N": "123456"} for name in ("fetched", "discovered", "deferred", "retried")}
    counters |= {f"q{d}": {"N": "-1234"} for d in range(11)} | {"qs": {"N": "0"}}
    counters |= {
        f"n_{n}": {"N": "9999"} for n in ("duplicates", "disallowed", "not_crawled", "checked", "reserved")
    }
    assert write_units({**item, **counters, "status": {"S": "FINISHING"}}) == 1

    table.items["old"] = {**item, "crawl_id": {"S": "old"}, "settings": {"S": settings.to_storage()}}
    assert asyncio.run(store.get("old")).settings == settings  # an item written before compression
    assert write_units(table.items["old"]) == 2
