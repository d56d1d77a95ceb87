"""Seeding: start URLs at depth 0, then sitemaps (robots.txt Sitemap: lines, then probes) in bounded batches.

Each call reads at most `max_documents` sitemap documents and returns a cursor, so the state machine loops
the task and no single invocation runs long. Sitemap documents go through robots and pacing like pages.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from seolens_core.adapters.crawls import CrawlStatus, CrawlStore
from seolens_core.adapters.frontier_queue import FrontierQueue, Outgoing
from seolens_core.adapters.results import ResultsStore
from seolens_core.adapters.urls import UrlStore
from seolens_core.crawl._links import CrawlScope
from seolens_core.crawl._pacing import PacedFetch, paced_fetch
from seolens_core.crawl._ports import PacingPort, RobotsPort
from seolens_core.crawl._worker import default_fetcher
from seolens_core.fetch import Fetcher, FetchResult
from seolens_core.frontier import FrontierMessage
from seolens_core.settings import CrawlSettings
from seolens_core.sitemaps import SitemapParser, SitemapWalk, candidate_sitemaps
from seolens_core.urls import url_key_hex

SITEMAP_SEED_DEPTH = 1
SITEMAP_MAX_BYTES = 50 * 1024 * 1024
CLAIM_CHUNK = 500
SEED_TRIES = 5
"""Seed rounds a sitemap that cannot be fetched yet (host paced, robots.txt retried) is tried in."""


@dataclass
class SeedServices:
    crawls: CrawlStore
    urls: UrlStore
    queue: FrontierQueue
    results: ResultsStore
    robots: RobotsPort
    pacing: PacingPort
    clock: Callable[[], float] = time.time


class Seeder:
    def __init__(self, services: SeedServices, max_documents: int = 5) -> None:
        self.s = services
        self._max_documents = max_documents

    async def seed(self, crawl_id: str, cursor: dict[str, Any] | None) -> dict[str, Any]:
        s = self.s
        record = await s.crawls.get(crawl_id)
        settings = record.settings
        scope = CrawlScope.from_settings(settings, s.clock())
        sitemap_fetch = settings.fetch.model_copy(update={"max_body_bytes": SITEMAP_MAX_BYTES})
        fetcher = default_fetcher(settings.model_copy(update={"fetch": sitemap_fetch}), scope.address_policy)
        try:
            if cursor is None:
                if record.status is CrawlStatus.QUEUED:
                    await s.crawls.set_status(
                        crawl_id, CrawlStatus.RUNNING, allowed_from=(CrawlStatus.QUEUED,)
                    )
                starts = [
                    FrontierMessage(
                        crawl_id=crawl_id,
                        url=u.url,
                        key=url_key_hex(u.url),
                        depth=0,
                        meta=dict(settings.start_metadata),
                    )
                    for u in scope.start_urls
                ]
                await self._enqueue(starts, [u.origin for u in scope.start_urls])
                todo: list[list[Any]] = []
                for origin in dict.fromkeys(u.origin for u in scope.start_urls):
                    declared = await s.robots.sitemaps(origin, settings, fetcher, s.clock())
                    todo.extend([url, 0, url not in declared] for url in candidate_sitemaps(origin, declared))
                cursor = {"todo": todo, "seen": [], "findings": [], "read": 0}
            walk = SitemapWalk(max_depth=3, seen=cursor["seen"])
            processed = 0
            while cursor["todo"] and processed < self._max_documents:
                url, level, probe, *rest = cursor["todo"].pop(0)
                tries = int(rest[0]) if rest else 0
                if tries == 0:  # a retried sitemap was accepted by the walk on its first turn
                    decision = walk.should_fetch(url, level)
                    if not decision:
                        cursor["findings"].append({"url": url, "code": decision.finding})
                        continue
                processed += 1
                busy = await self._read_sitemap(crawl_id, url, level, probe, cursor, scope, settings, fetcher)
                if busy is not None:
                    # Not fetched yet (host paced, robots.txt being retried): never dropped. It goes back on
                    # the list for the next seed round; after SEED_TRIES a declared one gets a finding.
                    if tries + 1 < SEED_TRIES:
                        cursor["todo"].append([url, level, probe, tries + 1])
                        break
                    if not probe:  # an unanswered guess is no finding (the host's trouble is reported)
                        cursor["findings"].append(
                            {"url": url, "code": "ALERT_SITEMAP_UNREADABLE", "detail": f"not fetched: {busy}"}
                        )
            cursor["seen"] = sorted(walk.seen)
            cursor["read"] += processed
        finally:
            await fetcher.aclose()
        done = not cursor["todo"]
        if done:
            await s.results.put_part(crawl_id, "seed", "findings", cursor["findings"])
        return {"crawl_id": crawl_id, "cursor": None if done else cursor, "seed_done": done}

    async def _enqueue(self, messages: list[FrontierMessage], hosts: list[str]) -> int:
        claimed = await self.s.urls.claim(messages, hosts, self.s.clock(), consistent=True)
        await self.s.queue.send([Outgoing(m) for m in claimed.send])
        if claimed.new:
            deltas = {"n_discovered": len(claimed.new)}
            for m in claimed.new:
                deltas[m.queue_counter] = deltas.get(m.queue_counter, 0) + 1
            await self.s.crawls.add_counters(messages[0].crawl_id, deltas)
        return len(claimed.new)

    async def _polite_get(
        self, crawl_id: str, url: str, origin: str, path: str, settings: CrawlSettings, fetcher: Fetcher
    ) -> FetchResult | str | _NotNow:
        """The answer, a reason it will not be fetched (str), or a reason it cannot be fetched now."""
        s = self.s
        for _ in range(30):
            now = s.clock()
            answer = await s.robots.check(origin, path, settings, fetcher, now)
            if answer.wait_until is not None:
                if answer.suspended or answer.wait_until - now > 30:
                    return _NotNow("robots.txt unavailable")
                await _sleep(answer.wait_until - now)
                continue
            if not answer.allowed:
                return answer.reason or "disallowed by robots.txt"
            paced = await paced_fetch(
                s.pacing,
                fetcher,
                url,
                origin,
                settings,
                answer.crawl_delay_s,
                clock=s.clock,
                sleep=_sleep,
                crawl_id=crawl_id,
            )
            if not isinstance(paced, PacedFetch):
                if paced.until - now > 30:
                    return _NotNow(f"host paced ({paced.reason})")
                await _sleep(paced.until - now)
                continue
            await s.pacing.release(paced.ticket, paced.result, False, s.clock())
            return paced.result
        return _NotNow("host busy")

    async def _read_sitemap(
        self,
        crawl_id: str,
        url: str,
        level: int,
        probe: bool,
        cursor: dict[str, Any],
        scope: CrawlScope,
        settings: CrawlSettings,
        fetcher: Fetcher,
    ) -> str | None:
        """Read one sitemap and enqueue its URLs; returns why it could not be fetched yet (try again later)."""
        target = scope.normalize(url)
        if target is None:
            cursor["findings"].append({"url": url, "code": "ALERT_SITEMAP_INVALID_URL"})
            return None
        got = await self._polite_get(
            crawl_id, target.url, target.origin, target.path_query, settings, fetcher
        )
        if isinstance(got, _NotNow):
            return got.reason
        if isinstance(got, str):
            if not probe:
                cursor["findings"].append({"url": url, "code": "ALERT_SITEMAP_UNREADABLE", "detail": got})
            return None
        if got.status != 200 or got.error is not None:
            if not probe:
                cursor["findings"].append(
                    {"url": url, "code": "ALERT_SITEMAP_UNREADABLE", "detail": f"status {got.status}"}
                )
            return None
        parser = SitemapParser()
        body = got.body
        entries = []
        for start in range(0, len(body), 65536):
            entries.extend(parser.feed(body[start : start + 65536]))
        result = parser.close()
        entries.extend(result.tail)
        for finding in result.findings:
            cursor["findings"].append({"url": url, "code": finding.code, "detail": finding.detail})
        pages: list[FrontierMessage] = []
        hosts: list[str] = []
        rows: list[dict[str, Any]] = []
        outside = 0
        claimer = url_key_hex(
            target.url
        )  # this sitemap claims its URLs: a retried seed re-sends only its own
        listed: set[str] = set()
        for entry in entries:
            if entry.kind == "sitemap":
                cursor["todo"].append([entry.loc, level + 1, False])
                continue
            loc = scope.normalize(entry.loc)
            if loc is not None and settings.max_depth < SITEMAP_SEED_DEPTH:
                rows.append({"url": loc.url, "lastmod": entry.lastmod, "sitemap": target.url})
                continue
            if loc is None or not scope.boundary.is_internal(loc.host_port):
                outside += 1
                continue
            rows.append({"url": loc.url, "lastmod": entry.lastmod, "sitemap": target.url})
            if loc.url in listed:
                continue
            listed.add(loc.url)
            pages.append(
                FrontierMessage(
                    crawl_id=crawl_id,
                    url=loc.url,
                    key=url_key_hex(loc.url),
                    depth=SITEMAP_SEED_DEPTH,
                    sitemap=True,
                    lastmod=entry.lastmod,
                    parent=claimer,
                )
            )
            hosts.append(loc.origin)
        if outside:
            cursor["findings"].append(
                {"url": url, "code": "ALERT_SITEMAP_URLS_OUTSIDE_SCOPE", "detail": str(outside)}
            )
        for start in range(0, len(pages), CLAIM_CHUNK):
            await self._enqueue(pages[start : start + CLAIM_CHUNK], hosts[start : start + CLAIM_CHUNK])
        await self.s.results.put_part(crawl_id, "sitemap", uuid.uuid4().hex, rows)
        return None


@dataclass(frozen=True, slots=True)
class _NotNow:
    """A sitemap that could not be fetched yet (host paced or blocked, robots.txt being retried)."""

    reason: str


async def _sleep(seconds: float) -> None:
    import asyncio

    await asyncio.sleep(max(0.0, min(seconds, 30.0)))
