"""When a deferred URL is re-sent (BatchRun._defer), observed on fake services in one event loop.

Before the batch's first request, a re-send goes out at once (its turn comes back on time), and that request
waits for the re-sends of the batch-mates answered with it; once a request is made, re-sends wait for the
batch's flush, after the URLs are finished: a send between a request and the journal is where a crash would
lose the request made.
"""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
import json
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import pytest

from seolens_core.adapters.crawls import CrawlRecord, CrawlStatus
from seolens_core.adapters.frontier_queue import MAX_SQS_DELAY_S, Outgoing
from seolens_core.adapters.urls import Claimed, Delivery, FetchClaim, Journal
from seolens_core.crawl import PageWorker, RobotsAnswer, Ticket, Wait, WorkerServices
from seolens_core.crawl._link_columns import decode_links
from seolens_core.crawl._worker import BUDGET_RECHECK_S, FETCH_LEASE_MARGIN_S, bfs_hold_s
from seolens_core.fetch import FetchResult
from seolens_core.frontier import FrontierMessage
from seolens_core.settings import CrawlSettings
from seolens_core.urls import url_key_hex

SITE = "http://shop.test"
SETTINGS = CrawlSettings(start_urls=(f"{SITE}/",), bfs_slack=None)


class _Log:
    def __init__(self) -> None:
        self.events: list[tuple[str, list[str]]] = []

    def add(self, kind: str, urls: Sequence[str]) -> None:
        self.events.append((kind, sorted(u.removeprefix(SITE) for u in urls)))


class _Crawls:
    async def fetch_settings(self, record: CrawlRecord) -> CrawlSettings:
        return record.settings

    async def get_with_switch(self, crawl_id: str) -> tuple[CrawlRecord, bool]:
        return CrawlRecord(crawl_id, CrawlStatus.RUNNING, SETTINGS, "shop.test", "", time.time()), False

    async def add_counters(self, crawl_id: str, deltas: dict[str, int], *, once: Any = None) -> bool:
        return True

    async def reserve_pages(self, crawl_id: str, wanted: int, max_pages: int) -> int:
        return wanted  # a budget far from spent


class _Urls:
    def __init__(self, log: _Log) -> None:
        self.log = log

    async def delivery(self, messages: Any, now: float) -> Delivery:
        return Delivery({}, {}, {})

    def claimed_elsewhere(self, crawl_id: str, key: str, claimer: str) -> bool:
        return False

    async def claim_fetch_many(
        self, items: Sequence[tuple[FrontierMessage, float, float]], *, part: str = ""
    ) -> list[FetchClaim]:
        self.log.add("claim", [m.url for m, _, _ in items])
        return [FetchClaim(True) for _ in items]

    async def release_fetch(self, msg: FrontierMessage) -> None:
        self.log.add("release", [msg.url])

    async def claim(self, messages: Sequence[FrontierMessage], *_: Any, **__: Any) -> Claimed:
        return Claimed([], [])

    async def release_lease(self, crawl_id: str, key: str, part: str, ended_by: float | None = None) -> bool:
        self.log.add("release", [key])
        return True

    async def finish(
        self, done: Sequence[Any], now: float, journals: Sequence[Journal] = (), leased: Any = ()
    ) -> set[str]:
        if done:  # the journal and the URL items it does not cover: the batch's first write
            self.log.add("finish", [m.url for m, _, _ in done])
        return {j.crawl_id for j in journals}  # stored with the URLs (small enough)

    def journal_close(self, crawl_id: str, part: str) -> dict[str, Any]:
        return {}


class _Queue:
    def __init__(self, log: _Log) -> None:
        self.log = log

    async def send(self, outgoing: Sequence[Outgoing]) -> None:
        self.log.add("send", [o.message.url for o in outgoing])


class _Recording(_Queue):
    """A queue that also keeps every message sent, in `sent`."""

    def __init__(self, log: _Log, sent: list[Outgoing]) -> None:
        super().__init__(log)
        self.sent = sent

    async def send(self, outgoing: Sequence[Outgoing]) -> None:
        self.sent.extend(outgoing)
        await super().send(outgoing)


class _Results:
    async def put_batch(self, crawl_id: str, part: str, sections: Any) -> str | None:
        return None


class _Robots:
    """`/slow` takes 0.2 s to be checked (so its batch's flush comes that late)."""

    def __init__(self, log: _Log) -> None:
        self.log = log

    async def check(
        self, origin: str, path_query: str, settings: Any, fetcher: Any, now: float
    ) -> RobotsAnswer:
        if path_query == "/slow":
            await asyncio.sleep(0.2)
            self.log.add("robots", [SITE + path_query])
        return RobotsAnswer(allowed=True)


class _Pacing:
    """Without `wait_after`, every record is told to come back in 5 s. With it, the first record gets a slot
    (and so claims its URL) and the others are told so only once `wait_after` is set. `grant_all`: every
    record gets a slot."""

    def __init__(self, wait_after: asyncio.Event | None, *, grant_all: bool = False) -> None:
        self.wait_after = wait_after
        self.granting = wait_after is not None
        self.grant_all = grant_all

    async def acquire(
        self,
        origin: str,
        settings: CrawlSettings,
        floor_s: float | None,
        now: float,
        on_granted: Callable[[], object] | None = None,
        *,
        crawl_id: str = "",
    ) -> Ticket | Wait:
        if self.granting or self.grant_all:
            self.granting = False
            return Ticket(origin, "lease", start_at=now, slack_s=60.0)
        if self.wait_after is not None:
            await self.wait_after.wait()  # deferred only once the granted record has claimed its URL
        return Wait(until=now + 5, reason="pacing")

    async def release(self, ticket: Ticket, result: FetchResult, waf: bool, now: float) -> None:
        return None

    async def give_back(self, ticket: Ticket) -> None:
        return None

    async def settle(self) -> None:
        return None

    def idle(self, origin: str, settings: CrawlSettings) -> bool:
        return False

    async def slide(self, ticket: Ticket) -> Ticket | None:
        return None

    def drain_timeline(self) -> dict[str, list[Any]]:
        return {}


class _Fetcher:
    def __init__(self, claimed: asyncio.Event, log: _Log) -> None:
        self.claimed = claimed
        self.log = log
        self.in_flight = self.peak_in_flight = 0

    async def fetch(
        self,
        url: str,
        *,
        headers: Any = None,
        method: str = "GET",
        may_send: Callable[[], Awaitable[bool]] | None = None,
    ) -> FetchResult:
        self.claimed.set()
        if may_send is not None:
            assert await may_send()
        self.log.add("fetch", [url])
        self.in_flight += 1
        self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        await asyncio.sleep(0.1)  # the page downloads while the other records are deferred
        self.in_flight -= 1
        body = b"<html><head><title>t</title></head><body><h1>x</h1></body></html>"
        return FetchResult(url, 200, {"content-type": "text/html"}, body)

    async def aclose(self) -> None:
        return None


def _services(
    log: _Log,
    pacing: _Pacing,
    fetcher_factory: Callable[[CrawlSettings, Any], _Fetcher],
    *,
    crawls: _Crawls | None = None,
    queue: _Queue | None = None,
    max_in_flight: int = 10,
) -> WorkerServices:
    """The worker's services, all fakes: the log records what reaches the URL store and the queue."""
    return WorkerServices(
        crawls=crawls or _Crawls(),  # type: ignore[arg-type]
        urls=_Urls(log),  # type: ignore[arg-type]
        queue=queue or _Queue(log),  # type: ignore[arg-type]
        results=_Results(),  # type: ignore[arg-type]
        robots=_Robots(log),
        pacing=pacing,
        fetcher_factory=fetcher_factory,  # type: ignore[arg-type]
        max_in_flight=max_in_flight,
    )


def _granting(
    log: _Log, sent: list[Outgoing], pacing: _Pacing | None = None, *, crawls: _Crawls | None = None
) -> WorkerServices:
    """Services whose pacing grants every record a slot and whose queue keeps what is sent in `sent`."""
    claimed = asyncio.Event()
    return _services(
        log,
        pacing or _Pacing(None, grant_all=True),
        lambda settings, policy: _Fetcher(claimed, log),
        crawls=crawls,
        queue=_Recording(log, sent),
    )


def _run(
    pacing_kind: str,
    paths: Sequence[str],
    *,
    ends_in_s: float | None = None,
    max_in_flight: int = 10,
    fetchers: list[_Fetcher] | None = None,
) -> list[tuple[str, list[str]]]:
    log = _Log()
    made = [] if fetchers is None else fetchers

    async def main() -> None:
        claimed = asyncio.Event()

        def fetcher(settings: CrawlSettings, policy: Any) -> _Fetcher:
            made.append(_Fetcher(claimed, log))
            return made[-1]

        pacing = _Pacing(claimed if pacing_kind == "split" else None, grant_all=pacing_kind == "grant")
        services = _services(log, pacing, fetcher, max_in_flight=max_in_flight)
        worker = PageWorker(services)
        bodies = []
        for i, path in enumerate(paths):
            url = SITE + path
            bodies.append((f"m{i}", FrontierMessage("c1", url, url_key_hex(url), 1).to_json()))
        batch = worker.batch(bodies, None if ends_in_s is None else time.time() + ends_in_s)
        await asyncio.gather(*(batch.handle(mid, body) for mid, body in bodies))

    asyncio.run(main())
    return log.events


def test_before_any_claim_a_deferral_is_re_sent_at_once() -> None:
    events = _run("wait", ["/a", "/b", "/slow"])
    # /a and /b share one call (SendGroup) and do not wait for the batch's slow record to finish.
    assert events == [("send", ["/a", "/b"]), ("robots", ["/slow"]), ("send", ["/slow"])]


def test_once_a_record_sent_its_request_deferrals_go_with_the_flush_after_the_finish() -> None:
    events = _run("split", ["/first", "/second", "/third"])
    kinds = [kind for kind, _ in events]
    assert kinds == ["claim", "fetch", "finish", "send"], events
    assert events[2] == ("finish", ["/first"])
    assert events[3] == ("send", ["/second", "/third"])


class _Ahead(_Pacing):
    """The first record gets a slot starting `start_in` s later, and is woken 50 ms before it (as `PacingGate`
    wakes a granted worker early); each other record is told to come back after `answer_in` s."""

    def __init__(self, start_in: float, answer_in: float) -> None:
        super().__init__(None)
        self.start_in, self.answer_in = start_in, answer_in
        self.granted = False

    async def acquire(
        self,
        origin: str,
        settings: CrawlSettings,
        floor_s: float | None,
        now: float,
        on_granted: Callable[[], object] | None = None,
        *,
        crawl_id: str = "",
    ) -> Ticket | Wait:
        if not self.granted:
            self.granted = True
            if on_granted is not None:
                on_granted()
            await asyncio.sleep(max(0.0, self.start_in - 0.05))
            return Ticket(origin, "lease", start_at=now + self.start_in, slack_s=60.0)
        await asyncio.sleep(self.answer_in)
        return Wait(until=now + 5, reason="pacing")


class _SlowQueue(_Queue):
    """Each send takes `takes_s`; the first `fails` sends fail."""

    def __init__(self, log: _Log, takes_s: float, fails: int = 0) -> None:
        super().__init__(log)
        self.takes_s, self.fails = takes_s, fails

    async def send(self, outgoing: Sequence[Outgoing]) -> None:
        await asyncio.sleep(self.takes_s)
        if self.fails:
            self.fails -= 1
            self.log.add("failed send", [o.message.url for o in outgoing])
            raise RuntimeError("SendMessageBatch failed")
        await super().send(outgoing)


def _timed_run(
    pacing: _Pacing, paths: Sequence[str], queue: Callable[[_Log], _Queue] = _Queue
) -> tuple[list[tuple[str, list[str]]], dict[str, float], Counter[str]]:
    """The events, when each kind of event first happened (s after the batch started), and the outcomes."""
    log = _Log()
    firsts: dict[str, float] = {}
    t0 = time.monotonic()
    add = log.add

    def timed(kind: str, urls: Sequence[str]) -> None:
        firsts.setdefault(kind, time.monotonic() - t0)
        add(kind, urls)

    log.add = timed  # type: ignore[method-assign]
    outcomes: Counter[str] = Counter()

    async def main() -> None:
        claimed = asyncio.Event()
        services = _services(log, pacing, lambda s, p: _Fetcher(claimed, log), queue=queue(log))
        bodies = [
            (f"m{i}", FrontierMessage("c1", SITE + p, url_key_hex(SITE + p), 1).to_json())
            for i, p in enumerate(paths)
        ]
        batch = PageWorker(services).batch(bodies, None)
        outcomes.update(await asyncio.gather(*(batch.handle(mid, body) for mid, body in bodies)))

    asyncio.run(main())
    return log.events, firsts, outcomes


def test_batch_mates_deferred_before_the_first_request_are_re_sent_before_it() -> None:
    # The slot starts in 0.3 s; the others learn they must come back 20 ms in (their turn booked).
    events, at, outcomes = _timed_run(_Ahead(start_in=0.3, answer_in=0.02), ["/first", "/second", "/third"])
    assert events == [
        ("claim", ["/first"]),
        ("send", ["/second", "/third"]),
        ("fetch", ["/first"]),
        ("finish", ["/first"]),
    ]
    assert at["send"] < 0.1  # at once, not the SendGroup's window later, nor with the flush
    assert outcomes == Counter({"fetched": 1, "pacing_wait": 2})


def test_the_first_request_waits_for_re_sends_on_their_way() -> None:
    # The send takes 0.2 s and the slot starts in 0.1 s: the request goes only once the send is done (a crash
    # in the send then loses no request made), late for its slot rather than unsafe.
    events, at, _ = _timed_run(
        _Ahead(start_in=0.1, answer_in=0.01), ["/first", "/second"], lambda log: _SlowQueue(log, takes_s=0.2)
    )
    assert events == [
        ("claim", ["/first"]),
        ("send", ["/second"]),
        ("fetch", ["/first"]),
        ("finish", ["/first"]),
    ]
    assert at["fetch"] >= 0.2


def test_a_batch_mate_answered_only_after_the_slot_starts_does_not_delay_the_request() -> None:
    # /later is answered 0.4 s in, long after the 0.1 s slot: the request does not wait for it, and its re-send
    # then goes with the flush.
    events, at, outcomes = _timed_run(_Ahead(start_in=0.1, answer_in=0.4), ["/first", "/later"])
    assert events == [
        ("claim", ["/first"]),
        ("fetch", ["/first"]),
        ("finish", ["/first"]),
        ("send", ["/later"]),
    ]
    assert at["fetch"] < 0.2
    assert outcomes == Counter({"fetched": 1, "pacing_wait": 1})


def test_a_re_send_that_fails_before_the_first_request_goes_with_the_flush() -> None:
    events, _, outcomes = _timed_run(
        _Ahead(start_in=0.2, answer_in=0.01), ["/first", "/second"], lambda log: _SlowQueue(log, 0.0, fails=1)
    )
    assert events == [
        ("claim", ["/first"]),
        ("failed send", ["/second"]),
        ("fetch", ["/first"]),
        ("finish", ["/first"]),
        ("send", ["/second"]),
    ]
    assert outcomes == Counter({"fetched": 1, "pacing_wait": 1})  # never a failed record


def test_records_that_could_not_finish_before_the_invocation_ends_go_back_unfetched() -> None:
    # Default settings: a record needs up to 2 s (local wait) + 30 s (fetch) + 5 s (flush) = 37 s.
    assert [k for k, _ in _run("grant", ["/a", "/b"], ends_in_s=60)].count("fetch") == 2
    events = _run("grant", ["/a", "/b"], ends_in_s=36)
    assert events == [("send", ["/a", "/b"])]  # at once (nothing claimed), for another invocation


def test_a_large_batch_fetches_at_most_max_in_flight_records_at_once() -> None:
    fetchers: list[_Fetcher] = []
    paths = [f"/p{i}" for i in range(12)]
    events = _run("grant", paths, max_in_flight=4, fetchers=fetchers)
    assert sorted(u for k, urls in events if k == "fetch" for u in urls) == sorted(paths)
    assert fetchers[0].peak_in_flight == 4
    assert ("finish", sorted(paths)) in events  # one flush for the whole batch


def test_bfs_hold_schedule_doubles_to_15_s_and_ends_after_about_a_minute() -> None:
    schedule = []
    holds = 0
    while (hold := bfs_hold_s(holds)) is not None:
        schedule.append(hold)
        holds += 1
    assert schedule == [3.0, 6.0, 12.0, 15.0, 15.0, 15.0]
    assert sum(schedule) == 66.0  # the order a minute of holds kept (twenty 3 s holds before: 20 re-sends)


def test_a_url_ahead_of_the_breadth_first_gate_comes_back_later_each_hold_then_is_fetched() -> None:
    """Depth 2 while depth 0 still has queued URLs (gate slack 0): held, re-sent with the next hold's delay
    and its hold count; once its holds are used up it is fetched."""
    settings = CrawlSettings(start_urls=(f"{SITE}/",), bfs_slack=0)
    log = _Log()
    sent: list[Outgoing] = []

    class Crawls(_Crawls):
        async def get_with_switch(self, crawl_id: str) -> tuple[CrawlRecord, bool]:
            record = CrawlRecord(
                crawl_id, CrawlStatus.RUNNING, settings, "shop.test", "", time.time(), counters={"q0": 3}
            )
            return record, False

    async def main() -> float:
        services = _granting(log, sent, crawls=Crawls())
        bodies = []
        for i, holds in enumerate((0, 2, 6)):
            url = f"{SITE}/deep{holds}"
            bodies.append((f"m{i}", FrontierMessage("c1", url, url_key_hex(url), 2, holds=holds).to_json()))
        batch = PageWorker(services).batch(bodies, None)
        now = time.time()
        await asyncio.gather(*(batch.handle(mid, body) for mid, body in bodies))
        return now

    started = asyncio.run(main())
    assert [kind for kind, urls in log.events if "/deep6" in urls] == ["claim", "fetch", "finish"]
    held = {o.message.url.removeprefix(SITE): o for o in sent}
    assert set(held) == {"/deep0", "/deep2"}
    assert held["/deep0"].message.holds == 1 and held["/deep2"].message.holds == 3
    assert held["/deep0"].not_before - started == pytest.approx(3.0, abs=1.0)
    assert held["/deep2"].not_before - started == pytest.approx(12.0, abs=1.0)


def test_sitemap_urls_count_in_their_own_queue_outside_the_breadth_first_gate() -> None:
    """A sitemap lists pages without their depth: counted by their seed depth (1), thousands of them kept the
    gate at depth 1 for a whole crawl, so every link-discovered URL at depth 3 or more was held for its whole
    hold budget (about a minute, six re-sends) and the last ones came back in waves after the crawl's end."""
    listed = FrontierMessage("c1", f"{SITE}/listed", url_key_hex(f"{SITE}/listed"), 1, sitemap=True)
    linked = FrontierMessage("c1", f"{SITE}/linked", url_key_hex(f"{SITE}/linked"), 3)
    assert (listed.queue_counter, linked.queue_counter) == ("qs", "q3")
    record = CrawlRecord(
        "c1", CrawlStatus.RUNNING, SETTINGS, "shop.test", "", 0.0, counters={"qs": 6000, "q3": 4}
    )
    assert record.frontier_depth == 3
    record.counters.update(q2=1, q3=0)
    assert record.frontier_depth == 2
    record.counters.update(q2=0)
    assert record.frontier_depth is None


def test_stored_rows_lose_their_crawl_id_and_the_batchs_rows_keep_it() -> None:
    from seolens_core.crawl._worker import _strip_internal

    rows = [{"crawl_id": "c1", "url": f"{SITE}/a", "status": 200}, {"url": f"{SITE}/b"}]
    assert _strip_internal(rows) == [{"url": f"{SITE}/a", "status": 200}, {"url": f"{SITE}/b"}]
    assert rows[0]["crawl_id"] == "c1"  # a retried flush groups the same rows by crawl again


# --- not_before: a re-send further ahead than SQS can delay a message (15 minutes) says when it is due, so
# its early return is sent on without asking the host again (a URL behind an hour-long Retry-After block would
# otherwise ask every 15 minutes).

URL = f"{SITE}/page"
MSG = FrontierMessage("c1", URL, url_key_hex(URL), 1)


def test_a_re_send_beyond_the_sqs_delay_carries_its_time_and_a_nearer_one_does_not() -> None:
    now = 1_000_000.0
    far = Outgoing(MSG, now + 2_500.0)
    assert far.delay_s(now) == MAX_SQS_DELAY_S
    assert FrontierMessage.from_json(far.body(now)).not_before == now + 2_500.0
    near = Outgoing(MSG, now + 600.0)
    assert "nb" not in json.loads(near.body(now))
    assert FrontierMessage.from_json(near.body(now)) == MSG


@pytest.mark.parametrize("raw", ["x", True, -5, float("nan"), None, [1], {"a": 1}])
def test_a_hostile_not_before_reads_as_none(raw: object) -> None:
    body = json.loads(MSG.to_json()) | {"nb": raw}
    assert FrontierMessage.from_json(json.dumps(body)).not_before == 0.0


def _handle(message: FrontierMessage) -> tuple[list[tuple[str, list[str]]], list[Outgoing], int]:
    log = _Log()
    sent: list[Outgoing] = []
    asks = 0

    class Pacing(_Pacing):
        async def acquire(self, *args: object, **kwargs: object) -> object:  # type: ignore[override]
            nonlocal asks
            asks += 1
            return await super().acquire(*args, **kwargs)  # type: ignore[arg-type]

    async def main() -> None:
        services = _granting(log, sent, Pacing(None, grant_all=True))
        batch = PageWorker(services).batch([("m0", message.to_json())], None)
        await batch.handle("m0", message.to_json())

    asyncio.run(main())
    return log.events, sent, asks


def test_a_message_back_before_its_time_is_sent_on_without_asking_the_host() -> None:
    due = time.time() + 1_200.0
    events, sent, asks = _handle(FrontierMessage("c1", URL, MSG.key, 1, not_before=due))
    assert asks == 0 and not any(kind in ("claim", "fetch") for kind, _ in events), events
    assert [(o.message.url, o.not_before) for o in sent] == [(URL, due)]


def test_a_message_back_at_its_time_is_fetched() -> None:
    events, sent, asks = _handle(FrontierMessage("c1", URL, MSG.key, 1, not_before=time.time() + 1.0))
    assert asks == 1 and [kind for kind, _ in events] == ["claim", "fetch", "finish"], events
    assert sent == []


class _SendTimes(_Recording):
    """Also keeps when each message was sent: its arrival is that time plus its DelaySeconds."""

    def __init__(self, log: _Log, sent: list[Outgoing], arrivals: list[float]) -> None:
        super().__init__(log, sent)
        self.arrivals = arrivals

    async def send(self, outgoing: Sequence[Outgoing]) -> None:
        now = time.time()
        self.arrivals.extend(now + o.delay_s(now) for o in outgoing)
        await super().send(outgoing)


class _PacedCrawls(_Crawls):
    def __init__(self, settings: CrawlSettings) -> None:
        self.settings = settings

    async def get_with_switch(self, crawl_id: str) -> tuple[CrawlRecord, bool]:
        record = CrawlRecord(crawl_id, CrawlStatus.RUNNING, self.settings, "shop.test", "", time.time())
        return record, False


def test_deferred_records_of_a_paced_host_are_sent_to_arrive_one_slot_apart(moto_server: Any) -> None:
    """Worker level, with the real pacing gate on the template's hosts table shape (moto): a batch of eight
    records on a host paced at 1 s, local wait 2 s. The records whose slots are within the wait are fetched;
    the others are re-sent to come back one slot apart (`not_before`), each landing (the moment it was sent
    plus its DelaySeconds) within the local wait before its own slot."""
    from seolens_core.crawl._pacing import PacingGate
    from seolens_core.settings import PolitenessSettings
    from tests.integration.test_host_pacing import create_hosts_table, dynamodb

    politeness = PolitenessSettings(
        initial_delay_ms=1000, initial_concurrency=8, max_concurrency=8, aimd=False, max_local_wait_s=2.0
    )
    settings = CrawlSettings(start_urls=(f"{SITE}/",), politeness=politeness, bfs_slack=None)
    log, sent, arrivals = _Log(), [], []  # type: ignore[var-annotated]

    async def main() -> float:
        async with dynamodb(moto_server) as client:
            gate = PacingGate(client, await create_hosts_table(client))
            claimed = asyncio.Event()
            services = _services(
                log,
                gate,  # type: ignore[arg-type]
                lambda s, p: _Fetcher(claimed, log),
                crawls=_PacedCrawls(settings),
                queue=_SendTimes(log, sent, arrivals),
            )
            worker = PageWorker(services)
            bodies = []
            for i in range(8):
                url = f"{SITE}/p{i}"
                bodies.append((f"m{i}", FrontierMessage("c1", url, url_key_hex(url), 1).to_json()))
            started = time.time()
            batch = worker.batch(bodies, None)
            await asyncio.gather(*(batch.handle(mid, body) for mid, body in bodies))
            return started

    started = asyncio.run(main())
    fetched = [u for kind, urls in log.events if kind == "fetch" for u in urls]
    assert 2 <= len(fetched) <= 4, log.events  # slots at +0, +1, +2 s (+3 s when the clock rounds)
    assert len(sent) == 8 - len(fetched) and {o.message.url for o in sent}.isdisjoint(
        SITE + u for u in fetched
    )
    come_back = sorted(o.not_before for o in sent)
    # Each comes back a local wait (2 s, less the 0.5 s margin for SQS's rounding) before its own slot: the
    # slots after the fetched ones, one step (1 s and the start guard) apart.
    for k, back in enumerate(come_back):
        slot = started + (len(fetched) + k) * 1.0
        assert slot - 2.0 <= back <= slot - 2.0 + 0.5 + 0.2 * (len(fetched) + k), (k, back - started)
    assert all(b - a >= 1.0 for a, b in itertools.pairwise(come_back)), come_back
    # SQS delays are whole seconds (and never 0 for a time ahead), so two may land in the same second; each
    # still lands before its own slot and within the local wait of it, where it waits for its turn.
    for k, landing in enumerate(sorted(arrivals)):
        slot = started + (len(fetched) + k) * 1.0
        assert slot - 2.0 - 0.5 <= landing < slot + 0.2 * (len(fetched) + k), (k, landing - started)


class _BudgetCrawls(_Crawls):
    """A crawl with a page budget: `reserve_pages` and the counters kept in memory, as the store keeps them."""

    def __init__(self, max_pages: int, fetched: int = 0, reserved: int = 0) -> None:
        self.settings = CrawlSettings(start_urls=(f"{SITE}/",), bfs_slack=None, max_pages=max_pages)
        self.counters = {"n_fetched": fetched, "n_reserved": reserved}
        self.reserve_calls = 0

    def _record(self, crawl_id: str) -> CrawlRecord:
        return CrawlRecord(
            crawl_id, CrawlStatus.RUNNING, self.settings, "shop.test", "", time.time(), dict(self.counters)
        )

    async def get_with_switch(self, crawl_id: str) -> tuple[CrawlRecord, bool]:
        return self._record(crawl_id), False

    async def get(self, crawl_id: str) -> CrawlRecord:
        return self._record(crawl_id)

    async def reserve_pages(self, crawl_id: str, wanted: int, max_pages: int) -> int:
        self.reserve_calls += 1
        granted = max(0, min(wanted, max_pages - self.counters["n_reserved"]))
        self.counters["n_reserved"] += granted
        return granted

    async def add_counters(self, crawl_id: str, deltas: dict[str, int], *, once: Any = None) -> bool:
        for name in ("n_fetched", "n_reserved"):
            self.counters[name] += deltas.get(name, 0)
        return True


def _budget_batch(
    crawls: _BudgetCrawls, paths: Sequence[str], budget_waits: int = 0
) -> tuple[_Log, list[Outgoing], Counter[str]]:
    log, sent = _Log(), []

    async def main() -> Counter[str]:
        worker = PageWorker(_granting(log, sent, crawls=crawls))
        bodies = []
        for i, path in enumerate(paths):
            url = SITE + path
            msg = FrontierMessage("c1", url, url_key_hex(url), 1, budget_waits=budget_waits)
            bodies.append((f"m{i}", msg.to_json()))
        batch = worker.batch(bodies, None)
        await asyncio.gather(*(batch.handle(mid, body) for mid, body in bodies))
        return batch.outcomes

    outcomes = asyncio.run(main())
    return log, sent, outcomes


def test_a_page_budget_is_never_passed_and_urls_over_it_wait_for_the_fetches_in_flight() -> None:
    """Six records granted slots, three pages of budget left: three fetch, three come back shortly (the budget's fetches are not counted yet: a unit could still come back)."""
    crawls = _BudgetCrawls(max_pages=5, fetched=2, reserved=2)
    log, sent, outcomes = _budget_batch(crawls, [f"/p{i}" for i in range(6)])
    fetched = [urls[0] for kind, urls in log.events if kind == "fetch"]
    assert len(fetched) == 3 and outcomes["fetched"] == 3 and outcomes["budget_in_flight"] == 3
    # Near its end, a unit a page (three calls), then one call that finds none left.
    assert crawls.reserve_calls == 4
    assert sorted(o.message.url.removeprefix(SITE) for o in sent) == sorted(
        {f"/p{i}" for i in range(6)} - set(fetched)
    )
    assert all(o.message.budget_waits == 1 for o in sent)
    assert crawls.counters == {"n_fetched": 5, "n_reserved": 5}


def test_over_a_spent_budget_urls_are_finished_and_unused_units_go_back() -> None:
    spent = _BudgetCrawls(max_pages=5, fetched=5, reserved=5)
    log, sent, outcomes = _budget_batch(spent, ["/a", "/b"])
    assert outcomes == Counter({"not_crawled_budget": 2}) and sent == []
    assert ("finish", ["/a", "/b"]) in log.events

    # Far from its end, a batch reserves a unit for each of its records at once; one record is a duplicate
    # copy and never asks: the unit it was reserved is given back with the batch's counters.
    crawls = _BudgetCrawls(max_pages=1_000)
    log, _, outcomes = _budget_batch(crawls, ["/a", "/a", "/b"])
    assert outcomes == Counter({"fetched": 2, "duplicate": 1}) and crawls.reserve_calls == 1
    assert crawls.counters == {"n_fetched": 2, "n_reserved": 2}


def test_a_url_waiting_on_units_longer_than_a_fetch_lease_is_finished_not_re_sent_for_ever() -> None:
    """Units outlive their fetch only when a worker died holding them: the wait is bounded, then reported."""
    stuck = _BudgetCrawls(max_pages=5, fetched=3, reserved=5)
    lease = SETTINGS.fetch.total_timeout_s + FETCH_LEASE_MARGIN_S
    _, sent, outcomes = _budget_batch(stuck, ["/a"], budget_waits=int(lease / BUDGET_RECHECK_S) + 1)
    assert outcomes == Counter({"not_crawled_budget": 1}) and sent == []
    _, sent, outcomes = _budget_batch(stuck, ["/a"], budget_waits=1)
    assert outcomes == Counter({"budget_in_flight": 1}) and sent[0].message.budget_waits == 2


def test_kept_slots_go_back_even_when_the_batchs_writes_fail() -> None:
    """The flush's writes fail while the pacing's settle is still writing the kept slots back: the batch
    fails (its records are retried) only once the slots are back, not with their writes left to a next
    invocation of a frozen container."""
    log = _Log()
    settled: list[str] = []

    class SlowSettle(_Pacing):
        async def settle(self) -> None:
            await asyncio.sleep(0.2)
            settled.append("back")

    class FailingResults(_Results):
        async def put_batch(self, crawl_id: str, part: str, sections: Any) -> str | None:
            raise ConnectionError("S3 is down")

    async def main() -> None:
        claimed = asyncio.Event()
        services = _services(log, SlowSettle(None, grant_all=True), lambda s, p: _Fetcher(claimed, log))
        services = dataclasses.replace(services, results=FailingResults())  # type: ignore[arg-type]
        msg = FrontierMessage("c1", SITE + "/a", url_key_hex(SITE + "/a"), 1)
        batch = PageWorker(services).batch([("m0", msg.to_json())], None)
        with pytest.raises(ConnectionError):
            await batch.handle("m0", msg.to_json())
        assert settled == ["back"]

    asyncio.run(main())


class _Blowing(_Fetcher):
    """`/boom` fails after its URL was leased (an exception, not a fetch result): its record fails."""

    async def fetch(
        self,
        url: str,
        *,
        headers: Any = None,
        method: str = "GET",
        may_send: Callable[[], Awaitable[bool]] | None = None,
    ) -> FetchResult:
        if url.endswith("/boom"):
            raise RuntimeError("the record fails after its lease")
        return await super().fetch(url, headers=headers, method=method, may_send=may_send)


def test_a_lease_whose_record_failed_goes_back_before_the_journal_that_would_make_it_done() -> None:
    log = _Log()
    finished: list[Any] = []

    async def main() -> list[Any]:
        claimed = asyncio.Event()
        services = _services(log, _Pacing(None, grant_all=True), lambda s, p: _Blowing(claimed, log))
        real_finish = services.urls.finish

        async def finish(done: Sequence[Any], now: float, journals: Any = (), leased: Any = ()) -> set[str]:
            finished.append(sorted(leased))
            return await real_finish(done, now, journals, leased)

        services.urls.finish = finish  # type: ignore[method-assign]
        bodies = [
            (f"m{i}", FrontierMessage("c1", SITE + p, url_key_hex(SITE + p), 1).to_json())
            for i, p in enumerate(["/ok", "/boom"])
        ]
        batch = PageWorker(services).batch(bodies, None)
        return await asyncio.gather(
            *(batch.handle(mid, body) for mid, body in bodies), return_exceptions=True
        )

    answers = asyncio.run(main())
    assert answers[0] == "fetched" and isinstance(answers[1], RuntimeError)
    kinds = [kind for kind, _ in log.events]
    boom = url_key_hex(SITE + "/boom")
    assert ("release", [boom]) in log.events and kinds.index("release") < kinds.index("finish"), log.events
    assert ("finish", ["/ok"]) in log.events
    assert finished == [[("c1", url_key_hex(SITE + "/ok"))]]  # done by the journal; /boom given back first


class _Linking(_Fetcher):
    """Pages with one link each."""

    async def fetch(self, url: str, **kwargs: Any) -> FetchResult:
        await super().fetch(url, **kwargs)
        body = b'<html><head><title>t</title></head><body><a href="/next">n</a></body></html>'
        return FetchResult(url, 200, {"content-type": "text/html"}, body)


def test_the_journal_and_the_result_part_hold_the_same_rows_without_their_crawl_id() -> None:
    log = _Log()
    journals: list[Journal] = []
    parts: list[Any] = []

    async def main() -> None:
        claimed = asyncio.Event()
        services = _services(log, _Pacing(None, grant_all=True), lambda s, p: _Linking(claimed, log))
        real_finish = services.urls.finish

        async def finish(done: Sequence[Any], now: float, written: Any = (), leased: Any = ()) -> set[str]:
            journals.extend(written)
            return await real_finish(done, now, written, leased)

        async def put_batch(crawl_id: str, part: str, sections: Any) -> str | None:
            parts.append((crawl_id, sections))
            return None

        services.urls.finish = finish  # type: ignore[method-assign]
        services.results.put_batch = put_batch  # type: ignore[method-assign]
        bodies = [
            (f"m{i}", FrontierMessage("c1", SITE + p, url_key_hex(SITE + p), 1).to_json())
            for i, p in enumerate(["/a", "/b"])
        ]
        batch = PageWorker(services).batch(bodies, None)
        await asyncio.gather(*(batch.handle(mid, body) for mid, body in bodies))

    asyncio.run(main())
    [journal] = journals
    [(crawl_id, sections)] = parts
    body = journal.body()
    assert crawl_id == "c1" and len(sections["pages"]) == 2 and len(sections["links"]) == 2
    assert body["pages"] == sections["pages"]
    assert decode_links(body["link_columns"]) == sections["links"]
    assert all("crawl_id" not in row for row in [*sections["pages"], *sections["links"]])
