"""PacingGate: the worker's view of per-host politeness, on top of the shared HostPacingStore."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, overload

from botocore.exceptions import BotoCoreError, ClientError

from seolens_core.adapters._gather import CallGroup, SingleFlight
from seolens_core.adapters.host_pacing import HostPacingStore
from seolens_core.crawl._ports import PacingPort, Ticket, Wait
from seolens_core.fetch import Fetcher, FetchResult
from seolens_core.fetch._client import FetchErrorKind
from seolens_core.politeness import (
    RELEASE_WINDOW_S,
    AimdSettings,
    CoalescingPacing,
    DeferReason,
    Deferred,
    Observation,
    PacingContention,
    Reservation,
    WindowReport,
    acquire,
)
from seolens_core.settings import CrawlSettings, PolitenessSettings

_log = logging.getLogger(__name__)

LEASE_MARGIN_S = 30.0
WAKE_EARLY_S = 0.05
"""A granted slot wakes its worker this much early: DNS, the pooled connection and the request are ready
when the slot starts, and only the request head waits for it (in the fetcher's send gate)."""
START_GUARD_S = 0.015
"""Added to every spacing: a request may reach the host this much later than its slot (timer wake-up,
connection set-up on a loaded machine) without coming closer than the delay to the next one. 10 ms was
seen to be too little (0.482 s between starts at a 0.5 s Crawl-delay with 2 busy cores)."""
COME_BACK_MARGIN_S = 0.5
"""A re-sent message arrives within this of the time asked (SQS delays are whole seconds, rounded)."""
BUSY_POLL_S = 0.3
"""Longest pause between local re-asks while every slot of a host is leased and no lease of this
container on that host comes back (the holders are in other containers)."""
BOOK_GATHER_S = 0.005
"""Pacing deferrals of one host made within this of each other book their turns in one write."""
KEEP_S = 0.1
"""How long a slot returned on a host without spacing waits for this container's next request to that host
before it goes back to the host's item (see `PacingGate`)."""
KEEP_VIEW_S = 0.25
"""A kept slot serves another request only if this container read the host's item this recently; the request
then reaches the wire within as long again (its slot's on-time window), so within half a second of a reading
that showed no block and no delay: as a granted slot's request does (`UNSPACED_SLACK_S * ON_TIME_SHARE`)."""


def come_back_at(deferred: Deferred, now: float, max_local_wait_s: float) -> float:
    """When a deferred message should be received again (a re-send arrives within half a second of it,
    see `Outgoing.delay_s`).

    A pacing deferral names the slot it could not wait for; the message comes back when that slot is
    within local-wait reach, so some worker is always waiting for the next slot and none goes unused
    (coming back at the slot would leave it empty for the re-delivery latency). A concurrency deferral
    names the time a slot is likely free: the message comes back a little before and waits there. A
    block comes back just after its end, never inside it.
    """
    if deferred.reason is DeferReason.PACING:
        return max(now, deferred.until - max_local_wait_s + COME_BACK_MARGIN_S)
    if deferred.reason is DeferReason.CONCURRENCY:
        return max(now, deferred.until - COME_BACK_MARGIN_S)
    return deferred.until + COME_BACK_MARGIN_S


def turn_out_of_reach(
    outlook: tuple[float, float] | None, ahead: int, now: float, deadline: float
) -> Deferred | None:
    """For a waiter finding every slot leased: when its turn comes at the earliest, if only after
    `deadline` (None: within reach, or unknown).

    `outlook` is the host's next start and spacing as last seen; the `ahead` waiters of this container
    queued before it take one slot each first (other containers' waiters only push the turn later). A
    waiter that cannot be served within its local wait leaves at once instead of polling until the
    deadline: no re-asks for nothing, and the batch's waiters no longer leave together in a burst.
    """
    if outlook is None:
        return None
    next_start, step = outlook
    turn = max(next_start, now) + ahead * step
    if turn <= deadline:
        return None
    return Deferred(until=turn, reason=DeferReason.PACING)


def aimd_settings(p: PolitenessSettings) -> AimdSettings:
    return AimdSettings(
        window=p.window,
        error_threshold=p.error_threshold,
        latency_factor=p.latency_factor,
        healthy_p95_ms=p.healthy_p95_ms,
        max_delay_ms=p.max_delay_ms,
        recovery_step_ms=p.recovery_step_ms,
        initial_delay_ms=p.initial_delay_ms,
        initial_concurrency=p.initial_concurrency,
        max_concurrency=p.max_concurrency,
        enabled=p.aimd,
        retry_after_cap_s=p.retry_after_cap_s,
        backoff_factor=p.backoff_factor,
        min_backoff_step_ms=p.min_backoff_step_ms,
        baseline_alpha=p.baseline_alpha,
        block_base_s=p.block_base_s,
        block_cap_s=p.block_cap_s,
        quiet_reset_s=p.quiet_reset_s,
        incident_cooldown_s=p.incident_cooldown_s,
    )


@dataclass(eq=False, slots=True)
class _Held:
    """A lease this container holds: its store, lifetime and expiry, and what the requests already made in
    its slot saw (a kept slot serves several, see `PacingGate`)."""

    pacing: CoalescingPacing
    ttl: float
    expires_at: float
    observations: list[Observation] = field(default_factory=list)

    def outlives(self, now: float, lease_ttl_s: float) -> bool:
        """The lease outlasts a fetch that needs `lease_ttl_s`, less half the margin, from `now`."""
        return now + lease_ttl_s - LEASE_MARGIN_S / 2 <= self.expires_at


@dataclass(eq=False, slots=True)
class _Kept:
    """A slot whose request is done, kept for this container's next request to the same host."""

    ticket: Ticket
    held: _Held
    timer: asyncio.TimerHandle | None = None


class PacingGate:
    """Reserves a slot before each fetch and reports the outcome after it (one store per AIMD setting set).

    On a host without spacing, a slot whose request went well is kept for `keep_s` and handed to this
    container's next request to the host, while this container's reading of the host's item is fresh
    (`KEEP_VIEW_S`) and shows no delay and no block: no release and no reserve write in between. Every
    request still holds a lease, so the host never sees more requests at once than its concurrency, and
    starts within half a second of a reading of the item, as a granted slot's does. The requests' outcomes
    reach the item with the slot's release. A distress answer is never kept and returns the host's kept
    slots at once; whatever is kept goes back at the end of each batch (`settle`).
    """

    def __init__(
        self,
        client: Any,
        table: str,
        *,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
        release_window_s: float = RELEASE_WINDOW_S,
        keep_s: float = KEEP_S,
    ) -> None:
        """`release_window_s`: returns of one origin within this long of the first share one write (0: off);
        concurrent reservations of one origin always share one (see `CoalescingPacing`). `keep_s`: how long
        a slot of a host without spacing waits to serve this container's next request to it (0: off)."""
        self._client = client
        self._release_window_s = release_window_s
        self._keep_s = keep_s
        self._table = table
        self._clock = clock
        self._sleep = sleep
        self._stores: dict[AimdSettings, HostPacingStore] = {}
        self._coalesced: dict[AimdSettings, CoalescingPacing] = {}
        self._floors: dict[str, int] = {}
        self._floor_writes: SingleFlight[tuple[str, int], None] = SingleFlight()
        self._leases: dict[str, _Held] = {}
        self._rng = random.Random()
        self._queued: dict[str, list[object]] = {}
        """Per origin, in arrival order: this container's callers in `acquire` (a waiter's place in line)."""
        self.busy_polls = 0
        """Local re-asks made while every slot of a host was leased (each one UpdateItem, plus a GetItem
        when still full)."""
        self._loop: asyncio.AbstractEventLoop | None = None
        self._freed: dict[str, asyncio.Condition] = {}
        self._turns: dict[str, asyncio.Lock] = {}
        """Per origin: notified (one waiter) when this container returns a lease, so a waiter re-asks
        when a slot has actually come back instead of polling the table."""
        self._timeline: dict[str, list[WindowReport]] = {}
        self._seen_window: dict[str, float] = {}
        self._returns_at: dict[str, list[float]] = {}
        """Per origin: when this container's pacing deferrals come back (those still away are spread)."""
        self._bookings: dict[tuple[HostPacingStore, str, str], CallGroup[float, float]] = {}
        self._store_of: dict[CoalescingPacing, HostPacingStore] = {}
        self._kept: dict[tuple[CoalescingPacing, str], list[_Kept]] = {}
        """Per store and origin: slots kept for the next request (see the class)."""
        self._returning: set[asyncio.Task[None]] = set()
        self.reused = 0
        """Requests served by a kept slot (no reservation of their own)."""

    def store(self, settings: CrawlSettings) -> HostPacingStore:
        aimd = aimd_settings(settings.politeness)
        store = self._stores.get(aimd)
        if store is None:
            store = HostPacingStore(
                self._client,
                self._table,
                settings=aimd,
                clock=self._clock,
                sleep=self._sleep,
                start_guard_s=START_GUARD_S,
            )
            self._stores[aimd] = store
            pacing = CoalescingPacing(store, release_window_s=self._release_window_s)
            self._coalesced[aimd] = pacing
            self._store_of[pacing] = store
        return store

    def coalesced(self, settings: CrawlSettings) -> CoalescingPacing:
        """The store of these settings behind this container's coalescing of reserves and releases."""
        self.store(settings)
        return self._coalesced[aimd_settings(settings.politeness)]

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
        store = self.store(settings)
        pacing = self.coalesced(settings)
        floor_ms = round((floor_s or 0.0) * 1000)
        if self._floors.get(origin) != floor_ms:
            await self._floor_writes.run((origin, floor_ms), lambda: self._set_floor(store, origin, floor_ms))
        lease_ttl_s = settings.fetch.total_timeout_s + LEASE_MARGIN_S
        kept = self._reuse(pacing, origin, lease_ttl_s)
        if kept is not None:
            if on_granted is not None:
                on_granted()
            return kept
        # 64 random bits: unique among a host's few dozen leases, and half the bytes of a full uuid in the host's
        # item (its leases map is rewritten, returned and billed by size on every pacing write).
        lease_id = uuid.uuid4().hex[:16]
        deadline = self._clock() + settings.politeness.max_local_wait_s

        async def ask() -> Reservation:
            return await acquire(
                pacing,
                origin,
                lease_id,
                lease_ttl_s=lease_ttl_s,
                max_local_wait_s=max(0.0, deadline - self._clock()),
                clock=self._clock,
                sleep=self._sleep,
                recheck_lead_s=store.read_lead_s,
                wake_early_s=WAKE_EARLY_S,
                on_granted=on_granted,
            )

        # The host's next start only ever moves later: one seen beyond the local wait means a reservation would
        # fail for sure. Take a turn in the line without that write.
        futile = turn_out_of_reach(store.outlook(origin), 0, self._clock(), deadline)
        reservation = futile if futile is not None else await ask()
        # All slots leased: the holders are usually waiting for their start or finishing a quick fetch, so
        # a slot frees within the local wait; re-asking beats a re-delivery. One waiter of this container
        # re-asks at a time (the others queue behind it): every re-ask is a conditional write on the host's
        # item, and ten waiters polling apart would cost ten times the calls for the same free slot. A
        # waiter whose turn is out of local-wait reach leaves at once (`turn_out_of_reach`).
        line = self._queued.setdefault(origin, [])
        place = object()
        line.append(place)
        try:
            while isinstance(reservation, Deferred) and reservation.reason is DeferReason.CONCURRENCY:
                ahead = line.index(place)
                futile = turn_out_of_reach(store.outlook(origin), ahead, self._clock(), deadline)
                if futile is not None:
                    reservation = futile
                    break
                pause = self._rng.uniform(BUSY_POLL_S / 2, BUSY_POLL_S)
                if self._clock() + pause > min(deadline, reservation.until):
                    break
                try:
                    async with asyncio.timeout(max(0.0, deadline - pause - self._clock())):
                        await self._poll_turn(origin).acquire()
                except TimeoutError:
                    break
                try:
                    self.busy_polls += 1
                    await self._wait_for_slot(origin, pause)
                    reservation = await ask()
                finally:
                    self._poll_turn(origin).release()
        finally:
            line.remove(place)
        if isinstance(reservation, Deferred):
            if reservation.reason is DeferReason.PACING:
                until = await self._in_line(store, origin, crawl_id, reservation, settings)
                return Wait(until=until, reason="pacing")
            until = come_back_at(reservation, self._clock(), settings.politeness.max_local_wait_s)
            return Wait(until=until, reason=reservation.reason.value)
        self._leases[lease_id] = _Held(pacing, lease_ttl_s, reservation.lease_expires_at)
        return Ticket(
            origin=origin, lease_id=lease_id, start_at=reservation.start_at, slack_s=reservation.slack_s
        )

    async def _in_line(
        self, store: HostPacingStore, origin: str, crawl_id: str, deferred: Deferred, settings: CrawlSettings
    ) -> float:
        """When a pacing deferral comes back: its turn in the host's line of deferred requests, shared by
        every container (`HostPacingStore.book_returns`); the deferrals of this container made together book
        their turns in one write. If the line cannot be written, this container's own returns are spread."""
        group = self._bookings.get((store, origin, crawl_id))
        if group is None:

            async def book(earliest: list[float]) -> tuple[float, ...]:
                return await store.book_returns(origin, max(earliest), len(earliest), line=crawl_id)

            group = self._bookings[(store, origin, crawl_id)] = CallGroup(book, BOOK_GATHER_S)
        wait = settings.politeness.max_local_wait_s
        try:
            turn = await group.call(deferred.until)
        except (ClientError, BotoCoreError, PacingContention):
            until = come_back_at(deferred, self._clock(), wait)
            return self._behind_earlier_returns(origin, until, store.outlook(origin))
        return come_back_at(Deferred(until=turn, reason=DeferReason.PACING), self._clock(), wait)

    def _behind_earlier_returns(
        self, origin: str, until: float, outlook: tuple[float, float] | None
    ) -> float:
        """A pacing deferral comes back at least one slot after the latest one of this container still away for
        the host (the fallback of `_in_line`): all of them named the same next slot, and came back together
        for one of them to take it and the others to be sent back again."""
        now = self._clock()
        away = [t for t in self._returns_at.get(origin, ()) if t > now]
        if away and outlook is not None:
            until = max(until, max(away) + outlook[1])
        away.append(until)
        self._returns_at[origin] = away
        return until

    async def _set_floor(self, store: HostPacingStore, origin: str, floor_ms: int) -> None:
        await store.set_floor(origin, floor_ms)
        self._floors[origin] = floor_ms

    def idle(self, origin: str, settings: CrawlSettings) -> bool:
        """As last seen by this container: a slot on `origin` would start at once (no spacing to wait)."""
        return self.store(settings).idle(origin)

    async def _wait_for_slot(self, origin: str, timeout: float) -> None:
        """Until this container returns a lease on `origin` (one waiter per return) or `timeout`."""
        if self._sleep is not asyncio.sleep:  # an injected clock: keep to it
            await self._sleep(timeout)
            return
        freed = self._conditions().setdefault(origin, asyncio.Condition())
        async with freed:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(freed.wait(), timeout)

    def _conditions(self) -> dict[str, asyncio.Condition]:
        """Conditions bind to an event loop; a warm container may run each invocation on a new one."""
        self._bind_loop()
        return self._freed

    def _poll_turn(self, origin: str) -> asyncio.Lock:
        """Held by the one waiter of this container that re-asks for a slot on `origin`."""
        self._bind_loop()
        return self._turns.setdefault(origin, asyncio.Lock())

    def _bind_loop(self) -> None:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._loop, self._freed, self._turns = loop, {}, {}
            # Slots kept on an earlier invocation's loop (its timers died with it) go back now.
            stale, self._kept, self._returning = self._kept, {}, set()
            for slots in stale.values():
                for kept in slots:
                    kept.timer = None
                    self._send_back(kept)

    async def _slot_freed(self, origin: str) -> None:
        freed = self._conditions().get(origin)
        if freed is not None:
            async with freed:
                freed.notify(1)

    async def release(self, ticket: Ticket, result: FetchResult, waf: bool, now: float) -> None:
        held = self._leases.pop(ticket.lease_id)
        observation: Observation | None
        if result.error is not None and result.error.kind is FetchErrorKind.SSRF_BLOCKED:
            observation = None  # nothing reached the host
        else:
            observation = Observation(
                status=result.status,
                ttfb_ms=result.ttfb_ms,
                network_error=result.error is not None,
                retry_after=result.headers.get("retry-after"),
                waf=waf,
            )
        if observation is not None and self._keepable(held, ticket.origin, observation):
            held.observations.append(observation)
            self._keep(_Kept(ticket, held))
            await self._slot_freed(ticket.origin)
            return
        if observation is not None and observation.is_distress:
            self._return_kept(held.pacing, ticket.origin)  # the host said "slow down": nothing kept serves it
        state = await held.pacing.release(
            ticket.origin, ticket.lease_id, observation, carried=held.observations
        )
        await self._slot_freed(ticket.origin)
        self._note_window(ticket.origin, state.last_window)

    async def give_back(self, ticket: Ticket) -> None:
        """Return a slot unused (the worker could not start on time): no observation, the lease is freed
        (with what earlier requests in it saw, if it was a kept slot)."""
        held = self._leases.pop(ticket.lease_id)
        await held.pacing.release(ticket.origin, ticket.lease_id, None, carried=held.observations)
        await self._slot_freed(ticket.origin)

    async def slide(self, ticket: Ticket) -> Ticket | None:
        """A slot the worker missed (it could not start on time), moved to the earliest start when no later
        slot was granted; else given back unused (None)."""
        held = self._leases[ticket.lease_id]
        moved = await held.pacing.slide(ticket.origin, ticket.lease_id, ticket.start_at, lease_ttl_s=held.ttl)
        if moved is None:
            await self.give_back(ticket)
            return None
        held.expires_at = moved.lease_expires_at
        return Ticket(ticket.origin, ticket.lease_id, moved.start_at, moved.slack_s)

    async def settle(self) -> None:
        """Send every kept slot back now and wait for the writes: at the end of an invocation (a frozen
        container must hold no slot other containers could use)."""
        self._bind_loop()
        for pacing, origin in list(self._kept):
            self._return_kept(pacing, origin)
        if self._returning:
            await asyncio.gather(*self._returning)

    def _reuse(self, pacing: CoalescingPacing, origin: str, lease_ttl_s: float) -> Ticket | None:
        """A kept slot of `origin` for the next request, as a slot starting now (see the class), if the host
        has no spacing as freshly read; else the host's kept slots go back. Only a lease that outlives the
        request's fetch (`lease_ttl_s` less half the margin) serves it."""
        self._bind_loop()
        slots = self._kept.get((pacing, origin))
        if not slots:
            return None
        if not self._store_of[pacing].unspaced(origin, KEEP_VIEW_S):
            self._return_kept(pacing, origin)
            return None
        now = self._clock()
        lasting = [k for k in slots if k.held.outlives(now, lease_ttl_s)]
        if not lasting:
            return None
        kept = lasting[-1]
        slots.remove(kept)
        if kept.timer is not None:
            kept.timer.cancel()
        self._leases[kept.ticket.lease_id] = kept.held
        self.reused += 1
        return Ticket(origin, kept.ticket.lease_id, start_at=now, slack_s=2 * KEEP_VIEW_S)

    def _keepable(self, held: _Held, origin: str, observation: Observation) -> bool:
        """A slot may serve another request: nothing went wrong in it, the host has no spacing as freshly
        read, and its lease outlives one more fetch with half the margin to spare."""
        return (
            self._keep_s > 0
            and not observation.is_error
            and held.outlives(self._clock(), held.ttl)
            and self._store_of[held.pacing].unspaced(origin, KEEP_VIEW_S)
        )

    def _keep(self, kept: _Kept) -> None:
        self._bind_loop()
        self._kept.setdefault((kept.held.pacing, kept.ticket.origin), []).append(kept)
        kept.timer = asyncio.get_running_loop().call_later(self._keep_s, self._expire, kept)

    def _expire(self, kept: _Kept) -> None:
        slots = self._kept.get((kept.held.pacing, kept.ticket.origin), [])
        if kept in slots:
            slots.remove(kept)
            self._send_back(kept)

    def _return_kept(self, pacing: CoalescingPacing, origin: str) -> None:
        for kept in self._kept.pop((pacing, origin), []):
            self._send_back(kept)

    def _send_back(self, kept: _Kept) -> None:
        if kept.timer is not None:
            kept.timer.cancel()
        task = asyncio.get_running_loop().create_task(self._release_kept(kept))
        self._returning.add(task)
        task.add_done_callback(self._returning.discard)

    async def _release_kept(self, kept: _Kept) -> None:
        *carried, last = kept.held.observations
        origin = kept.ticket.origin
        try:
            state = await kept.held.pacing.release(origin, kept.ticket.lease_id, last, carried=carried)
        except (ClientError, BotoCoreError, PacingContention) as exc:
            # As for a worker that died holding it: the lease expires (`lease_ttl_s`) and the slot is free again.
            _log.warning("a kept slot could not be returned", extra={"origin": origin, "error": repr(exc)})
            return
        await self._slot_freed(origin)
        self._note_window(origin, state.last_window)

    def _note_window(self, origin: str, window: WindowReport | None) -> None:
        """Keep each closed window this container sees once (another container may see it too: the
        reader de-duplicates on (origin, closed_at))."""
        if window is None or window.closed_at <= self._seen_window.get(origin, 0.0):
            return
        self._seen_window[origin] = window.closed_at
        self._timeline.setdefault(origin, []).append(window)

    def drain_timeline(self) -> dict[str, list[WindowReport]]:
        """The host timeline points (closed AIMD windows) noted since the last drain, per origin."""
        drained, self._timeline = self._timeline, {}
        return drained


LATE_RETRIES = 3
ON_TIME_SHARE = 0.5
FINAL_APPROACH_S = 0.004
"""The last moments before a slot are slept blocking the event loop (see `_final_approach`)."""


def _start_by(ticket: Ticket) -> float:
    """The latest a request may reach the wire in `ticket`'s slot (the rest of the slack covers the way)."""
    return ticket.start_at + ticket.slack_s * ON_TIME_SHARE


async def _final_approach(wait: float, sleep: Callable[[float], Awaitable[object]]) -> None:
    """Sleep the last few milliseconds before a slot without giving the event loop back: a coroutine
    woken by the loop waits behind every callback that became ready meanwhile (other records' responses
    and parsing), and a wake-up 8 ms late misses a slot whose slack is 15 ms; a blocking sleep wakes
    within a millisecond (the GIL is released meanwhile). An injected clock keeps to its own sleep."""
    if sleep is asyncio.sleep:
        time.sleep(wait)
    else:
        await sleep(wait)


@dataclass(frozen=True, slots=True)
class PacedFetch:
    """A request made in a granted slot: release `ticket` with `result` once the outcome is known."""

    ticket: Ticket
    result: FetchResult


@dataclass(frozen=True, slots=True)
class Unclaimed:
    """A slot was granted but the caller's claim on the URL failed: nothing was sent, the slot went back."""


@overload
async def paced_fetch(
    pacing: PacingPort,
    fetcher: Fetcher,
    url: str,
    host: str,
    settings: CrawlSettings,
    floor_s: float | None,
    *,
    clock: Callable[[], float],
    sleep: Callable[[float], Awaitable[object]],
    claim: None = None,
    crawl_id: str,
    before_request: Callable[[], Awaitable[object]] | None = None,
) -> PacedFetch | Wait: ...


@overload
async def paced_fetch(
    pacing: PacingPort,
    fetcher: Fetcher,
    url: str,
    host: str,
    settings: CrawlSettings,
    floor_s: float | None,
    *,
    clock: Callable[[], float],
    sleep: Callable[[float], Awaitable[object]],
    claim: Callable[[], Awaitable[bool]],
    crawl_id: str,
    before_request: Callable[[], Awaitable[object]] | None = None,
) -> PacedFetch | Wait | Unclaimed: ...


async def paced_fetch(
    pacing: PacingPort,
    fetcher: Fetcher,
    url: str,
    host: str,
    settings: CrawlSettings,
    floor_s: float | None,
    *,
    clock: Callable[[], float],
    sleep: Callable[[float], Awaitable[object]],
    claim: Callable[[], Awaitable[bool]] | None = None,
    crawl_id: str,
    before_request: Callable[[], Awaitable[object]] | None = None,
) -> PacedFetch | Wait | Unclaimed:
    """Fetch `url` in a pacing slot of `host` (every request to a host goes through here: pages and
    sitemaps; robots.txt has its own schedule).

    `claim` (the exclusive right to fetch this URL) starts as soon as a slot is granted and runs while the
    worker waits for the slot; the request is sent only if it succeeded. Claiming after the grant, not
    before, means a URL that must come back later (no slot within the local wait) never took a claim it
    would have to give back: two writes saved per deferral. On a host that is idle (as last seen) the
    claim starts with the reservation instead: the slot would start before a later claim could land.

    The worker wakes `WAKE_EARLY_S` before the slot, the fetcher gets the connection ready and then waits in
    its send gate until the slot starts. A request that would reach the wire later than half the slot's
    slack would squeeze the gap to the next worker's slot below the delay: the fetcher abandons it unsent
    (the limit is checked right before the request head is written); the slot slides to the earliest start
    if nobody holds a later one, else it is given back unused and another one is taken. The other half
    of the slack covers the path from that check to the host.

    `before_request` is awaited before each request, with the slot granted and the URL claimed.
    """
    claimed: asyncio.Future[bool] | None = None

    def start_claim() -> None:
        nonlocal claimed
        if claim is not None and claimed is None:
            claimed = asyncio.ensure_future(claim())

    if pacing.idle(host, settings):
        # An idle host's slot starts one write's round trip after the grant: a claim started only then would
        # make the request miss it. Claim alongside the reservation (a deferral then gives the claim back).
        start_claim()
    slot: Ticket | None = None
    try:
        for attempt in range(LATE_RETRIES):
            if slot is None:
                try:
                    acquired = await pacing.acquire(
                        host, settings, floor_s, clock(), start_claim, crawl_id=crawl_id
                    )
                except PacingContention:  # many workers on one host item: come back shortly, never fail
                    return Wait(until=clock() + 1.0, reason="contention")
                if not isinstance(acquired, Ticket):
                    return acquired
                slot = acquired
                start_claim()
            if claimed is not None and not await claimed:
                await pacing.give_back(slot)
                slot = None
                return Unclaimed()
            if before_request is not None:
                await before_request()
            start_by = _start_by(slot)

            async def at_start(start_at: float = slot.start_at, start_by: float = start_by) -> bool:
                # Called with the connection ready and the request built: wait out the slot here, at the
                # last moment, so set-up time is never taken from the slot.
                if (wait := start_at - clock()) > FINAL_APPROACH_S:
                    await sleep(wait - FINAL_APPROACH_S)
                if (wait := start_at - clock()) > 0:
                    await _final_approach(wait, sleep)
                return clock() <= start_by

            if clock() <= start_by:
                result = await fetcher.fetch(url, method="GET", may_send=at_start)
                if result.error is None or result.error.kind is not FetchErrorKind.LATE_START:
                    return PacedFetch(slot, result)
            if attempt + 1 < LATE_RETRIES:
                slot = await pacing.slide(slot)
            else:
                await pacing.give_back(slot)
                slot = None
        return Wait(until=clock() + 1.0, reason="late")
    except BaseException:
        if slot is not None:  # failed or cancelled while holding a slot nobody will use
            with contextlib.suppress(Exception):
                await asyncio.shield(pacing.give_back(slot))
        raise
    finally:
        if claimed is not None and not claimed.done():
            # A deferral: the caller gives a claim that landed back, so it must know how the claim ended.
            with contextlib.suppress(Exception):
                await asyncio.wait([claimed])
