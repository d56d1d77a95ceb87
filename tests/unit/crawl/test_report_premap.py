"""The report's inlink work done ahead while the crawl runs (`Reporter.premap`), and how the report resumes it."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from seolens_core.adapters._batch_part import encode_batch
from seolens_core.adapters.crawls import CrawlRecord, CrawlStatus
from seolens_core.crawl._inlinks import InlinkCounter, MemoryObjects
from seolens_core.crawl._report import Reporter, ReportServices
from seolens_core.settings import CrawlSettings

CRAWL = "c1"
HUB = "https://ex.test/hub"


class _Crawls:
    def __init__(self, record: CrawlRecord) -> None:
        self.record = record

    async def get(self, crawl_id: str) -> CrawlRecord:
        raise AssertionError("the work ahead is given the record the progress check read")


def _land(store: MemoryObjects, first: int, count: int) -> None:
    """Parts of pages `first`.. each linking to the hub page."""
    for i in range(first, first + count):
        rows = [{"source": f"https://ex.test/p{i}", "target": HUB, "internal": True}]
        store.objects[f"crawls/{CRAWL}/parts/{i:013d}-x.jsonl"] = encode_batch({"links": rows}) or b""


def _reporter(store: MemoryObjects, counters: dict[str, int], status: CrawlStatus) -> Reporter:
    settings = CrawlSettings(start_urls=("https://ex.test/",), max_pages=None)
    record = CrawlRecord(CRAWL, status, settings, "ex.test", "", 0.0, counters=counters)
    services = ReportServices(
        crawls=cast(Any, _Crawls(record)), urls=cast(Any, None), results=cast(Any, store), dead_letters=None
    )
    return Reporter(services)


def _premap_then_finish(discovered: int, finished: int) -> tuple[dict[str, Any], MemoryObjects]:
    store = MemoryObjects()
    _land(store, 0, 150)
    running = _reporter(store, {"n_discovered": discovered}, CrawlStatus.RUNNING)
    asyncio.run(running.premap(cast(_Crawls, running.s.crawls).record))
    _land(store, 150, 30)
    done = _reporter(store, {"n_fetched": finished}, CrawlStatus.RUNNING)
    record = cast(_Crawls, done.s.crawls).record
    cursor = asyncio.run(done._inlink_cursor(CRAWL, budget_s=None, record=record))
    return cursor, store


def test_the_report_goes_on_from_the_work_done_ahead() -> None:
    cursor, store = _premap_then_finish(discovered=200, finished=180)
    assert cursor["phase"] == "done" and cursor["shards"] == 1
    assert len(store.objects[f"crawls/{CRAWL}/inlinks/mapped/000000.txt"].split()) == 150  # read once, ahead
    counts = asyncio.run(InlinkCounter(store).counts(CRAWL, 1, [HUB]))
    assert counts == {HUB: 180}


def test_a_crawl_that_outgrew_the_shards_of_the_work_ahead_is_mapped_again() -> None:
    """Sharded by 200 URLs discovered (one shard), finished at 9,000 (four): counted again, exactly."""
    cursor, store = _premap_then_finish(discovered=200, finished=9_000)
    assert cursor["phase"] == "done" and cursor["shards"] == 4
    assert asyncio.run(InlinkCounter(store).counts(CRAWL, 4, [HUB])) == {HUB: 180}


def test_nothing_is_done_ahead_of_a_crawl_that_is_not_running() -> None:
    store = MemoryObjects()
    _land(store, 0, 150)
    cancelled = _reporter(store, {"n_discovered": 200}, CrawlStatus.CANCELLED)
    asyncio.run(cancelled.premap(cast(_Crawls, cancelled.s.crawls).record))
    assert not any("/inlinks/" in key for key in store.objects)
