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

from seolens_core.adapters._json import load_lines
from seolens_core.adapters.crawls import CrawlRecord, CrawlStatus, CrawlStore
from seolens_core.adapters.frontier_queue import FrontierQueue, Outgoing
from seolens_core.adapters.results import ResultsStore
from seolens_core.adapters.urls import UrlStore
from seolens_core.audit import sitemap_quality
from seolens_core.crawl._findings import ALERT_SITEMAP_NOT_READ
from seolens_core.crawl._links import CrawlScope
from seolens_core.crawl._pacing import PacedFetch, paced_fetch
from seolens_core.crawl._ports import PacingPort, RobotsPort
from seolens_core.crawl._progress import progress_wait_s
from seolens_core.crawl._seed_cursor import SeedCursors
from seolens_core.crawl._worker import default_fetcher
from seolens_core.fetch import Fetcher, FetchResult
from seolens_core.frontier import FrontierMessage
from seolens_core.settings import CrawlSettings
from seolens_core.sitemaps import SitemapParser, SitemapWalk, candidate_sitemaps
from seolens_core.urls import NormalizedURL, url_key_hex

SITEMAP_SEED_DEPTH = 1
SITEMAP_MAX_BYTES = 50 * 1024 * 1024
CLAIM_CHUNK = 500
SEED_TRIES = 5
"""Seed rounds a sitemap that cannot be fetched yet (host paced, robots.txt retried) is tried in."""
SEED_AHEAD = 500
"""With a page budget, sitemap URLs queued beyond the pages the budget has left (as many as it has left when
that is fewer, at least `SEED_AHEAD_MIN`): enough that the fetchers never wait for the seeding, few enough
that a 30-page audit of a 20,000-URL site does not claim and queue them all."""
SEED_AHEAD_MIN = 50
HOLD_STALL_ROUNDS = 3
"""Hold rounds without a page fetched after which a chunk is claimed anyway: the queued count is the crawl's
counters, a hint that a crashed flush can leave high, and a held crawl must never wait on it for ever."""


@dataclass(frozen=True, slots=True)
class SeedGate:
    """What the seeding may do next: claim (at most `room` URLs, None: no limit), hold the rest back for now,
    or stop (`stopped` says why)."""

    hold: bool = False
    stopped: str | None = None
    room: int | None = None


def seed_gate(record: CrawlRecord, now: float, stalled_rounds: int = 0) -> SeedGate:
    """Stop once the crawl is ending or over a budget (nothing more it claims would be fetched); with a page
    budget, hold while the queue already holds `SEED_AHEAD` more URLs than the budget has pages left."""
    settings = record.settings
    if record.status.terminal or record.status is CrawlStatus.FINISHING:
        return SeedGate(stopped=record.status.value.lower())
    if (spent := record.budget_spent(now)) is not None:
        return SeedGate(stopped=spent)
    if settings.max_pages is None or stalled_rounds >= HOLD_STALL_ROUNDS:
        return SeedGate()
    left = settings.max_pages - record.counters.get("n_fetched", 0)
    room = left + min(SEED_AHEAD, max(SEED_AHEAD_MIN, left)) - record.queued
    return SeedGate(hold=True) if room <= 0 else SeedGate(room=room)


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
        fetching = (await s.crawls.fetch_settings(record)).model_copy(update={"fetch": sitemap_fetch})
        fetcher = default_fetcher(fetching, scope.address_policy)
        cursors = SeedCursors(s.results)
        try:
            if cursor is not None:
                cursor = await cursors.load(cursor)
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
                probes = https_probes(scope)
                starts += [
                    FrontierMessage(crawl_id=crawl_id, url=u.url, key=url_key_hex(u.url), depth=0, probe=True)
                    for u in probes
                ]
                await self._enqueue(starts, [u.origin for u in (*scope.start_urls, *probes)])
                todo: list[list[Any]] = []
                for origin in dict.fromkeys(u.origin for u in scope.start_urls):
                    declared = await s.robots.sitemaps(origin, settings, fetcher, s.clock())
                    todo.extend([url, 0, url not in declared] for url in candidate_sitemaps(origin, declared))
                cursor = {"todo": todo, "seen": [], "findings": [], "read": 0}
            walk = SitemapWalk(max_depth=3, seen=cursor["seen"])
            processed = 0
            wait = 0
            if cursor.get("held"):
                wait = await self._claim_listed(crawl_id, cursor, scope)
            while (
                not wait and not cursor.get("stopped") and cursor["todo"] and processed < self._max_documents
            ):
                url, level, probe, *rest = cursor["todo"].pop(0)
                tries = int(rest[0]) if rest else 0
                if tries == 0:  # a retried sitemap was accepted by the walk on its first turn
                    decision = walk.should_fetch(url, level)
                    if not decision:
                        cursor["findings"].append({"url": url, "code": decision.finding})
                        continue
                processed += 1
                busy = await self._read_sitemap(crawl_id, url, level, probe, cursor, scope, settings, fetcher)
                if cursor.get("held"):  # read: its URLs are claimed as far as the gate lets (the rest held)
                    wait = await self._claim_listed(crawl_id, cursor, scope)
                    continue
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
            await s.pacing.settle()
            await fetcher.aclose()
        if cursor.get("stopped"):  # the crawl ended first: what was never read is reported, not dropped
            for url, _, probe, *_ in cursor["todo"]:
                if probe:  # an unread guess is no finding (like one that was not there)
                    continue
                cursor["findings"].append(
                    {
                        "url": url,
                        "code": ALERT_SITEMAP_NOT_READ,
                        "detail": f"crawl ended ({cursor['stopped']})",
                    }
                )
            cursor["todo"] = []
        done = not cursor["todo"] and not cursor.get("held")
        if done:
            await s.results.put_part(crawl_id, "seed", "findings", cursor["findings"])
        return {
            "crawl_id": crawl_id,
            "cursor": None if done else await cursors.save(crawl_id, cursor),
            "seed_done": done,
            "wait_seconds": wait if not done else 0,
        }

    async def _claim_listed(self, crawl_id: str, cursor: dict[str, Any], scope: CrawlScope) -> int:
        """Claim the held sitemap's URLs chunk by chunk while the gate allows; seconds to wait (0: all
        claimed, or the crawl stopped: `cursor["stopped"]`). The held URLs are read back from the sitemap's
        rows part, so the cursor (Step Functions state, 256 KB) carries only a key and an offset."""
        s = self.s
        held = cursor["held"]
        rows = held.pop("rows", None)
        if rows is None:
            rows = load_lines(await s.results.get_file(held["key"]))
        pages, hosts = _listed(crawl_id, rows, scope)
        while held["offset"] < len(pages):
            record = await s.crawls.get(crawl_id)
            fetched = int(record.counters.get("n_fetched", 0))
            stalled = held.get("stalled", 0) if held.get("fetched") == fetched else 0
            gate = seed_gate(record, s.clock(), stalled)
            if gate.stopped is not None:
                cursor["stopped"] = gate.stopped
                break
            if gate.hold:
                paused = record.status is CrawlStatus.PAUSED  # nothing is fetched: no sign of stale counters
                held.update(fetched=fetched, stalled=stalled + (not paused))
                elapsed = s.clock() - record.started_epoch
                return progress_wait_s(record.settings.progress_poll_s, elapsed)
            start = held["offset"]
            end = start + min(CLAIM_CHUNK, gate.room or CLAIM_CHUNK)
            await self._enqueue(pages[start:end], hosts[start:end])
            held.update(offset=end, fetched=fetched, stalled=0)
        del cursor["held"]
        return 0

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
        for code, detail in sitemap_quality(target.url, entries, self.s.clock()):
            cursor["findings"].append({"url": url, "code": code, "detail": detail})
        rows: list[dict[str, Any]] = []
        outside = 0
        for entry in entries:
            if entry.kind == "sitemap":
                cursor["todo"].append([entry.loc, level + 1, False])
                continue
            loc = scope.normalize(entry.loc)
            if loc is None or not scope.boundary.is_internal(loc.host_port):
                outside += 1
                continue
            row: dict[str, Any] = {"url": loc.url, "lastmod": entry.lastmod, "sitemap": target.url}
            alternates = [(lang, scope.normalize(href, loc)) for lang, href in entry.alternates]
            if alternates:
                row["hreflang"] = [[lang, alt.url] for lang, alt in alternates if alt is not None]
            rows.append(row)
        if outside:
            cursor["findings"].append(
                {"url": url, "code": "ALERT_SITEMAP_URLS_OUTSIDE_SCOPE", "detail": str(outside)}
            )
        # The rows first (the report's list of sitemap URLs, whether claimed or not), then the claims.
        key = await self.s.results.put_part(crawl_id, "sitemap", uuid.uuid4().hex, rows)
        if key is not None and settings.max_depth >= SITEMAP_SEED_DEPTH:
            cursor["held"] = {"key": key, "offset": 0, "rows": rows}
        return None


def https_probes(scope: CrawlScope) -> list[NormalizedURL]:
    """The http:// twin of each https start URL on the default port: fetched once, so the audit can tell
    whether the site redirects http to https (ALERT_HTTPS_REDIRECT_MISSING). A start URL already on http,
    or on another port (a TLS port answers no plain http), has none."""
    starts = {u.url for u in scope.start_urls}
    twins: list[NormalizedURL] = []
    for start in scope.start_urls:
        if start.scheme != "https" or start.port is not None:
            continue
        twin = scope.normalize("http" + start.url[len("https") :])
        if twin is not None and twin.url not in starts and twin not in twins:
            twins.append(twin)
    return twins


def _listed(
    crawl_id: str, rows: list[dict[str, Any]], scope: CrawlScope
) -> tuple[list[FrontierMessage], list[str]]:
    """The frontier messages of a sitemap's rows (first of each URL, in order) and their hosts."""
    pages: list[FrontierMessage] = []
    hosts: list[str] = []
    listed: set[str] = set()
    for row in rows:
        loc = scope.normalize(row["url"])
        if loc is None or loc.url in listed:
            continue
        listed.add(loc.url)
        pages.append(
            FrontierMessage(
                crawl_id=crawl_id,
                url=loc.url,
                key=url_key_hex(loc.url),
                depth=SITEMAP_SEED_DEPTH,
                sitemap=True,
                lastmod=row.get("lastmod"),
                parent=url_key_hex(row["sitemap"]),  # a retried seed re-sends only its own sitemap's URLs
            )
        )
        hosts.append(loc.origin)
    return pages, hosts


@dataclass(frozen=True, slots=True)
class _NotNow:
    """A sitemap that could not be fetched yet (host paced or blocked, robots.txt being retried)."""

    reason: str


async def _sleep(seconds: float) -> None:
    import asyncio

    await asyncio.sleep(max(0.0, min(seconds, 30.0)))
