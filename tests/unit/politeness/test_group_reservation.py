"""Coalesced reservation: the pure k-slot decision (`reserve_group`, `release_group`) with a fake clock,
and `CoalescingPacing` grouping one event loop's concurrent calls over the in-memory store."""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Sequence
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seolens_core.politeness import (
    RESERVE_GATHER_S,
    AimdSettings,
    BlockReason,
    CoalescingPacing,
    DeferReason,
    Deferred,
    Granted,
    HostPoliteness,
    InMemoryHostPacing,
    Observation,
    Reservation,
    SlotRequest,
    release,
    release_group,
    reserve,
    reserve_group,
    spacing_s,
)

T0 = 1_700_000_000.0
HOST = "https://shop.example:443"


def near(x: object) -> object:
    """Equal to within 0.1 ms (pytest.approx's default relative tolerance is kilo-seconds at epoch T0)."""
    return pytest.approx(x, abs=1e-4)


def host(delay_ms: int = 100, concurrency: int = 4, **kw: object) -> HostPoliteness:
    return replace(HostPoliteness(delay_ms=delay_ms, concurrency=concurrency), **kw)  # type: ignore[arg-type]


def asks(n: int, wait: float = 5.0, ttl: float = 30.0) -> list[SlotRequest]:
    return [SlotRequest(f"l{i}", ttl, wait) for i in range(n)]


# --- the pure k-slot decision ----------------------------------------------------------------------


def test_k_consecutive_slots_one_step_apart() -> None:
    state, answers = reserve_group(host(100, 4), T0, asks(3), guard_s=0.01)
    assert all(isinstance(a, Granted) for a in answers)
    starts = [a.start_at for a in answers if isinstance(a, Granted)]
    assert starts == near([T0, T0 + 0.11, T0 + 0.22])
    assert state.next_allowed_at == near(T0 + 0.33)
    assert set(state.leases) == {"l0", "l1", "l2"}
    assert state.leases["l2"] == near(T0 + 0.22 + 30)


def test_paced_host_group_starts_at_the_stored_next_start() -> None:
    _, answers = reserve_group(host(100, 4, next_allowed_at=T0 + 0.5), T0, asks(2), lead_s=0.02)
    assert [a.start_at for a in answers if isinstance(a, Granted)] == near([T0 + 0.5, T0 + 0.6])


def test_more_callers_than_free_slots_defers_the_rest_for_concurrency() -> None:
    leased = host(50, 3, leases={"other": T0 + 20})
    state, answers = reserve_group(leased, T0, asks(5))
    granted = [a for a in answers if isinstance(a, Granted)]
    deferred = [a for a in answers if isinstance(a, Deferred)]
    assert len(granted) == 2 and len(deferred) == 3
    assert all(d.reason is DeferReason.CONCURRENCY for d in deferred)
    assert len(state.leases) == 3 == state.concurrency  # never more leases than the concurrency


def test_horizon_cuts_the_group() -> None:
    # 200 ms steps, 0.5 s local wait: slots at +0, +0.2, +0.4 fit; +0.6 does not.
    state, answers = reserve_group(host(200, 8), T0, asks(5, wait=0.5))
    kinds = [type(a).__name__ for a in answers]
    assert kinds == ["Granted", "Granted", "Granted", "Deferred", "Deferred"]
    assert isinstance(answers[3], Deferred) and answers[3].reason is DeferReason.PACING
    assert answers[3].until == near(T0 + 0.6)
    assert state.next_allowed_at == near(T0 + 0.6)  # deferrals take no slot


def test_shortest_horizon_gets_the_earliest_slot() -> None:
    patient = SlotRequest("patient", 30, 5.0)
    hurried = SlotRequest("hurried", 30, 0.1)
    _, answers = reserve_group(host(200, 8), T0, [patient, hurried])
    assert isinstance(answers[1], Granted) and answers[1].start_at == T0  # answers in request order
    assert isinstance(answers[0], Granted) and answers[0].start_at == near(T0 + 0.2)


def test_blocked_host_defers_the_whole_group() -> None:
    blocked = host(100, 4, blocked_until=T0 + 30, block_reason=BlockReason.RETRY_AFTER)
    state, answers = reserve_group(blocked, T0, asks(4, wait=60))
    assert answers == tuple(Deferred(until=T0 + 30, reason=DeferReason.BLOCKED) for _ in range(4))
    assert state.leases == {}


def test_expired_leases_free_their_slots_for_the_group() -> None:
    crashed = host(0, 2, leases={"dead1": T0 - 1, "dead2": T0})
    state, answers = reserve_group(crashed, T0, asks(2))
    assert all(isinstance(a, Granted) for a in answers)
    assert set(state.leases) == {"l0", "l1"}


def test_group_lease_ids_must_be_distinct() -> None:
    with pytest.raises(ValueError):
        reserve_group(host(), T0, [SlotRequest("a", 30, 1), SlotRequest("a", 30, 1)])


@settings(max_examples=200, deadline=None)
@given(
    delay_ms=st.integers(0, 2000),
    concurrency=st.integers(1, 10),
    held=st.integers(0, 10),
    ahead=st.floats(0, 3),
    waits=st.lists(st.floats(0, 3), min_size=1, max_size=12),
)
def test_group_equals_one_reserve_per_caller_and_keeps_the_limits(
    delay_ms: int, concurrency: int, held: int, ahead: float, waits: list[float]
) -> None:
    leases = {f"h{i}": T0 + 10 for i in range(held)}
    start = host(delay_ms, concurrency, leases=leases, next_allowed_at=T0 + ahead)
    requests = [SlotRequest(f"l{i}", 30, w) for i, w in enumerate(waits)]
    state, answers = reserve_group(start, T0, requests, guard_s=0.01)
    # Same as `reserve` folded in horizon order.
    expect = start
    for r in sorted(requests, key=lambda r: r.max_local_wait_s):
        expect, _ = reserve(expect, T0, r.lease_id, 30, r.max_local_wait_s, guard_s=0.01)
    assert state == expect
    starts = sorted(a.start_at for a in answers if isinstance(a, Granted))
    assert len(state.leases) <= max(concurrency, held)
    assert all(b - a >= spacing_s(delay_ms, 0.01) - 1e-6 for a, b in itertools.pairwise(starts))
    assert all(
        a.start_at - T0 <= r.max_local_wait_s
        for a, r in zip(answers, requests, strict=True)
        if isinstance(a, Granted)
    )


def test_release_group_folds_every_return_in_order() -> None:
    s = host(100, 4, leases={"a": T0 + 30, "b": T0 + 30, "c": T0 + 30})
    obs = [("a", Observation(status=200, ttfb_ms=20)), ("b", None), ("c", Observation(status=500, ttfb_ms=5))]
    grouped = release_group(s, obs, T0 + 1)
    one_by_one = s
    for lease, o in obs:
        one_by_one = release(one_by_one, lease, o, T0 + 1)
    assert grouped == one_by_one
    assert grouped.leases == {} and (grouped.window.n, grouped.window.errors) == (2, 1)


# --- CoalescingPacing over the in-memory store ----------------------------------------------------


class Clock:
    def __init__(self) -> None:
        self.now = T0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(("gather_s", "groups"), [(RESERVE_GATHER_S, [10]), (0.0, [1, 9])])
def test_concurrent_reserves_of_one_loop_share_one_group_call(gather_s: float, groups: list[int]) -> None:
    async def main() -> None:
        clock = Clock()
        store = InMemoryHostPacing(clock, AimdSettings(initial_delay_ms=100, initial_concurrency=8))
        pacing = CoalescingPacing(store, gather_s=gather_s)
        answers = await asyncio.gather(
            *(pacing.reserve(HOST, f"l{i}", lease_ttl_s=30, max_local_wait_s=2) for i in range(10))
        )
        # The first caller waits for the others asking with it, and all share one write. Without that
        # wait it finds nobody queued and goes alone; the nine that queued behind its write share the next.
        assert store.group_sizes == groups
        assert (pacing.reserve_writes, pacing.reserved) == (len(groups), 10)
        granted = sorted(a.start_at for a in answers if isinstance(a, Granted))
        assert len(granted) == 8  # concurrency 8
        assert granted == near([T0 + 0.1 * i for i in range(8)])
        deferred = [a for a in answers if isinstance(a, Deferred)]
        assert [d.reason for d in deferred] == [DeferReason.CONCURRENCY] * 2

    asyncio.run(main())


def test_releases_within_the_window_share_one_call() -> None:
    async def main() -> None:
        clock = Clock()
        store = InMemoryHostPacing(clock, AimdSettings(initial_delay_ms=0, initial_concurrency=8))
        pacing = CoalescingPacing(store, release_window_s=0.05)
        for i in range(5):
            await pacing.reserve(HOST, f"l{i}", lease_ttl_s=30, max_local_wait_s=2)

        async def give(i: int) -> HostPoliteness:
            await asyncio.sleep(0.005 * i)
            return await pacing.release(HOST, f"l{i}", Observation(status=200, ttfb_ms=10))

        states = await asyncio.gather(*(give(i) for i in range(5)))
        assert store.release_sizes == [5]
        assert all(s.leases == {} and s.window.n == 5 for s in states)

    asyncio.run(main())


def test_a_distress_return_is_not_held_back_and_takes_the_waiting_ones_along() -> None:
    async def main() -> None:
        clock = Clock()
        store = InMemoryHostPacing(clock, AimdSettings(initial_delay_ms=0, initial_concurrency=8))
        pacing = CoalescingPacing(store, release_window_s=5.0)
        for i in range(3):
            await pacing.reserve(HOST, f"l{i}", lease_ttl_s=30, max_local_wait_s=2)
        t = time.monotonic()
        # A 429 alone: written at once.
        state = await pacing.release(HOST, "l0", Observation(status=429, retry_after="30"))
        assert state.blocked_until == T0 + 30 and time.monotonic() - t < 0.5
        # A healthy return waits for company; a 429 arriving meanwhile flushes both at once.
        healthy = asyncio.create_task(pacing.release(HOST, "l1", Observation(status=200, ttfb_ms=5)))
        await asyncio.sleep(0.01)
        limited = await pacing.release(HOST, "l2", Observation(status=503, retry_after="60"))
        assert (await healthy) == limited
        assert limited.blocked_until == T0 + 60 and limited.leases == {}
        assert time.monotonic() - t < 0.5 and store.release_sizes == [1, 2]

    asyncio.run(main())


def test_a_cancelled_caller_gives_its_slot_back() -> None:
    async def main() -> None:
        clock = Clock()
        store = InMemoryHostPacing(clock, AimdSettings(initial_delay_ms=0, initial_concurrency=4))
        pacing = CoalescingPacing(store, release_window_s=0.0)
        tasks = [
            asyncio.create_task(pacing.reserve(HOST, f"l{i}", lease_ttl_s=30, max_local_wait_s=2))
            for i in range(3)
        ]
        await asyncio.sleep(0)  # all three queued; the first one's write in flight
        tasks[2].cancel()
        results = await asyncio.gather(*tasks, return_exceptions=True)
        assert isinstance(results[2], asyncio.CancelledError)
        for _ in range(5):
            await asyncio.sleep(0)
        state = await store.get(HOST)
        assert state is not None and set(state.leases) <= {"l0", "l1"}

    asyncio.run(main())


def test_an_error_of_the_group_call_reaches_every_caller() -> None:
    class Broken(InMemoryHostPacing):
        async def reserve_many(self, host: str, requests: Sequence[SlotRequest]) -> tuple[Reservation, ...]:
            await asyncio.sleep(0)
            raise RuntimeError("table gone")

    async def main() -> None:
        pacing = CoalescingPacing(Broken(Clock()))
        results = await asyncio.gather(
            *(pacing.reserve(HOST, f"l{i}", lease_ttl_s=30, max_local_wait_s=2) for i in range(4)),
            return_exceptions=True,
        )
        assert all(isinstance(r, RuntimeError) for r in results)

    asyncio.run(main())
