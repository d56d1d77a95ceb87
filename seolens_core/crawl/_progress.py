"""Progress check for the monitor loop: exact drain detection, budgets, pause and cancel."""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from seolens_core.adapters.crawls import CrawlRecord, CrawlStatus, CrawlStore
from seolens_core.adapters.urls import JOURNAL_MARK, Journal, PendingUrl, UrlStore
from seolens_core.crawl._robots_gate import RobotsGate
from seolens_core.crawl._worker import part_time

_log = logging.getLogger(__name__)

SUSPENDED_FAILURES_TO_GIVE_UP = 3
"""A host whose robots.txt failed this many times in a row (and is still suspended) no longer keeps the crawl
running. The back-off is base * 2**(n-1), so that is about 3 x `robots_retry_base_s` after the first failure
(3 min at the 60 s default; 3 s with a 1 s base in tests) plus the fetch timeouts. Its URLs stay pending."""
PENDING_SAMPLE = 200
PENDING_FULL_SCAN = 100_000
"""Only when every host of the sample is given up are all pending URLs read, to see every pending host."""
ORPHAN_JOURNAL_S = 120.0
"""A batch journal still open this long after its flush, with nothing else of the crawl pending, is published
by the progress check. Its batch's records normally republish it when they come back; but a later finish of
one of its URLs (another copy of the message, e.g. a disallowed URL finished twice) overwrites the pointer
they follow, and then nothing ever would: the crawl never drained (seen in the crash e2e test). Publishing is
idempotent (rows deduplicated by the report, messages by the fetch side, counters applied with the close).
A marker whose body never landed is deleted: no URL points to it (`UrlStore.finish` writes both first)."""
PROGRESS_WAIT_FRACTION = 0.05
MAX_PROGRESS_WAIT_S = 30


def progress_wait_s(
    base_s: int, elapsed_s: float, budget_left_s: float | None = None, drain_s: float | None = None
) -> int:
    """Seconds until the next progress check: the crawl's `progress_poll_s`, growing to 5% of the crawl's age
    (at most 30 s, never below the base): each check is three Step Functions transitions, and a 25-minute crawl
    polled every second paid ~4,000 of them. A crawl with a time budget is checked when the budget ends; one
    expected to drain sooner (`drain_s`) is checked then (not before the base)."""
    wait = max(float(base_s), min(PROGRESS_WAIT_FRACTION * max(elapsed_s, 0.0), float(MAX_PROGRESS_WAIT_S)))
    if budget_left_s is not None:
        wait = min(wait, max(budget_left_s, 1.0))
    if drain_s is not None:
        wait = min(wait, max(drain_s, float(base_s)))
    return max(1, math.ceil(wait))


def expected_drain_s(
    pending: int, fetched: int, now: float, previous: Mapping[str, Any] | None
) -> float | None:
    """When the last `pending` URLs should be done at the fetch rate since the previous check (None without a
    usable previous check or progress since it). The rate since the last check, not the crawl's average: the
    tail of a crawl is often one slow, polite host, and the wait then stays at its grown length."""
    if not previous or pending <= 0:
        return None
    try:
        before = int(previous.get("counters", {}).get("n_fetched", 0))
        dt = now - float(previous.get("checked_at", 0))
    except (TypeError, ValueError, AttributeError):
        return None
    if not previous.get("checked_at") or dt <= 0 or fetched <= before:
        return None
    return pending / ((fetched - before) / dt)


def _fetched_since(previous: Mapping[str, Any] | None, fetched: int) -> bool:
    """Pages were fetched since the previous check (False without a usable one)."""
    try:
        return previous is not None and fetched > int(previous.get("counters", {}).get("n_fetched", 0))
    except (TypeError, ValueError, AttributeError):
        return False


@dataclass
class ProgressServices:
    crawls: CrawlStore
    urls: UrlStore
    robots: RobotsGate
    clock: Callable[[], float] = time.time
    publish_journal: Callable[[Journal], Awaitable[None]] | None = None
    """Publishes an orphaned batch journal (`DeadLetterDrain.publish`); None: orphans are left open."""
    premap: Callable[[CrawlRecord], Awaitable[None]] | None = None
    """Work done for the report while the crawl runs (`Reporter.premap`), after each check that says RUNNING;
    given the crawl's record as the check read it."""


def journal_age_s(key: str, now: float) -> float | None:
    """Seconds since the flush that wrote the journal marker `key` (named by its part, `part_id`)."""
    named_at = part_time(key[len(JOURNAL_MARK) :])
    return None if named_at is None else now - named_at


class ProgressChecker:
    """Drained means: no URL of the crawl is queued, in flight, delayed or suspended (no item of its partition
    carries `pending_crawl`), or every one left sits behind a host whose robots.txt stayed unreachable
    (those are reported as pending, never as lost)."""

    def __init__(self, services: ProgressServices) -> None:
        self.s = services

    async def check(self, crawl_id: str, previous: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """The crawl's state; `previous` is the last check's answer (the state machine passes it along). While
        the crawl runs, the check then does some of the report's work (`premap`): a failure there is logged and
        left to the report, which does whatever was not done."""
        record = await self.s.crawls.get(crawl_id)
        answer = await self._check(record, previous)
        if self.s.premap is not None and answer["state"] == "RUNNING" and not answer.get("settling"):
            try:
                await self.s.premap(record)
            except Exception:
                _log.exception("work ahead of the report failed (the report does it): crawl %s", crawl_id)
        return answer

    async def _check(self, record: CrawlRecord, previous: Mapping[str, Any] | None) -> dict[str, Any]:
        s = self.s
        crawl_id = record.crawl_id
        now = s.clock()
        settings = record.settings
        elapsed = now - record.started_epoch
        budget_left = None if settings.max_seconds is None else settings.max_seconds - elapsed
        poll = progress_wait_s(settings.progress_poll_s, elapsed, budget_left)
        out: dict[str, Any] = {
            "crawl_id": crawl_id,
            "wait_seconds": poll,
            "counters": record.counters,
            "checked_at": now,
        }
        if record.status is CrawlStatus.CANCELLED:
            if await self._settling(crawl_id, record, now):
                return {**out, "state": "RUNNING", "settling": True, "wait_seconds": settings.progress_poll_s}
            return {**out, "state": "CANCELLED"}
        if record.status is CrawlStatus.PAUSED:
            return {**out, "state": "PAUSED"}
        fetched = record.counters.get("n_fetched", 0)
        if (spent := record.budget_spent(now)) is not None:
            if record.status is not CrawlStatus.FINISHING:
                await s.crawls.set_status(
                    crawl_id, CrawlStatus.FINISHING, allowed_from=(CrawlStatus.RUNNING, CrawlStatus.QUEUED)
                )
            if await self._settling(crawl_id, record, now):
                return {**out, "state": "RUNNING", "settling": True, "wait_seconds": settings.progress_poll_s}
            return {**out, "state": "BUDGET_REACHED", "budget": "pages" if spent == "page budget" else "time"}
        if record.queued > 0 and _fetched_since(previous, fetched):
            # Running by the counters, and pages were fetched since the last check: no need to read the
            # URLs table. The counters can be off (a crashed flush), so it is read whenever they say nothing
            # is queued or nothing moved, and only that read ever calls the crawl drained. The count is known
            # whatever its size: the next check comes when the queue should be empty, if that is sooner.
            drain = expected_drain_s(record.queued, fetched, now, previous)
            out["wait_seconds"] = progress_wait_s(settings.progress_poll_s, elapsed, budget_left, drain)
            return {**out, "state": "RUNNING", "queued": record.queued}
        urls = record.counters.get("n_discovered", 0)
        pending, more = await s.urls.pending(crawl_id, limit=PENDING_SAMPLE, urls_hint=urls)
        if pending and not more and await self._publish_orphans(crawl_id, pending, now):
            pending, more = await s.urls.pending(crawl_id, limit=PENDING_SAMPLE, urls_hint=urls)
        if not pending:
            return {**out, "state": "DRAINED", "pending": 0}
        given_up: set[str] = set()
        if await self._all_given_up({p.host for p in pending}, given_up) and more:
            # Many URLs wait behind unreachable hosts: look at every pending host before calling it drained.
            pending, more = await s.urls.pending(crawl_id, limit=PENDING_FULL_SCAN, urls_hint=urls)
            if more or not await self._all_given_up({p.host for p in pending}, given_up):
                return {**out, "state": "RUNNING", "pending_sample": len(pending), "more_pending": more}
        if all(p.host in given_up for p in pending):
            return {
                **out,
                "state": "DRAINED",
                "pending": len(pending),
                "pending_hosts_suspended": sorted(given_up),
            }
        if not more:  # the last few: check again when they should be done
            drain = expected_drain_s(len(pending), fetched, now, previous)
            out["wait_seconds"] = progress_wait_s(settings.progress_poll_s, elapsed, budget_left, drain)
        return {**out, "state": "RUNNING", "pending_sample": len(pending), "more_pending": more}

    async def _settling(self, crawl_id: str, record: CrawlRecord, now: float) -> bool:
        """A stopping crawl's fetches still in flight (a live fetch lease) or batches still publishing (an open
        journal): its report waits for them, so that no page a worker fetched is missing from it (the inlink
        map reads the result parts once, in key order). Leases end, and journals are published or closed by
        `_publish_orphans`, so this ends. Past `PENDING_FULL_SCAN` pending URLs only those read are checked."""
        pending, _ = await self.s.urls.pending(
            crawl_id, limit=PENDING_FULL_SCAN, urls_hint=record.counters.get("n_discovered", 0)
        )
        if any(p.key.startswith(JOURNAL_MARK) for p in pending):
            await self._publish_orphans(crawl_id, [p for p in pending if p.key.startswith(JOURNAL_MARK)], now)
            return True
        return any(p.leased_until is not None and p.leased_until > now for p in pending)

    async def _publish_orphans(self, crawl_id: str, pending: list[PendingUrl], now: float) -> bool:
        """When only batch journals are pending and all are older than ORPHAN_JOURNAL_S, publish them (True)."""
        publish = self.s.publish_journal
        ages = [journal_age_s(p.key, now) if p.key.startswith(JOURNAL_MARK) else None for p in pending]
        if publish is None or any(age is None or age < ORPHAN_JOURNAL_S for age in ages):
            return False
        parts = [(crawl_id, p.key[len(JOURNAL_MARK) :]) for p in pending]
        published: set[tuple[str, str]] = set()
        for journal in await self.s.urls.unpublished(parts):
            await publish(journal)
            published.add((journal.crawl_id, journal.part))
        for crawl, part in parts:
            if (crawl, part) not in published:  # a marker without its body: its flush died in between
                await self.s.urls.drop_journal(crawl, part)
        return True

    async def _all_given_up(self, hosts: set[str], given_up: set[str]) -> bool:
        """True when every host is suspended by robots.txt failures and has been retried enough;
        adds the hosts found given up to `given_up` (so a second call does not ask twice)."""
        for host in sorted(hosts - given_up):
            if not host:
                return False
            decision = await self.s.robots.stored_decision(host)
            if decision is None or not decision.suspended:
                return False
            if decision.state.consecutive_failures < SUSPENDED_FAILURES_TO_GIVE_UP:
                return False
            given_up.add(host)
        return True
