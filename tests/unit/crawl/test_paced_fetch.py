"""paced_fetch: a slot is used only if the request head can leave on time; late slots go back unused."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from seolens_core.crawl._pacing import LATE_RETRIES, PacedFetch, paced_fetch
from seolens_core.crawl._ports import Ticket, Wait
from seolens_core.fetch import FetchError, FetchErrorKind, FetchResult
from seolens_core.politeness import PacingContention, WindowReport
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

    async def acquire(
        self, origin: str, settings: CrawlSettings, floor_s: float | None, now: float
    ) -> Ticket | Wait:
        slot = self.slots.pop(0)
        if isinstance(slot, Exception):
            raise slot
        return slot

    async def release(self, ticket: Ticket, result: FetchResult, waf: bool, now: float) -> None:
        raise AssertionError("paced_fetch never releases: the caller does, with the outcome")

    async def give_back(self, ticket: Ticket) -> None:
        self.given_back.append(ticket.lease_id)

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


def _run(pacing: FakePacing, fetcher: FakeFetcher, clock: Clock) -> PacedFetch | Wait:
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
        )
    )


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
