"""paced_fetch: a slot is used only if the request head can leave on time; a late slot slides (when the
store can move it) or goes back unused."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

import pytest

from seolens_core.crawl._pacing import (
    LATE_RETRIES,
    PacedFetch,
    Unclaimed,
    come_back_at,
    paced_fetch,
    turn_out_of_reach,
)
from seolens_core.crawl._ports import Ticket, Wait
from seolens_core.fetch import FetchError, FetchErrorKind, FetchResult
from seolens_core.politeness import DeferReason, Deferred, PacingContention, WindowReport
from seolens_core.settings import CrawlSettings

SETTINGS = CrawlSettings(start_urls=("http://example.com/",))


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += max(seconds, 0.0)


@dataclass
class FakePacing:
    clock: Clock
    slots: list[Ticket | Wait | Exception]
    given_back: list[str] = field(default_factory=list)
    moves: list[float | None] = field(default_factory=list)
    """What each `slide` answers: the moved start, or None (the store could not: given back)."""
    slid: list[str] = field(default_factory=list)
    granted_at: list[float] = field(default_factory=list)
    host_idle: bool = False

    def idle(self, origin: str, settings: CrawlSettings) -> bool:
        return self.host_idle

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
        slot = self.slots.pop(0)
        if isinstance(slot, Exception):
            raise slot
        if isinstance(slot, Ticket) and on_granted is not None:
            self.granted_at.append(self.clock.now)
            on_granted()
            await asyncio.sleep(0)  # the real gate waits for the slot here: the claim runs meanwhile
        return slot

    async def release(self, ticket: Ticket, result: FetchResult, waf: bool, now: float) -> None:
        raise AssertionError("paced_fetch never releases: the caller does, with the outcome")

    async def give_back(self, ticket: Ticket) -> None:
        self.given_back.append(ticket.lease_id)

    async def settle(self) -> None:
        return None

    async def slide(self, ticket: Ticket) -> Ticket | None:
        self.slid.append(ticket.lease_id)
        moved = self.moves.pop(0) if self.moves else None
        if moved is None:
            await self.give_back(ticket)
            return None
        return _ticket(ticket.lease_id, moved, ticket.slack_s)

    def drain_timeline(self) -> dict[str, list[WindowReport]]:
        return {}


@dataclass
class FakeFetcher:
    """Spends `ready_after[i]` seconds getting the i-th connection ready, then asks may_send."""

    clock: Clock
    ready_after: list[float]
    sent: list[float] = field(default_factory=list)
    asked: int = 0

    async def fetch(
        self,
        url: str,
        *,
        headers: object = None,
        method: str = "GET",
        may_send: Callable[[], Awaitable[bool]] | None = None,
    ) -> FetchResult:
        self.clock.now += self.ready_after[self.asked]
        self.asked += 1
        if may_send is not None and not await may_send():
            return FetchResult(url=url, error=FetchError(FetchErrorKind.LATE_START, "late"))
        self.sent.append(self.clock.now)
        return FetchResult(url=url, status=200, sent_at=self.clock.now)


def _ticket(lease: str, start_at: float, slack: float = 0.02) -> Ticket:
    return Ticket(origin="http://h", lease_id=lease, start_at=start_at, slack_s=slack)


def _run(
    pacing: FakePacing,
    fetcher: FakeFetcher,
    clock: Clock,
    claim: Callable[[], Awaitable[bool]] | None = None,
) -> PacedFetch | Wait | Unclaimed:
    return asyncio.run(
        paced_fetch(
            pacing,
            fetcher,  # type: ignore[arg-type]
            "http://h/",
            "http://h",
            SETTINGS,
            0.5,
            clock=clock,
            sleep=clock.sleep,
            claim=claim,  # type: ignore[arg-type]
            crawl_id="c1",
        )
    )


class Claims:
    """A claim on the URL that answers `granted` and records when it was taken."""

    def __init__(self, clock: Clock, granted: bool) -> None:
        self.clock, self.granted, self.taken_at = clock, granted, list[float]()

    async def __call__(self) -> bool:
        self.taken_at.append(self.clock.now)
        return self.granted


def test_waits_for_the_slot_and_sends_on_time() -> None:
    clock = Clock()
    pacing = FakePacing(clock, [_ticket("a", 1000.4)])
    fetcher = FakeFetcher(clock, [0.005])
    got = _run(pacing, fetcher, clock)
    assert isinstance(got, PacedFetch) and got.ticket.lease_id == "a"
    # the connection was ready early; the request head waited for the slot in the send gate
    assert fetcher.sent == [1000.4] and pacing.given_back == []


def test_a_connection_ready_after_half_the_slack_is_abandoned_and_the_slot_given_back() -> None:
    clock = Clock()
    pacing = FakePacing(clock, [_ticket("a", 1000.0), _ticket("b", 1001.0)])
    fetcher = FakeFetcher(clock, [0.011, 0.002])  # 11 ms > half of the 20 ms slack
    got = _run(pacing, fetcher, clock)
    assert isinstance(got, PacedFetch) and got.ticket.lease_id == "b"
    assert pacing.given_back == ["a"]
    assert fetcher.sent == [1001.0]


def test_exactly_half_the_slack_is_still_on_time() -> None:
    clock = Clock()
    pacing = FakePacing(clock, [_ticket("a", 1000.0, slack=0.5)])
    fetcher = FakeFetcher(clock, [0.25])
    assert isinstance(_run(pacing, fetcher, clock), PacedFetch)


def test_a_wake_up_already_late_does_not_even_connect() -> None:
    clock = Clock()
    clock.now = 1000.02  # the slot started 20 ms ago
    pacing = FakePacing(clock, [_ticket("a", 1000.0), _ticket("b", 1000.5)])
    fetcher = FakeFetcher(clock, [0.0])
    got = _run(pacing, fetcher, clock)
    assert isinstance(got, PacedFetch) and got.ticket.lease_id == "b"
    assert fetcher.asked == 1 and pacing.given_back == ["a"]


def test_gives_up_after_repeated_late_starts_with_a_short_wait() -> None:
    clock = Clock()
    pacing = FakePacing(clock, [_ticket(str(i), 1000.0 + i) for i in range(LATE_RETRIES)])
    fetcher = FakeFetcher(clock, [1.5] * LATE_RETRIES)
    got = _run(pacing, fetcher, clock)
    assert isinstance(got, Wait) and got.reason == "late"
    assert got.until > clock.now and fetcher.sent == []
    assert pacing.given_back == [str(i) for i in range(LATE_RETRIES)]


def test_a_deferral_and_contention_pass_through_as_waits() -> None:
    clock = Clock()
    deferred = Wait(until=1010.0, reason="blocked")
    assert _run(FakePacing(clock, [deferred]), FakeFetcher(clock, []), clock) == deferred
    got = _run(FakePacing(clock, [PacingContention("busy")]), FakeFetcher(clock, []), clock)
    assert isinstance(got, Wait) and got.reason == "contention"


def test_a_late_slot_that_can_slide_is_used_at_its_new_start_without_a_new_reservation() -> None:
    clock = Clock()
    pacing = FakePacing(clock, [_ticket("a", 1000.0)], moves=[1000.05])
    fetcher = FakeFetcher(clock, [0.011, 0.002])  # late for 1000.0, on time for the moved start
    got = _run(pacing, fetcher, clock)
    assert isinstance(got, PacedFetch) and got.ticket == _ticket("a", 1000.05)
    assert pacing.slid == ["a"] and pacing.given_back == [] and pacing.slots == []
    assert fetcher.sent == [1000.05]


def test_a_slot_still_held_when_retries_run_out_is_given_back() -> None:
    clock = Clock()
    pacing = FakePacing(clock, [_ticket("a", 1000.0)], moves=[1000.0 + i for i in range(1, LATE_RETRIES + 1)])
    fetcher = FakeFetcher(clock, [1.5] * LATE_RETRIES)
    got = _run(pacing, fetcher, clock)
    assert isinstance(got, Wait) and got.reason == "late"
    assert pacing.given_back == ["a"] and fetcher.sent == []
    assert len(pacing.slid) == LATE_RETRIES - 1  # the last late slot goes straight back


def test_the_claim_is_taken_once_when_the_slot_is_granted_and_the_request_follows() -> None:
    clock = Clock()
    pacing = FakePacing(clock, [_ticket("a", 1000.0), _ticket("b", 1001.0)])
    fetcher = FakeFetcher(clock, [0.011, 0.002])  # late for a: a second slot is taken
    claims = Claims(clock, granted=True)
    got = _run(pacing, fetcher, clock, claims)
    assert isinstance(got, PacedFetch) and got.ticket.lease_id == "b"
    assert claims.taken_at == [pacing.granted_at[0]]  # at the first grant, before its wait; never again
    assert fetcher.sent == [1001.0]


def test_a_refused_claim_sends_nothing_and_gives_the_slot_back() -> None:
    clock = Clock()
    pacing = FakePacing(clock, [_ticket("a", 1000.4)])
    fetcher = FakeFetcher(clock, [0.0])
    got = _run(pacing, fetcher, clock, Claims(clock, granted=False))
    assert isinstance(got, Unclaimed)
    assert fetcher.asked == 0 and pacing.given_back == ["a"]


def test_no_slot_no_claim() -> None:
    clock = Clock()
    claims = Claims(clock, granted=True)
    deferred = Wait(until=1010.0, reason="pacing")
    got = _run(FakePacing(clock, [deferred]), FakeFetcher(clock, []), clock, claims)
    assert got == deferred and claims.taken_at == []


@pytest.mark.parametrize(
    ("reason", "until", "expected"),
    [
        (DeferReason.PACING, 1005.0, 1003.5),  # half a second inside the 2 s local-wait reach of the slot
        (DeferReason.PACING, 1001.0, 1000.0),  # already within reach: at once
        (DeferReason.CONCURRENCY, 1003.0, 1002.5),  # a little before a slot is likely free
        (DeferReason.CONCURRENCY, 1000.2, 1000.0),
        (DeferReason.BLOCKED, 1030.0, 1030.5),  # never inside a block
        (DeferReason.SUSPENDED, 1030.0, 1030.5),
    ],
)
def test_a_deferred_message_comes_back_where_a_rounded_sqs_delay_still_lands_usefully(
    reason: DeferReason, until: float, expected: float
) -> None:
    assert come_back_at(Deferred(until=until, reason=reason), 1000.0, 2.0) == expected


@pytest.mark.parametrize(
    ("outlook", "ahead", "expected"),
    [
        (None, 5, None),  # a host never seen: no estimate, keep waiting
        ((1001.0, 0.5), 0, None),  # next start within reach
        ((1001.0, 0.5), 2, None),  # 1002.0 is the deadline itself: reachable
        ((1001.0, 0.5), 3, Deferred(until=1002.5, reason=DeferReason.PACING)),
        (
            (1003.0, 0.5),
            0,
            Deferred(until=1003.0, reason=DeferReason.PACING),
        ),  # even the next start is too far
        ((999.0, 0.5), 4, None),  # a next start in the past counts from now: 1002.0
        ((1000.5, 0.0), 50, None),  # no spacing: only concurrency binds, slots free at any moment
    ],
)
def test_a_waiter_whose_turn_is_beyond_its_local_wait_is_told_when_it_comes(
    outlook: tuple[float, float] | None, ahead: int, expected: Deferred | None
) -> None:
    assert turn_out_of_reach(outlook, ahead, 1000.0, 1002.0) == expected


def test_on_an_idle_host_the_claim_starts_with_the_reservation() -> None:
    clock = Clock()
    pacing = FakePacing(clock, [_ticket("a", 1000.02)], host_idle=True)
    claims = Claims(clock, granted=True)
    got = _run(pacing, FakeFetcher(clock, [0.0]), clock, claims)
    assert isinstance(got, PacedFetch) and len(claims.taken_at) == 1


def test_an_idle_hosts_deferral_still_reports_how_the_claim_ended() -> None:
    clock = Clock()
    claims = Claims(clock, granted=True)
    deferred = Wait(until=1010.0, reason="concurrency")
    got = _run(FakePacing(clock, [deferred], host_idle=True), FakeFetcher(clock, []), clock, claims)
    assert got == deferred and claims.taken_at == [1000.0]  # taken: the caller gives it back
