"""A sitemap the seeder cannot fetch yet (robots.txt being retried, host paced) is kept for a later seed round,
never dropped; after SEED_TRIES rounds a declared sitemap gets a finding."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any, cast

from seolens_core.adapters.crawls import CrawlRecord, CrawlStatus
from seolens_core.crawl._ports import RobotsAnswer
from seolens_core.crawl._seed import SEED_TRIES, Seeder, SeedServices
from seolens_core.settings import CrawlSettings

SETTINGS = CrawlSettings(start_urls=("http://shop.example/",))
SITEMAP = "http://shop.example/sitemap.xml"


@dataclass
class FakeCrawls:
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

    async def put_part(self, crawl_id: str, kind: str, part: str, rows: list[dict[str, Any]]) -> None:
        self.parts.append((kind, rows))


def test_a_sitemap_not_fetchable_yet_is_retried_then_reported() -> None:
    robots, results = RobotsStillRetrying(), FakeResults()
    services = SeedServices(
        crawls=cast(Any, FakeCrawls()),
        urls=cast(Any, None),
        queue=cast(Any, None),
        results=cast(Any, results),
        robots=cast(Any, robots),
        pacing=cast(Any, None),
    )
    seeder = Seeder(services)
    cursor: dict[str, Any] | None = {"todo": [[SITEMAP, 0, False]], "seen": [], "findings": [], "read": 0}
    rounds = 0
    while cursor is not None:
        answer = asyncio.run(seeder.seed("c1", cursor))
        rounds += 1
        cursor = answer["cursor"]
        if cursor is not None:  # still listed, with one more try, and nothing reported yet
            assert cursor["todo"] == [[SITEMAP, 0, False, rounds]]
            assert cursor["findings"] == []
    assert rounds == SEED_TRIES and robots.asked == ["/sitemap.xml"] * SEED_TRIES
    [(kind, findings)] = results.parts
    assert kind == "seed"
    assert findings == [
        {"url": SITEMAP, "code": "ALERT_SITEMAP_UNREADABLE", "detail": "not fetched: robots.txt unavailable"}
    ]
