"""PageWorker: what the fetch worker does with one SQS batch, independent of Lambda and of AWS.

Per record: crawl status -> duplicate check -> robots -> pacing slot -> fetch -> parse.
Per batch: one flush claims the discovered links, writes result rows to S3, sends new and deferred messages,
marks URLs done and adds counters.
"""

from __future__ import annotations

import asyncio
import collections
import functools
import random
import time
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Collection, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from seolens_core.adapters._gather import CallGroup, SingleFlight, all_or_cancel, all_settled
from seolens_core.adapters.crawls import PAGES_RESERVED, CrawlNotFound, CrawlRecord, CrawlStatus, CrawlStore
from seolens_core.adapters.frontier_queue import FrontierQueue, Outgoing, SendGroup
from seolens_core.adapters.results import ResultsStore
from seolens_core.adapters.urls import DONE, FetchClaim, Journal, UrlStore
from seolens_core.audit import detect_waf
from seolens_core.crawl._commit import BatchCommit, Contribution
from seolens_core.crawl._link_columns import decode_links, encode_links
from seolens_core.crawl._links import CrawlScope, LinkPlan, plan_redirect
from seolens_core.crawl._pacing import PacedFetch, Unclaimed, paced_fetch
from seolens_core.crawl._pages import error_row, page_row, skipped_row
from seolens_core.crawl._ports import PacingPort, RobotsPort
from seolens_core.fetch import AddressPolicy, Credentials, CredentialScope, Fetcher, FetchResult
from seolens_core.frontier import FrontierMessage
from seolens_core.politeness import WindowReport
from seolens_core.settings import CrawlSettings
from seolens_core.urls import NormalizedURL, normalize

CRAWL_CACHE_S = 2.0
PAUSE_RECHECK_S = 15
MAX_TRIES = 3
BFS_HOLD_S = 3.0
BFS_HOLD_MAX_S = 15.0
BFS_HOLD_BUDGET_S = 60.0
FETCH_LEASE_MARGIN_S = 60.0
CLAIM_WINDOW_S = 0.003
BUDGET_RECHECK_S = 2.0
"""A URL that found the page budget all reserved by fetches in flight comes back after this long, doubling
(at most `BUDGET_RECHECK_MAX_S`) each time it finds it so again."""
BUDGET_RECHECK_MAX_S = 15.0
BUDGET_BLOCK_SHARE = 16
"""A batch reserves at most this share of the pages its crawl's budget has left: one write a batch far from
the budget, one a page near it, and never most of what is left idle in one batch waiting for its slots."""
UNIT_GRANTED, UNIT_SPENT, UNIT_IN_FLIGHT = "granted", "spent", "in_flight"
MAX_IN_FLIGHT = 10
FLUSH_RESERVE_S = 5.0
RETRY_STATUSES = frozenset({429, 500, 502, 503, 504})
NOT_BEFORE_SLACK_S = 2.0
"""A message back this much or less before its `not_before` is handled (a pacing return waits locally)."""


def bfs_hold_s(holds: int) -> float | None:
    """How long a URL deeper than the breadth-first gate allows waits before it is looked at again, after
    `holds` earlier holds (None: its holds are used up, it is fetched now).

    3 s, doubling, at most 15 s a hold and about a minute in all: the minute of order that twenty 3 s holds
    gave, in six re-sends (each hold is a re-sent message: SQS and visited-set work for no page)."""
    waited = sum(min(BFS_HOLD_S * 2**i, BFS_HOLD_MAX_S) for i in range(holds))
    if waited >= BFS_HOLD_BUDGET_S:
        return None
    return float(min(BFS_HOLD_S * 2**holds, BFS_HOLD_MAX_S))


@dataclass
class _CrawlContext:
    record: CrawlRecord
    scope: CrawlScope
    fetcher: Fetcher
    loaded_at: float


@dataclass
class WorkerServices:
    """Everything the worker talks to; built once per container by the composition root."""

    crawls: CrawlStore
    urls: UrlStore
    queue: FrontierQueue
    results: ResultsStore
    robots: RobotsPort
    pacing: PacingPort
    clock: Callable[[], float] = time.time
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
    rng: random.Random = field(default_factory=random.Random)
    fetcher_factory: Callable[[CrawlSettings, AddressPolicy], Fetcher] | None = None
    max_in_flight: int = MAX_IN_FLIGHT
    """Records of a batch between their robots check and their slot's release at once: bounds a container's
    memory (bodies in flight) and CPU (parses) whatever the batch size; the others wait their turn."""


def default_fetcher(settings: CrawlSettings, policy: AddressPolicy) -> Fetcher:
    f = settings.fetch
    return Fetcher(
        user_agent=settings.user_agent_header,
        policy=policy,
        connect_timeout_s=f.connect_timeout_s,
        read_timeout_s=f.read_timeout_s,
        total_timeout_s=f.total_timeout_s,
        max_body_bytes=f.max_body_bytes,
        http2=f.http2,
        credentials=Credentials(
            settings.secret_headers(),
            CredentialScope.for_start_urls(settings.start_urls, settings.include_subdomains),
        ),
    )


class PageWorker:
    """Long-lived per container: caches crawl records, fetchers and scopes across batches."""

    def __init__(self, services: WorkerServices) -> None:
        self.s = services
        self._crawls: dict[str, _CrawlContext] = {}
        self._frontier_paused: tuple[float, bool] = (0.0, False)
        self._loading: SingleFlight[str, _CrawlContext] = SingleFlight()
        self._closed_windows: list[tuple[str, WindowReport]] = []
        self.window_verdicts: Counter[str] = (
            Counter()
        )  # closed AIMD windows seen here, by verdict (for metrics)

    def take_closed_windows(self) -> list[tuple[str, WindowReport]]:
        """The AIMD windows (origin, report) this container closed or saw since the last call."""
        taken, self._closed_windows = self._closed_windows, []
        return taken

    async def crawl_context(self, crawl_id: str) -> _CrawlContext:
        now = self.s.clock()
        ctx = self._crawls.get(crawl_id)
        if ctx is not None and now - ctx.loaded_at < CRAWL_CACHE_S:
            return ctx
        # One read per stale crawl however many records of the batch ask at once.
        return await self._loading.run(crawl_id, lambda: self._load(crawl_id, now))

    async def _load(self, crawl_id: str, now: float) -> _CrawlContext:
        """Crawl record and operator switch in one call (both are cached for CRAWL_CACHE_S)."""
        ctx = self._crawls.get(crawl_id)
        record, paused = await self.s.crawls.get_with_switch(crawl_id)
        self._frontier_paused = (now, paused)
        if ctx is not None and ctx.record.settings == record.settings:
            ctx.record, ctx.loaded_at = record, now
            return ctx
        scope = CrawlScope.from_settings(record.settings, now)
        factory = self.s.fetcher_factory or default_fetcher
        fetching = await self.s.crawls.fetch_settings(record)  # its secrets opened for the fetcher only
        ctx = _CrawlContext(record, scope, factory(fetching, scope.address_policy), now)
        self._crawls[crawl_id] = ctx
        return ctx

    async def frontier_paused(self) -> bool:
        now = self.s.clock()
        checked, value = self._frontier_paused
        if now - checked > CRAWL_CACHE_S:
            value = await self.s.crawls.frontier_paused()
            self._frontier_paused = (now, value)
        return value

    def batch(self, records: Sequence[tuple[str, str]], ends_at: float | None = None) -> BatchRun:
        """A run over one SQS batch: (message id, body) of every record, so duplicates are checked at once.
        `ends_at` (clock time): when the invocation is killed; records that could not finish by then go back."""
        return BatchRun(self, records, ends_at)

    async def flush(
        self,
        contributions: Sequence[Contribution],
        journal: str | None = None,
        leased: Collection[tuple[str, str]] = (),
    ) -> None:
        """Write one batch: first a journal of everything the batch publishes with the URL items it finished
        (done; the URLs in `leased` were leased naming `journal` and need no write of their own), then the
        result parts and messages, then the counters with the journal's close (one transaction). A crash
        after the first write is repaired by whichever delivery finds the journal open (`BatchRun`)."""
        part = part_id(self.s.clock())
        by_crawl_pages: dict[str, list[dict[str, Any]]] = {}
        by_crawl_links: dict[str, list[dict[str, Any]]] = {}
        counters: dict[str, dict[str, int]] = {}
        outgoing: list[Outgoing] = []
        finished: list[tuple[FrontierMessage, str, str]] = []
        republish: dict[tuple[str, str], Journal] = {}
        for c in contributions:
            for j in c.republish:
                republish.setdefault((j.crawl_id, j.part), j)
            for row in c.pages:
                by_crawl_pages.setdefault(row["crawl_id"], []).append(row)
            for row in c.links:
                by_crawl_links.setdefault(row["crawl_id"], []).append(row)
            outgoing.extend(c.outgoing)
            finished.extend(c.finished)
            if c.crawl_id:
                bucket = counters.setdefault(c.crawl_id, {})
                for k, v in c.counters.items():
                    bucket[k] = bucket.get(k, 0) + v
                for m, _, _ in c.finished:  # a finished URL leaves its depth's queue
                    bucket[m.queue_counter] = bucket.get(m.queue_counter, 0) - 1
        await self._claim_discovered(contributions, outgoing, counters)
        if journal is not None:
            # A record that failed after its lease contributes nothing: its URL must not become done with
            # this journal, so it goes back to `queued` for the retried record.
            leased = set(leased)
            stray = leased - {(m.crawl_id, m.key) for m, _, _ in finished}
            await all_or_cancel(*(self.s.urls.release_lease(*ident, journal) for ident in sorted(stray)))
            leased -= stray
        # Copies without `crawl_id`, made once for the journal and the result part (neither changes them).
        pages = {cid: _strip_internal(rows) for cid, rows in by_crawl_pages.items()}
        links = {cid: _strip_internal(rows) for cid, rows in by_crawl_links.items()}
        journals = _journals(journal or part, finished, pages, links, outgoing, counters)
        now = self.s.clock()
        journaled = await self.s.urls.finish(
            [f for f in finished if f[0].crawl_id in journals], now, list(journals.values()), leased
        )
        # An earlier delivery's flush that crashed after its first write: its parts go out with this one's.
        replay_journals(list(republish.values()), pages, links, outgoing)
        timeline = self.s.pacing.drain_timeline()
        self.window_verdicts.update(w.verdict.value for windows in timeline.values() for w in windows)
        self._closed_windows.extend((origin, w) for origin, windows in timeline.items() for w in windows)
        sections: dict[str, dict[str, list[dict[str, Any]]]] = {}
        for crawl_id, rows in pages.items():
            sections.setdefault(crawl_id, {})["pages"] = rows
        for crawl_id, rows in links.items():
            sections.setdefault(crawl_id, {})["links"] = rows
        for crawl_id, rows in _timeline_rows(timeline, finished).items():
            sections.setdefault(crawl_id, {})["pacing"] = rows
        writes: list[Awaitable[Any]] = [
            self.s.results.put_batch(crawl_id, part, kinds) for crawl_id, kinds in sections.items()
        ]
        if outgoing:
            writes.append(self.s.queue.send(outgoing))
        await all_or_cancel(*writes)
        rest = [f for f in finished if f[0].crawl_id not in journaled]
        if rest:  # no journal (nothing fetched, or too big): finished only now that all is published
            await self.s.urls.finish(rest, self.s.clock())
        closes: list[Awaitable[bool]] = []
        for cid in sorted(set(counters) | journaled):
            once = self.s.urls.journal_close(cid, journals[cid].part) if cid in journaled else None
            closes.append(self.s.crawls.add_counters(cid, counters.get(cid, {}), once=once))
        closes += close_journals(self.s.crawls, self.s.urls, list(republish.values()))
        await all_or_cancel(*closes)

    async def _claim_discovered(
        self,
        contributions: Sequence[Contribution],
        outgoing: list[Outgoing],
        counters: dict[str, dict[str, int]],
    ) -> None:
        """Claim the links every page of the batch discovered in one go (one existence check and one
        transaction for the batch instead of per page); the won ones are sent with the flush. Before the
        journal: a crash after it republishes the sends, a crash before it refetches and claims again."""
        enqueue = [pair for c in contributions for pair in c.enqueue]
        if not enqueue:
            return
        claimed = await self.s.urls.claim([m for m, _ in enqueue], [h for _, h in enqueue], self.s.clock())
        outgoing.extend(Outgoing(m) for m in claimed.send)
        # A re-send (this page claimed the URL in an earlier delivery) is counted too: that delivery's counters
        # never landed, since a flush that lands them also finishes the page, which is then never re-processed.
        for m in claimed.send:
            bucket = counters.setdefault(m.crawl_id, {})
            for name in ("n_discovered", m.queue_counter):
                bucket[name] = bucket.get(name, 0) + 1


def part_id(now: float) -> str:
    """A result part's name: sortable by time, unique across containers."""
    return f"{int(now * 1000):013d}-{uuid.uuid4().hex[:12]}"


def part_time(part: str) -> float | None:
    """When the part named by `part_id` was named (epoch seconds), None for another name."""
    digits = part.split("-", 1)[0]
    return int(digits) / 1000 if digits.isdigit() else None


def replay_journals(
    journals: Sequence[Journal],
    pages: dict[str, list[dict[str, Any]]],
    links: dict[str, list[dict[str, Any]]],
    outgoing: list[Outgoing],
) -> None:
    """Add what unpublished journals carry (page and link rows by crawl, messages) to a publication."""
    for j in journals:
        body = j.body()
        pages.setdefault(j.crawl_id, []).extend(body.get("pages", []))
        columns = body.get("link_columns")  # journals written before 2026-12-05 hold "links" as rows
        links.setdefault(j.crawl_id, []).extend(
            body.get("links", []) if columns is None else decode_links(columns)
        )
        outgoing.extend(Outgoing(FrontierMessage.from_json(m), float(t)) for m, t in body.get("outgoing", []))


def close_journals(crawls: CrawlStore, urls: UrlStore, journals: Sequence[Journal]) -> list[Awaitable[bool]]:
    """Once their parts are published: each journal's counters, added in one transaction with its close."""
    return [
        crawls.add_counters(
            j.crawl_id, j.body().get("counters", {}), once=urls.journal_close(j.crawl_id, j.part)
        )
        for j in journals
    ]


def _journals(
    part: str,
    finished: Sequence[tuple[FrontierMessage, str, str]],
    pages: dict[str, list[dict[str, Any]]],
    links: dict[str, list[dict[str, Any]]],
    outgoing: Sequence[Outgoing],
    counters: dict[str, dict[str, int]],
) -> dict[str, Journal]:
    """One journal per crawl that finishes URLs in this flush (only those: a flush of deferrals alone
    writes no URL item, and a journal there would cost a write)."""
    crawls = {m.crawl_id for m, _, _ in finished}
    out: dict[str, Journal] = {}
    for cid in crawls:
        body = {
            "pages": pages.get(cid, []),
            "link_columns": encode_links(links.get(cid, [])),
            "outgoing": [[o.message.to_json(), o.not_before] for o in outgoing if o.message.crawl_id == cid],
            "counters": counters.get(cid, {}),
        }
        out[cid] = Journal.build(cid, part, body)
    return out


def _timeline_rows(
    timeline: dict[str, list[WindowReport]], finished: Sequence[tuple[FrontierMessage, str, str]]
) -> dict[str, list[dict[str, Any]]]:
    """Closed AIMD windows of this batch's hosts, filed under every crawl that fetched from that host."""
    crawls_of: dict[str, set[str]] = {}
    for msg, host, _ in finished:
        crawls_of.setdefault(host, set()).add(msg.crawl_id)
    out: dict[str, list[dict[str, Any]]] = {}
    for origin, windows in timeline.items():
        rows = [
            {
                "origin": origin,
                "t": round(w.closed_at, 3),
                "error_rate": round(w.error_rate, 4),
                **w.to_dict(),
            }
            for w in windows
        ]
        for crawl_id in crawls_of.get(origin, ()):
            out.setdefault(crawl_id, []).extend({"crawl_id": crawl_id, **r} for r in rows)
    return out


def _strip_internal(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows without their `crawl_id` (the part's key names the crawl), as copies: a retried flush groups
    the same rows again. A C-level copy and a pop: a comprehension over every key was 3% of the worker's CPU."""
    out = []
    for r in rows:
        row = dict(r)
        row.pop("crawl_id", None)
        out.append(row)
    return out


class WaveGate:
    """Admits at most `size` records at a time, in groups: the gate reopens when half of those inside have
    left, and then admits the free places together (in arrival order, one a loop turn). Records admitted
    together ask for their slots together (one coalesced reservation per host), as the records of a batch of
    `size` would; one at a time they would each write alone. A slow record holds back at most half a group."""

    def __init__(self, size: int) -> None:
        if size < 1:
            raise ValueError("size must be >= 1")
        self._size = size
        self._free = size
        self._inside = 0
        self._waiting: collections.deque[asyncio.Future[None]] = collections.deque()
        """Records waiting to enter, first come first served. A reopening wakes the first; each one woken takes
        its place when it runs (as under the `asyncio.Condition` this replaces, which woke every waiter: ~70 of
        a batch of 100 to admit ~16) and wakes the next while places are left."""

    async def __aenter__(self) -> None:
        if self._free > 0 and not self._waiting:
            self._free -= 1
            self._inside += 1
            return
        loop = asyncio.get_running_loop()
        first = False
        while True:
            woken = loop.create_future()
            if first:
                self._waiting.appendleft(woken)  # woken, but its place went first: still first in line
            else:
                self._waiting.append(woken)
            try:
                await woken
            except asyncio.CancelledError:
                if woken.done() and not woken.cancelled():
                    self._wake_next()  # woken, then cancelled before it ran: the wake goes on
                else:
                    self._waiting.remove(woken)
                raise
            if self._free > 0:
                break
            first = True
        self._free -= 1
        self._inside += 1
        self._wake_next()

    async def __aexit__(self, *exc: object) -> None:
        self._inside -= 1
        if self._free == 0 and self._inside <= self._size // 2:
            self._free = self._size - self._inside
            self._wake_next()

    def _wake_next(self) -> None:
        if self._free > 0 and self._waiting:
            self._waiting.popleft().set_result(None)


class BatchRun:
    """One SQS batch: prepared once (duplicate check for all its URLs), then one record handler per message."""

    def __init__(
        self, worker: PageWorker, records: Sequence[tuple[str, str]], ends_at: float | None = None
    ) -> None:
        self._w = worker
        self._size = len(records)
        self._ends_at = ends_at
        self._in_flight = WaveGate(worker.s.max_in_flight)
        self._prepared: asyncio.Task[None] | None = None
        self._commit: BatchCommit | None = None
        self._messages: dict[str, FrontierMessage] = {}
        self._states: dict[tuple[str, str], str] = {}
        self._journal = part_id(worker.s.clock())
        """The journal this batch's flush writes: its leases name it, so a fetched URL is done once it exists."""
        self._leased: set[tuple[str, str]] = set()
        """URLs this batch leased and still holds (their flush writes no item of their own)."""
        self._bodies = list(records)
        self.outcomes: Counter[str] = Counter()
        self._extra_copies: set[str] = set()
        self._journal_of: dict[tuple[str, str], str] = {}
        self._open: dict[tuple[str, str], Journal] = {}
        self._requesting = False
        """A record of this batch is about to send (or sent) its request: re-sends wait for the flush."""
        self._early_sends = 0
        self._changed = asyncio.Event()
        self._resends = SendGroup(worker.s.queue)
        self._claims: CallGroup[tuple[FrontierMessage, float, float], FetchClaim] = CallGroup(
            functools.partial(worker.s.urls.claim_fetch_many, part=self._journal), CLAIM_WINDOW_S
        )
        """Records granted their slots together (one coalesced reservation) claim their URLs in one call."""
        self._units: dict[str, int] = {}
        """Units of its crawl's page budget this batch holds and has not handed to a record yet."""
        self._units_taken: Counter[str] = Counter()
        self._budget_answer: dict[str, str] = {}
        self._units_lock = asyncio.Lock()

    async def _prepare(self) -> None:
        parsed = []
        first_of_key: dict[tuple[str, str], str] = {}
        for mid, body in self._bodies:
            try:
                msg = FrontierMessage.from_json(body)
            except ValueError:
                continue
            self._messages[mid] = msg
            parsed.append(msg)
            if first_of_key.setdefault((msg.crawl_id, msg.key), mid) != mid:
                self._extra_copies.add(mid)
        if not parsed:
            return
        urls = self._w.s.urls
        budgeted = {m.crawl_id for m in parsed if not m.check_only}
        reserving = asyncio.gather(*(self._reserve_ahead(c) for c in budgeted))
        try:
            found = await urls.delivery(parsed, self._w.s.clock())
        finally:
            await reserving
        self._states, self._open, self._journal_of = found.states, found.open, found.parts

    async def handle(self, message_id: str, body: str) -> str:
        """Process one record; raises when it must be retried (the batch processor reports it as failed)."""
        if self._commit is None:
            self._commit = BatchCommit(self._size, self._flush)
        commit = self._commit
        try:
            if self._prepared is None:
                self._prepared = asyncio.get_running_loop().create_task(self._prepare())
            await self._prepared
            msg = self._messages.get(message_id) or FrontierMessage.from_json(body)
            contribution = Contribution(crawl_id=msg.crawl_id)
            if message_id in self._extra_copies:  # the same URL twice in one batch: the first copy fetches it
                contribution.count("n_duplicates")
                outcome = "duplicate"
            else:
                outcome = await self._process(msg, contribution)
        except BaseException:
            commit.withdraw()
            raise
        await commit.submit(contribution)
        self.outcomes[outcome] += 1
        return outcome

    async def _reserve_ahead(self, crawl_id: str) -> None:
        """With the batch's state check, a block of page-budget units for its records of a crawl with a
        budget far enough off (`BUDGET_BLOCK_SHARE`): they then take one without a write on their fetch's path.
        Near the budget, and on any trouble, the records ask for themselves (`_take_unit`)."""
        try:
            record = (await self._w.crawl_context(crawl_id)).record
        except CrawlNotFound:
            return
        max_pages = record.settings.max_pages
        if max_pages is None or not record.status.accepts_fetches:
            return
        wanted = self._block(crawl_id, max_pages, record.pages_taken)
        if wanted <= 0:
            return
        async with self._units_lock:
            got = await self._w.s.crawls.reserve_pages(crawl_id, wanted, max_pages)
            self._units[crawl_id] = self._units.get(crawl_id, 0) + got

    def _block(self, crawl_id: str, max_pages: int, taken: int) -> int:
        """Units to reserve at once: one for each of the batch's records of the crawl not handed one yet, at
        most `BUDGET_BLOCK_SHARE` of what the budget has left (`taken`: its pages taken, as last read)."""
        records = sum(1 for m in self._messages.values() if m.crawl_id == crawl_id and not m.check_only)
        return min(records - self._units_taken[crawl_id], (max_pages - taken) // BUDGET_BLOCK_SHARE)

    async def _take_unit(self, crawl_id: str, max_pages: int, taken: int) -> str:
        """A unit of the crawl's page budget for one record (`UNIT_GRANTED`), from the block this batch
        reserved (`_reserve_ahead`, or here a `_block` of at least one; `_flush` gives the unused back). None
        left: `UNIT_SPENT` once the budget's pages are all fetched, else `UNIT_IN_FLIGHT` (other records hold
        units they may give back)."""
        async with self._units_lock:
            if not self._units.get(crawl_id):
                if crawl_id in self._budget_answer:
                    return self._budget_answer[crawl_id]
                wanted = max(1, self._block(crawl_id, max_pages, taken))
                got = await self._w.s.crawls.reserve_pages(crawl_id, wanted, max_pages)
                if got <= 0:
                    spent = (await self._w.s.crawls.get(crawl_id)).budget_spent() is not None
                    self._budget_answer[crawl_id] = UNIT_SPENT if spent else UNIT_IN_FLIGHT
                    return self._budget_answer[crawl_id]
                self._units[crawl_id] = got
            self._units[crawl_id] -= 1
            self._units_taken[crawl_id] += 1
            return UNIT_GRANTED

    async def _budget_wait(self, msg: FrontierMessage, c: Contribution, host: str) -> str:
        """The crawl's page budget is all reserved by fetches in flight, which may give units back: come back
        in `budget_recheck_s`. Units outlive a fetch only if their worker died with them, so after longer than
        a fetch's lease the URL is finished as over budget (reported), never re-sent for ever."""
        settings = (await self._w.crawl_context(msg.crawl_id)).record.settings
        waited = sum(budget_recheck_s(n) for n in range(msg.budget_waits))
        if waited > settings.fetch.total_timeout_s + FETCH_LEASE_MARGIN_S:
            return _over_budget(msg, c, host)
        until = self._w.s.clock() + budget_recheck_s(msg.budget_waits)
        await self._defer(replace(msg, budget_waits=msg.budget_waits + 1), until, c)
        return "budget_in_flight"

    async def _flush(self, contributions: list[Contribution]) -> None:
        """The worker's flush, with the page-budget units the batch reserved and never handed out given back."""
        unused = [
            Contribution(crawl_id=c, counters={PAGES_RESERVED: -n}) for c, n in self._units.items() if n
        ]
        self._units.clear()
        # Every record is done: the slots kept for a next request go back with the batch's writes, and go
        # back even when the writes fail (a frozen container holding them would slow the host's other workers).
        await all_settled(
            self._w.s.pacing.settle(),
            self._w.flush([*contributions, *unused], self._journal, frozenset(self._leased)),
        )

    async def _defer(
        self,
        msg: FrontierMessage,
        until: float,
        c: Contribution,
        *,
        claimed: bool = False,
    ) -> None:
        """Send the URL back to arrive at `until`; the URL stays pending. A re-send, unlike a failed record,
        never counts towards the dead-letter queue. A URL this delivery had claimed (`claimed`) is given back
        first, so that the re-sent copy can claim it.

        Before the batch's first request a re-send goes at once, so a pacing deferral is back when its turn
        comes (`_before_request` holds that request until the re-sends on their way are sent). From then on
        it goes with the batch's flush, batched with the new links' messages: a crash in a write between a
        request and the batch's journal would lose that request (the URL is fetched again once its claim
        expires). Meanwhile the batch's own records use the host's next slots. A re-send that fails goes
        with the flush too."""
        if claimed:
            await self._release(msg)
        c.count("n_deferred")
        outgoing = Outgoing(msg, until)
        if self._requesting:
            c.outgoing.append(outgoing)
            return
        sending = self._resends.submit(outgoing)
        self._early_sends += 1
        try:
            await sending
        except Exception:
            c.outgoing.append(outgoing)
        finally:
            self._early_sends -= 1
            self._changed.set()

    async def _release(self, msg: FrontierMessage) -> None:
        """Give back the lease this batch took on `msg`'s URL."""
        self._leased.discard((msg.crawl_id, msg.key))
        await self._w.s.urls.release_fetch(msg)

    async def _before_request(self) -> None:
        """Before the batch's first request: no re-send leaves from now on until the flush, and the request waits
        for those on their way. A crash in a re-send then never loses a request made; it strands at most the
        claims of batch-mates waiting for their slots (fetched once those expire)."""
        if self._requesting:
            return
        self._requesting = True
        self._resends.flush()
        await self._until(lambda: self._early_sends == 0)

    async def _until(self, done: Callable[[], bool]) -> None:
        while not done():
            self._changed.clear()
            await self._changed.wait()

    async def _process(self, msg: FrontierMessage, c: Contribution) -> str:
        s = self._w.s
        try:
            ctx = await self._w.crawl_context(msg.crawl_id)
        except CrawlNotFound:
            return "unknown_crawl"  # a message of a deleted crawl: nothing to record it against
        record = ctx.record
        url = normalize(msg.url)
        if not isinstance(url, NormalizedURL):
            c.finished.append((msg, "", "rejected"))
            c.count("n_rejected")
            return "rejected"
        host = url.origin
        if self._states.get((msg.crawl_id, msg.key)) == DONE:  # first: a done URL's record is never rewritten
            journal = self._open.pop((msg.crawl_id, self._journal_of.get((msg.crawl_id, msg.key), "")), None)
            if journal is not None:  # done, but its flush crashed before publishing: publish, never refetch
                c.republish.append(journal)
                return "republished"
            c.count("n_duplicates")
            return "duplicate"
        if record.status.terminal or record.status is CrawlStatus.FINISHING:
            c.finished.append((msg, host, "not_crawled"))
            c.count("n_not_crawled")
            return "not_crawled"
        if record.status is CrawlStatus.PAUSED or await self._w.frontier_paused():
            await self._defer(msg, s.clock() + PAUSE_RECHECK_S, c)
            return "paused"
        settings = record.settings
        if not msg.check_only and settings.max_pages is not None and record.pages_taken >= settings.max_pages:
            if record.budget_spent() is not None:
                return _over_budget(msg, c, host)
            return await self._budget_wait(msg, c, host)
        if msg.not_before - s.clock() > NOT_BEFORE_SLACK_S:  # came back early: SQS delays 15 minutes at most
            c.outgoing.append(Outgoing(msg, msg.not_before))
            c.count("n_deferred")
            return "not_yet"
        depth_now = record.frontier_depth
        if (
            settings.bfs_slack is not None
            and depth_now is not None
            and msg.depth > depth_now + settings.bfs_slack
            and (hold := bfs_hold_s(msg.holds)) is not None
        ):
            # Breadth-first on an unordered queue: shallower URLs are still waiting, so this one comes back later.
            c.outgoing.append(Outgoing(replace(msg, holds=msg.holds + 1), s.clock() + hold))
            c.count("n_bfs_held")
            return "bfs_hold"
        async with self._in_flight:
            if self._ends_at is not None and s.clock() + _time_needed(settings) > self._ends_at:
                # A large batch on a slow host: what cannot finish in this invocation goes to the next one.
                await self._defer(msg, s.clock(), c)
                return "out_of_time"
            return await self._visit(msg, c, ctx, url)

    async def _visit(
        self, msg: FrontierMessage, c: Contribution, ctx: _CrawlContext, url: NormalizedURL
    ) -> str:
        """Robots, slot, fetch, parse: the part of a record that talks to the host."""
        s = self._w.s
        settings, host = ctx.record.settings, url.origin
        now = s.clock()
        answer = await s.robots.check(host, url.path_query, settings, ctx.fetcher, now)
        if answer.wait_until is not None:
            await self._defer(msg, answer.wait_until, c)
            return "robots_wait"
        if not answer.allowed:
            c.pages.append(
                skipped_row(msg, "disallowed", answer.finding or "ALERT_ROBOTS_DISALLOWED", answer.reason)
            )
            c.finished.append((msg, host, "disallowed"))
            c.count("n_disallowed")
            return "disallowed"
        # Exclusive claim before the request: a second delivery of this URL (SQS is at-least-once, a parent
        # retry re-sends its children) finds it leased or done and never knocks on the host twice. It is
        # taken once a slot is granted, while the worker waits for the slot (see `paced_fetch`).
        claim: FetchClaim | None = None
        # A crawl with a page budget: a unit of it before the claim, so that workers together never fetch
        # more pages than the budget; a unit not spent on a fetch is given back with the batch's counters.
        budgeted = settings.max_pages is not None and not msg.check_only
        unit: str | None = None

        async def take_claim() -> bool:
            nonlocal claim, unit
            if budgeted:
                assert settings.max_pages is not None
                unit = await self._take_unit(msg.crawl_id, settings.max_pages, ctx.record.pages_taken)
                if unit != UNIT_GRANTED:
                    return False
            claim = await self._claims.call(
                (msg, s.clock(), settings.fetch.total_timeout_s + FETCH_LEASE_MARGIN_S)
            )
            if claim.granted:
                self._leased.add((msg.crawl_id, msg.key))
            return claim.granted

        outcome = await self._fetch_claimed(msg, c, ctx, url, answer.crawl_delay_s, take_claim, lambda: claim)
        if unit == UNIT_GRANTED and outcome not in ("fetched", "error"):
            c.count(PAGES_RESERVED, -1)
        elif unit == UNIT_SPENT:
            return _over_budget(msg, c, host)
        elif unit == UNIT_IN_FLIGHT:  # the last pages of the budget are being fetched: ask again shortly
            return await self._budget_wait(msg, c, host)
        return outcome

    async def _fetch_claimed(
        self,
        msg: FrontierMessage,
        c: Contribution,
        ctx: _CrawlContext,
        url: NormalizedURL,
        crawl_delay_s: float | None,
        take_claim: Callable[[], Awaitable[bool]],
        claim_of: Callable[[], FetchClaim | None],
    ) -> str:
        """Slot, claim, fetch, parse: the record's answer once robots.txt allows it."""
        s = self._w.s
        settings, host = ctx.record.settings, url.origin

        paced = await paced_fetch(
            s.pacing,
            ctx.fetcher,
            url.url,
            host,
            settings,
            crawl_delay_s,
            clock=s.clock,
            sleep=s.sleep,
            claim=take_claim,
            crawl_id=msg.crawl_id,
            before_request=self._before_request,
        )
        claim = claim_of()
        if isinstance(paced, Unclaimed):
            if claim is None:  # no unit of the page budget left (the caller finishes it)
                return "budget_spent"
            if claim.held_until is None:
                c.count("n_duplicates")
                return "duplicate"
            c.outgoing.append(Outgoing(msg, claim.held_until + 1.0))
            c.count("n_deferred")
            return "leased_elsewhere"
        if not isinstance(paced, PacedFetch):
            if paced.reason == "suspended":
                detail = (
                    "Retry-After longer than the cap: the host is suspended, not fetched earlier than asked"
                )
                c.pages.append(skipped_row(msg, "suspended", "ALERT_HOST_SUSPENDED", detail))
                c.finished.append((msg, host, "suspended"))
                c.count("n_not_crawled")
                return "suspended"
            await self._defer(msg, paced.until, c, claimed=claim is not None and claim.granted)
            return "pacing_wait"
        slot, result = paced.ticket, paced.result
        plan: LinkPlan | None = None
        row: dict[str, Any] | None = None
        # A WAF challenge (often a 403/503) is not transient: retrying would only knock again.
        retry = (
            _transient(result)
            and msg.tries + 1 < MAX_TRIES
            and detect_waf(result.body, result.headers, status=result.status) is None
        )
        waf = False
        try:
            if not retry:
                if result.error is None and result.status is not None:
                    known = functools.partial(s.urls.claimed_elsewhere, msg.crawl_id, claimer=msg.key)
                    row, plan = page_row(msg, url, result, ctx.scope, settings, known)
                else:
                    row = error_row(msg, result)
                waf = bool(row.get("waf_provider"))
        finally:
            await s.pacing.release(slot, result, waf, s.clock())
        if row is None:
            backoff = min(300.0, 5 * 3**msg.tries * (1 + s.rng.random()))
            await self._release(msg)
            c.outgoing.append(Outgoing(replace(msg, tries=msg.tries + 1), s.clock() + backoff))
            c.count("n_retried")
            return "retry"
        if result.location is not None and plan is None:
            plan = plan_redirect(msg, url, result.location, ctx.scope, settings)
        if plan is not None:
            c.links.extend(plan.edges)
            c.pages.extend(plan.pruned_rows)
            c.enqueue.extend(zip(plan.enqueue, plan.enqueue_hosts, strict=True))
        c.pages.append(row)
        outcome = "fetched" if result.error is None else "error"
        c.finished.append((msg, host, outcome))
        c.count("n_fetched" if not msg.check_only else "n_checked")
        if result.error is not None or (result.status or 0) >= 400:
            c.count("n_errors")
        return outcome


def budget_recheck_s(waits: int) -> float:
    """How long a URL waits for its crawl's page budget the `waits`-th time (2 s, doubling, at most 15 s)."""
    return float(min(BUDGET_RECHECK_S * 2**waits, BUDGET_RECHECK_MAX_S))


def _over_budget(msg: FrontierMessage, c: Contribution, host: str) -> str:
    """Finish a URL its crawl's page budget has no room for (reported as not crawled, never dropped)."""
    c.finished.append((msg, host, "not_crawled_budget"))
    c.count("n_not_crawled")
    return "not_crawled_budget"


def _time_needed(settings: CrawlSettings) -> float:
    """Longest a record can take from its robots check to its batch's flush."""
    return settings.politeness.max_local_wait_s + settings.fetch.total_timeout_s + FLUSH_RESERVE_S


def _transient(result: FetchResult) -> bool:
    if result.error is not None:
        return result.error.kind.value in {"timeout", "connect", "reset", "dns", "protocol"}
    return result.status in RETRY_STATUSES
