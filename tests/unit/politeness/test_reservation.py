"""Slot reservation: spacing, concurrency, pauses, local wait, leases and their expiry; `acquire`."""

from __future__ import annotations

import asyncio
import itertools
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seolens_core.politeness import (
    AimdSettings,
    BlockReason,
    DeferReason,
    Deferred,
    Granted,
    HostPoliteness,
    InMemoryHostPacing,
    Observation,
    Reservation,
    acquire,
    release,
    reserve,
    reserve_group,
    slide,
)
from seolens_core.politeness._reservation import UNSPACED_SLACK_S, SlotRequest

T0 = 1_700_000_000.0


def host(delay_ms: int = 100, concurrency: int = 2, **kw: object) -> HostPoliteness:
    return replace(HostPoliteness(delay_ms=delay_ms, concurrency=concurrency), **kw)  # type: ignore[arg-type]


def test_grants_are_spaced_by_delay_and_limited_by_concurrency() -> None:
    s = host(100, 2)
    s, a = reserve(s, T0, "a", 30, 5)
    s, b = reserve(s, T0, "b", 30, 5)
    s, c = reserve(s, T0, "c", 30, 5)
    assert a == Granted(start_at=T0, lease_id="a", lease_expires_at=T0 + 30)
    assert isinstance(b, Granted)
    assert (b.start_at, b.lease_expires_at) == pytest.approx((T0 + 0.1, T0 + 30.1))
    assert isinstance(c, Deferred)
    assert c.reason is DeferReason.CONCURRENCY
    assert c.until == pytest.approx(T0 + 1.0)
    assert s.next_allowed_at == pytest.approx(T0 + 0.2)
    s = release(s, "a", Observation(status=200, ttfb_ms=10), T0 + 0.5)
    s, c = reserve(s, T0 + 0.5, "c", 30, 5)
    assert isinstance(c, Granted) and c.start_at == T0 + 0.5


def test_concurrency_deferral_never_later_than_first_lease_expiry() -> None:
    s = host(0, 1, leases={"x": T0 + 0.3})
    _, r = reserve(s, T0, "y", 30, 5, busy_retry_s=2.0)
    assert r == Deferred(until=T0 + 0.3, reason=DeferReason.CONCURRENCY)


def test_pacing_beyond_local_wait_is_deferred_to_the_slot() -> None:
    s = host(2000, 4, next_allowed_at=T0 + 1.5)
    after, r = reserve(s, T0, "a", 30, 1.0)
    assert r == Deferred(until=T0 + 1.5, reason=DeferReason.PACING)
    assert after == s
    _, r = reserve(s, T0, "a", 30, 1.5)
    assert isinstance(r, Granted) and r.start_at == T0 + 1.5


@pytest.mark.parametrize(
    ("reason", "expected"),
    [
        (BlockReason.RETRY_AFTER, DeferReason.BLOCKED),
        (BlockReason.ESCALATION, DeferReason.BLOCKED),
        (BlockReason.SUSPENDED, DeferReason.SUSPENDED),
    ],
)
def test_blocked_host_defers_until_block_ends(reason: BlockReason, expected: DeferReason) -> None:
    s = host(blocked_until=T0 + 3, block_reason=reason)
    _, r = reserve(s, T0, "a", 30, 10)
    assert r == Deferred(until=T0 + 3, reason=expected)
    _, r = reserve(s, T0 + 3, "a", 30, 10)
    assert isinstance(r, Granted) and r.start_at == T0 + 3


def test_lead_never_starts_inside_a_block_or_before_now() -> None:
    s = host(0, 2, blocked_until=T0 + 0.01, block_reason=BlockReason.RETRY_AFTER)
    _, r = reserve(s, T0, "a", 30, 1, lead_s=0.02)
    assert isinstance(r, Granted) and r.start_at == T0 + 0.02


def test_expired_leases_free_their_slot() -> None:
    s = host(0, 1)
    s, a = reserve(s, T0, "crashed", 2.0, 5)
    assert isinstance(a, Granted)
    _, r = reserve(s, T0 + 1.9, "b", 2.0, 5)
    assert isinstance(r, Deferred)
    s, r = reserve(s, T0 + 2.0, "b", 2.0, 5)
    assert isinstance(r, Granted)
    assert set(s.leases) == {"b"}


def test_same_lease_twice_is_the_same_grant() -> None:
    s, first = reserve(host(100, 2), T0, "a", 30, 5)
    again_state, again = reserve(s, T0 + 0.01, "a", 30, 5)
    assert again == first
    assert again_state == s


def test_release_of_unknown_or_expired_lease_only_observes() -> None:
    s = release(host(), "ghost", Observation(status=500, ttfb_ms=5), T0)
    assert (s.window.n, s.window.errors, dict(s.leases)) == (1, 1, {})


def test_reserve_does_not_mutate_input() -> None:
    leases = {"a": T0 - 1, "b": T0 + 10}
    s = host(leases=leases)
    reserve(s, T0, "c", 30, 5)
    assert leases == {"a": T0 - 1, "b": T0 + 10}


@pytest.mark.parametrize("bad", [{"lease_ttl_s": 0}, {"max_local_wait_s": -1}, {"lead_s": -0.1}])
def test_reserve_validates(bad: dict[str, float]) -> None:
    args = {"lease_ttl_s": 30.0, "max_local_wait_s": 1.0, "lead_s": 0.0} | bad
    with pytest.raises(ValueError):
        reserve(host(), T0, "a", args["lease_ttl_s"], args["max_local_wait_s"], lead_s=args["lead_s"])


ops = st.lists(
    st.tuples(
        st.sampled_from(["reserve", "release", "release_429", "release_slow", "slide"]),
        st.integers(0, 4),  # worker id
        st.floats(0, 0.4),  # time step
    ),
    max_size=80,
)


@given(ops)
@settings(max_examples=150, deadline=None)
def test_property_spacing_and_concurrency_hold_under_any_interleaving(
    steps: list[tuple[str, int, float]],
) -> None:
    cfg = AimdSettings(window=5)
    s = HostPoliteness.initial(cfg)
    now = T0
    starts: dict[str, tuple[float, int]] = {}  # slot (lease + n) -> (start, delay_ms at grant)
    held: dict[int, str] = {}
    for n, (op, worker, step) in enumerate(steps):
        now += step
        lease = f"w{worker}"
        if op == "reserve":
            live_before, limit = len(s.live_leases(now)), s.concurrency
            s, r = reserve(s, now, lease, 1.0, 0.5)
            if isinstance(r, Granted) and worker not in held:
                assert live_before < limit
                assert len(s.live_leases(now)) == live_before + 1
                held[worker] = f"{lease}-{n}"
                starts[held[worker]] = (r.start_at, s.delay_ms)
            elif isinstance(r, Deferred):
                assert r.until >= now
        elif op == "slide":  # the holder woke late: its slot, unused, moves to now if nothing came after it
            slot = held.get(worker)
            before = starts.get(slot, (0.0, 0))[0] if slot else 0.0
            s, moved = slide(s, now, lease, before, 1.0)
            if moved is not None:
                assert slot is not None and moved.start_at == now > before
                starts[slot] = (moved.start_at, s.delay_ms)
        else:
            obs = {
                "release": Observation(status=200, ttfb_ms=10),
                "release_429": Observation(status=429),
                "release_slow": Observation(status=200, ttfb_ms=900),
            }[op]
            s = release(s, lease, obs, now, cfg)
            held.pop(worker, None)
        assert len(s.live_leases(now)) <= max(s.concurrency, cfg.max_concurrency)
    ordered = sorted(starts.values())
    for (first, delay_ms), (second, _) in itertools.pairwise(ordered):
        assert second - first >= delay_ms / 1000 - 1e-9


class FakeClock:
    def __init__(self, now: float) -> None:
        self.now = now
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_acquire_waits_for_the_slot() -> None:
    clock = FakeClock(T0)
    store = InMemoryHostPacing(clock, AimdSettings(initial_delay_ms=300, initial_concurrency=2))

    async def scenario() -> list[float]:
        starts = []
        for lease in ("a", "b"):
            r = await acquire(
                store, "h", lease, lease_ttl_s=30, max_local_wait_s=1, clock=clock, sleep=clock.sleep
            )
            assert isinstance(r, Granted)
            starts.append(clock())
        return starts

    assert asyncio.run(scenario()) == [T0, pytest.approx(T0 + 0.3)]


def test_acquire_slides_a_slot_it_would_start_late_when_no_later_slot_was_granted() -> None:
    clock = FakeClock(T0)
    store = InMemoryHostPacing(clock, AimdSettings(initial_delay_ms=300, initial_concurrency=2))
    overslept = []

    async def oversleep(seconds: float) -> None:
        clock.now += seconds + (0.05 if not overslept else 0.0)  # one stall of 50 ms
        overslept.append(seconds)

    async def scenario() -> None:
        await store.reserve("h", "first", lease_ttl_s=30, max_local_wait_s=1)
        r = await acquire(
            store, "h", "late", lease_ttl_s=30, max_local_wait_s=1, clock=clock, sleep=oversleep
        )
        # the slot at T0+0.3 was missed by 50 ms: it moved to the wake-up time instead of being lost
        assert isinstance(r, Granted) and r.start_at == pytest.approx(T0 + 0.35) == clock.now
        state = await store.get("h")
        assert state is not None and set(state.leases) == {"first", "late"}
        assert state.next_allowed_at == pytest.approx(T0 + 0.65)

    asyncio.run(scenario())


def test_acquire_gives_back_a_late_slot_when_a_later_one_was_granted() -> None:
    clock = FakeClock(T0)
    store = InMemoryHostPacing(clock, AimdSettings(initial_delay_ms=300, initial_concurrency=3))

    async def oversleep(seconds: float) -> None:
        if "after" not in ((await store.get("h")) or HostPoliteness(0, 1)).leases:
            await store.reserve("h", "after", lease_ttl_s=30, max_local_wait_s=1)  # granted T0+0.6
        clock.now += seconds + 0.05

    async def scenario() -> None:
        await store.reserve("h", "first", lease_ttl_s=30, max_local_wait_s=1)
        r = await acquire(
            store,
            "h",
            "late",
            lease_ttl_s=30,
            max_local_wait_s=1,
            clock=clock,
            sleep=oversleep,
            max_late_retries=1,
        )
        assert isinstance(r, Deferred)
        state = await store.get("h")
        assert state is not None and set(state.leases) == {"first", "after"}

    asyncio.run(scenario())


def test_slide_moves_only_the_latest_grant_and_only_later() -> None:
    s, _ = reserve(host(100, 3), T0, "a", 30, 5, guard_s=0.01)
    s, b = reserve(s, T0, "b", 30, 5, guard_s=0.01)
    assert isinstance(b, Granted) and b.start_at == pytest.approx(T0 + 0.11)
    late = T0 + 0.15
    moved_state, moved = slide(s, late, "b", b.start_at, 30, lead_s=0.02, guard_s=0.01)
    assert moved == Granted(start_at=late + 0.02, lease_id="b", lease_expires_at=late + 30.02, slack_s=0.01)
    assert moved_state.next_allowed_at == pytest.approx(late + 0.02 + 0.11)
    assert moved_state.last_start_at == late + 0.02
    # "a" is not the latest grant: moving it would come closer than the delay to "b"
    assert slide(s, late, "a", T0, 30)[1] is None
    # not late: nothing to move
    assert slide(s, T0 + 0.05, "b", b.start_at, 30)[1] is None
    # a block written meanwhile: the slot goes back instead
    blocked = replace(s, blocked_until=T0 + 5)
    assert slide(blocked, late, "b", b.start_at, 30)[1] is None
    # a lease that expired or was never granted
    assert slide(s, late, "zz", b.start_at, 30)[1] is None
    assert slide(s, T0 + 31, "b", b.start_at, 30)[1] is None


def test_slide_keeps_a_raised_delay_from_the_new_start() -> None:
    s, a = reserve(host(100, 2), T0, "a", 30, 5)
    assert isinstance(a, Granted)
    raised = replace(s, delay_ms=400)  # a window closed meanwhile and backed off
    moved_state, moved = slide(raised, T0 + 0.03, "a", T0, 30)
    assert moved is not None and moved_state.next_allowed_at == pytest.approx(T0 + 0.43)


def test_guard_widens_spacing_and_is_granted_as_slack() -> None:
    s, a = reserve(host(100, 2), T0, "a", 30, 5, guard_s=0.01)
    _, b = reserve(s, T0, "b", 30, 5, guard_s=0.01)
    assert isinstance(a, Granted) and isinstance(b, Granted)
    assert a.slack_s == 0.01
    assert b.start_at - a.start_at == pytest.approx(0.11)


def test_a_host_without_a_delay_is_not_spaced_only_bounded_by_concurrency() -> None:
    """The guard protects a gap the host asked for: a delay-0 host gets no spacing (15 ms of guard would cap
    it at 66 requests/s and make every late wake-up slide its slot) and a generous start slack."""
    s, a = reserve(host(0, 2), T0, "a", 30, 5, guard_s=0.015)
    s, b = reserve(s, T0, "b", 30, 5, guard_s=0.015)
    s, c = reserve(s, T0, "c", 30, 5, guard_s=0.015)
    assert isinstance(a, Granted) and isinstance(b, Granted)
    assert a.start_at == b.start_at == T0 and s.next_allowed_at == T0
    assert a.slack_s == b.slack_s == UNSPACED_SLACK_S
    assert isinstance(c, Deferred) and c.reason is DeferReason.CONCURRENCY
    _, group = reserve_group(
        host(0, 3), T0, [SlotRequest(x, 30, 5) for x in "xyz"], guard_s=0.015, lead_s=0.02
    )
    assert [g.start_at for g in group if isinstance(g, Granted)] == [T0 + 0.02] * 3
    # Once a back-off gives the host a delay, the guard is back between its starts.
    s, d = reserve(host(50, 2), T0, "d", 30, 5, guard_s=0.015)
    _, e = reserve(s, T0, "e", 30, 5, guard_s=0.015)
    assert isinstance(d, Granted) and isinstance(e, Granted)
    assert e.start_at - d.start_at == pytest.approx(0.065) and d.slack_s == 0.015


class _Clock:
    now = 1000.0

    def __call__(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += seconds


def _second_slot(
    *, recheck_lead_s: float | None = None, wake_early_s: float = 0.0, read_s: float | None = None
) -> tuple[_Clock, InMemoryHostPacing, Reservation]:
    """B holds the first slot of a host with a 1 s delay; A acquires the next one (at 1001.0). With `read_s`,
    each read of the host takes that long and its start is noted in `store.reads`."""
    clock = _Clock()
    store = InMemoryHostPacing(clock, AimdSettings(initial_delay_ms=1000), busy_retry_s=1.0)
    if read_s is not None:
        original_get, reads = store.get, []

        async def slow_get(host: str) -> HostPoliteness | None:
            reads.append(clock.now)
            clock.now += read_s
            return await original_get(host)

        store.get = slow_get  # type: ignore[method-assign]
        store.reads = reads  # type: ignore[attr-defined]

    async def main() -> Reservation:
        first = await store.reserve("h", "b", lease_ttl_s=30, max_local_wait_s=5)
        assert isinstance(first, Granted)
        return await acquire(
            store,
            "h",
            "a",
            lease_ttl_s=30,
            max_local_wait_s=5,
            clock=clock,
            sleep=clock.sleep,
            recheck_lead_s=recheck_lead_s,
            wake_early_s=wake_early_s,
        )

    return clock, store, asyncio.run(main())


def test_acquire_rechecks_a_slot_granted_ahead_and_yields_to_a_block_written_meanwhile() -> None:
    clock = _Clock()
    store = InMemoryHostPacing(clock, AimdSettings(initial_delay_ms=1000), busy_retry_s=1.0)
    reads: list[float] = []
    original_get = store.get

    async def get(host: str) -> HostPoliteness | None:
        reads.append(clock.now)
        return await original_get(host)

    store.get = get  # type: ignore[method-assign]

    async def sleep(seconds: float) -> None:
        if clock.now < 1000.5 <= clock.now + seconds:  # B's 429 lands while A waits for its slot
            await store.release("h", "b", Observation(status=429, retry_after="30"))
        clock.now += seconds

    async def main() -> Reservation:
        await store.reserve("h", "b", lease_ttl_s=30, max_local_wait_s=5)
        return await acquire(
            store, "h", "a", lease_ttl_s=30, max_local_wait_s=5, clock=clock, sleep=sleep, recheck_lead_s=0.05
        )

    answer = asyncio.run(main())
    assert isinstance(answer, Deferred) and answer.reason is DeferReason.BLOCKED
    assert answer.until >= 1030.0
    assert reads == [pytest.approx(1001.0 - 0.05)]  # one read, shortly before the slot


def test_acquire_without_a_block_starts_on_time_after_the_recheck() -> None:
    clock, _, answer = _second_slot(recheck_lead_s=0.05)
    assert isinstance(answer, Granted) and clock.now == pytest.approx(answer.start_at)


def test_acquire_rechecks_before_waking_its_caller_early() -> None:
    """The re-read is due `recheck_lead_s` before the caller's wake-up, not before the slot: a read that
    takes most of its lead still answers before the caller must prepare its request."""
    clock, store, answer = _second_slot(recheck_lead_s=0.05, wake_early_s=0.05, read_s=0.04)
    assert isinstance(answer, Granted)
    assert store.reads == [pytest.approx(1001.0 - 0.05 - 0.05)]  # type: ignore[attr-defined]
    assert clock.now == pytest.approx(answer.start_at - 0.05)  # woken on time, not late by the read


def test_acquire_can_wake_its_caller_a_little_before_the_slot() -> None:
    clock, _, answer = _second_slot(wake_early_s=0.015)
    assert isinstance(answer, Granted) and clock.now == pytest.approx(answer.start_at - 0.015)
