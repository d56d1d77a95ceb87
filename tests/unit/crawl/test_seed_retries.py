"""A sitemap the seeder cannot fetch yet (robots.txt being retried, host paced) is kept for a later seed round,
never dropped; after SEED_TRIES rounds a declared sitemap gets a finding. With a page budget, listed URLs are
held back (in S3, never in the cursor) while the queue can fill it, and nothing is claimed once it is reached."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any, cast

from seolens_core.adapters._json import dump_lines
from seolens_core.adapters.crawls import CrawlRecord, CrawlStatus
from seolens_core.adapters.urls import Claimed
from seolens_core.crawl._findings import ALERT_SITEMAP_NOT_READ
from seolens_core.crawl._ports import RobotsAnswer
from seolens_core.crawl._seed import SEED_TRIES, Seeder, SeedServices
from seolens_core.settings import CrawlSettings

SETTINGS = CrawlSettings(start_urls=("http://shop.example/",))
SITEMAP = "http://shop.example/sitemap.xml"


@dataclass
class FakeCrawls:
    async def fetch_settings(self, record: CrawlRecord) -> CrawlSettings:
        return record.settings

    async def get(self, crawl_id: str) -> CrawlRecord:
        return CrawlRecord(crawl_id, CrawlStatus.RUNNING, SETTINGS, "shop.example", "now", 0.0)


@dataclass
class RobotsStillRetrying:
    asked: list[str] = field(default_factory=list)

    async def check(self, origin: str, path: str, settings: Any, fetcher: Any, now: float) -> RobotsAnswer:
        self.asked.append(path)
        return RobotsAnswer(allowed=False, wait_until=now + 600, suspended=True)


@dataclass
class FakeResults:
    parts: list[tuple[str, list[dict[str, Any]]]] = field(default_factory=list)
    stored: dict[str, bytes] = field(default_factory=dict)

    async def put_part(self, crawl_id: str, kind: str, part: str, rows: list[dict[str, Any]]) -> None:
        self.parts.append((kind, rows))

    async def put_object(self, key: str, body: bytes, content_type: str = "application/json") -> None:
        self.stored[key] = body

    async def get_file(self, key: str) -> bytes:
        return self.stored[key]

    def cursor(self, ref: dict[str, Any]) -> dict[str, Any]:
        """The cursor a state machine's reference points to (kept in S3, not in the state)."""
        assert set(ref) == {"key", "read", "todo"} and len(json.dumps(ref)) < 300
        return cast(dict[str, Any], json.loads(self.stored[ref["key"]]))


class NothingKept:
    """The pacing port as the seeder sees it when no fetch gets a slot: nothing to settle."""

    async def settle(self) -> None:
        return None


def test_a_sitemap_not_fetchable_yet_is_retried_then_reported() -> None:
    robots, results = RobotsStillRetrying(), FakeResults()
    services = SeedServices(
        crawls=cast(Any, FakeCrawls()),
        urls=cast(Any, None),
        queue=cast(Any, None),
        results=cast(Any, results),
        robots=cast(Any, robots),
        pacing=cast(Any, NothingKept()),
    )
    seeder = Seeder(services)
    cursor: dict[str, Any] | None = {"todo": [[SITEMAP, 0, False]], "seen": [], "findings": [], "read": 0}
    rounds = 0
    while cursor is not None:
        answer = asyncio.run(seeder.seed("c1", cursor))
        rounds += 1
        cursor = answer["cursor"]
        if cursor is not None:  # still listed, with one more try, and nothing reported yet
            assert results.cursor(cursor)["todo"] == [[SITEMAP, 0, False, rounds]]
            assert results.cursor(cursor)["findings"] == []
    assert rounds == SEED_TRIES and robots.asked == ["/sitemap.xml"] * SEED_TRIES
    [(kind, findings)] = results.parts
    assert kind == "seed"
    assert findings == [
        {"url": SITEMAP, "code": "ALERT_SITEMAP_UNREADABLE", "detail": "not fetched: robots.txt unavailable"}
    ]


@dataclass
class BudgetedCrawl:
    """A crawl with a 100-page budget whose queue counter follows the seeder's claims."""

    counters: dict[str, int] = field(default_factory=lambda: {"n_fetched": 0, "qs": 0})

    async def fetch_settings(self, record: CrawlRecord) -> CrawlSettings:
        return record.settings

    async def get(self, crawl_id: str) -> CrawlRecord:
        settings = CrawlSettings(start_urls=("http://shop.example/",), max_pages=100, progress_poll_s=2)
        return CrawlRecord(
            crawl_id, CrawlStatus.RUNNING, settings, "shop.example", "now", 0.0, dict(self.counters)
        )

    async def add_counters(self, crawl_id: str, deltas: dict[str, int]) -> None:
        for name, value in deltas.items():
            self.counters[name] = self.counters.get(name, 0) + value


@dataclass
class ClaimAll:
    claimed: list[str] = field(default_factory=list)

    async def claim(self, messages: list[Any], hosts: list[str], now: float, consistent: bool = False) -> Any:
        self.claimed.extend(m.url for m in messages)
        return Claimed(list(messages), list(messages))


@dataclass
class Sent:
    async def send(self, outgoing: list[Any]) -> None:
        return None


def test_a_page_budget_holds_listed_urls_back_in_s3_and_stops_claiming_once_it_is_reached() -> None:
    listed = [{"url": f"http://shop.example/p/{n}", "sitemap": SITEMAP} for n in range(1, 1201)]
    crawl, urls, results = BudgetedCrawl(), ClaimAll(), FakeResults(stored={"rows-1": dump_lines(listed)})
    services = SeedServices(
        crawls=cast(Any, crawl),
        urls=cast(Any, urls),
        queue=cast(Any, Sent()),
        results=cast(Any, results),
        robots=cast(Any, None),
        pacing=cast(Any, NothingKept()),
        clock=lambda: 10.0,
    )
    other = "http://shop.example/sitemap-2.xml"
    cursor: dict[str, Any] = {
        "todo": [[other, 1, False], ["http://shop.example/sitemap_index.xml", 0, True]],
        "seen": [SITEMAP],
        "findings": [],
        "read": 1,
        "held": {"key": "rows-1", "offset": 0},
    }
    # Claims until the queue holds the 100 pages left plus as many again (the lead), then it holds.
    answer = asyncio.run(Seeder(services).seed("c1", cursor))
    assert len(urls.claimed) == 200 == len(set(urls.claimed)) == crawl.counters["qs"]
    assert (answer["seed_done"], answer["wait_seconds"]) == (False, 2)
    assert results.cursor(answer["cursor"])["held"]["offset"] == 200  # a key and an offset, no rows

    # Fetched pages made room: the next chunk; then the budget is reached: nothing more is claimed, and the
    # unread declared sitemap is reported (not the guess).
    crawl.counters.update(n_fetched=60, qs=50)  # 40 left, a lead of 50: room for 40 more
    answer = asyncio.run(Seeder(services).seed("c1", answer["cursor"]))
    assert len(urls.claimed) == 240 and results.cursor(answer["cursor"])["held"]["offset"] == 240
    crawl.counters["n_fetched"] = 100
    answer = asyncio.run(Seeder(services).seed("c1", answer["cursor"]))
    assert len(urls.claimed) == 240
    assert (answer["seed_done"], answer["wait_seconds"], answer["cursor"]) == (True, 0, None)
    [(kind, findings)] = results.parts
    assert kind == "seed"
    assert findings == [{"url": other, "code": ALERT_SITEMAP_NOT_READ, "detail": "crawl ended (page budget)"}]
