"""Reservation of a fetch slot on a host: pure decision on the shared state, leases with expiry."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

from ._controller import DEFAULT_SETTINGS, observe
from ._observation import Observation
from ._settings import AimdSettings
from ._state import BlockReason, HostPoliteness


class DeferReason(StrEnum):
    """Why no slot was granted."""

    BLOCKED = "blocked"
    """Retry-After or escalation pause (BlockQueueUntil)."""
    SUSPENDED = "suspended"
    """Retry-After beyond the cap: skip the host with a finding rather than wait."""
    CONCURRENCY = "concurrency"
    """All slots are leased."""
    PACING = "pacing"
    """The next start is further away than the caller is willing to wait locally (SetDelay)."""


@dataclass(frozen=True, slots=True)
class Granted:
    """Start the request at `start_at`, not before and not after `start_at + slack_s`, under `lease_id`.

    Starting later than the slack would bring this start closer than the delay to the next slot's;
    such a slot must be released unused (see `acquire`).
    """

    start_at: float
    lease_id: str
    lease_expires_at: float
    slack_s: float = 0.0


@dataclass(frozen=True, slots=True)
class Deferred:
    """Do not fetch now; `until` is the earliest time worth asking again (a visibility timeout)."""

    until: float
    reason: DeferReason


Reservation = Granted | Deferred


UNSPACED_SLACK_S = 1.0
"""How late a slot on a host without a delay may still start: nothing has to keep a gap to it (only the
concurrency limit holds, by leases); bounded so that a slot granted before a back-off set a delay is not
used long after."""


def spacing_s(delay_ms: int, guard_s: float) -> float:
    """Time between two slots' starts: the delay plus the start guard; none without a delay (the guard only
    protects a gap the host asked for, and spacing a delay-0 host by it would cap it at 1/guard requests/s)."""
    return delay_ms / 1000 + guard_s if delay_ms > 0 else 0.0


def start_slack_s(delay_ms: int, guard_s: float) -> float:
    """How late a granted slot may start (see `spacing_s`)."""
    return guard_s if delay_ms > 0 else UNSPACED_SLACK_S


def reserve(
    state: HostPoliteness,
    now: float,
    lease_id: str,
    lease_ttl_s: float,
    max_local_wait_s: float,
    *,
    lead_s: float = 0.0,
    guard_s: float = 0.0,
    busy_retry_s: float = 1.0,
) -> tuple[HostPoliteness, Reservation]:
    """Grant the next start slot or say until when to come back; expired leases are purged.

    `lead_s` is the earliest start after `now` the caller can honour (its conditional write must land
    first). `guard_s` is added to the spacing and granted as slack: a worker that wakes up that late
    still keeps the delay to the next slot. `busy_retry_s` is how soon to ask again when all slots are
    leased (no later than the first lease expiry). The lease runs from `start_at` for `lease_ttl_s`,
    which must exceed the worker's fetch timeout.
    """
    if lease_ttl_s <= 0 or busy_retry_s <= 0 or min(max_local_wait_s, lead_s, guard_s) < 0:
        raise ValueError("lease_ttl_s and busy_retry_s must be > 0; max_local_wait_s, lead_s, guard_s >= 0")
    leases = state.live_leases(now)
    state = state.with_leases(leases)
    earliest = now + lead_s
    if lease_id in leases:
        # Same lease asked again (a retried write that had landed): the grant stands as it was.
        expires = leases[lease_id]
        start = expires - lease_ttl_s
        slack = start_slack_s(state.delay_ms, guard_s)
        return state, Granted(start_at=start, lease_id=lease_id, lease_expires_at=expires, slack_s=slack)
    if state.blocked_until > earliest:
        reason = DeferReason.SUSPENDED if state.block_reason is BlockReason.SUSPENDED else DeferReason.BLOCKED
        return state, Deferred(until=max(state.blocked_until, state.next_allowed_at), reason=reason)
    if len(leases) >= state.concurrency:
        until = max(state.next_allowed_at, min(now + busy_retry_s, min(leases.values())))
        return state, Deferred(until=until, reason=DeferReason.CONCURRENCY)
    start_at = max(earliest, state.next_allowed_at)
    if start_at - now > max_local_wait_s:
        return state, Deferred(until=start_at, reason=DeferReason.PACING)
    expires_at = start_at + lease_ttl_s
    granted = replace(
        state,
        leases={**leases, lease_id: expires_at},
        next_allowed_at=start_at + spacing_s(state.delay_ms, guard_s),
        last_start_at=start_at,
    )
    slack = start_slack_s(state.delay_ms, guard_s)
    return granted, Granted(start_at=start_at, lease_id=lease_id, lease_expires_at=expires_at, slack_s=slack)


SAME_SLOT_S = 1e-4
"""Two grants' starts on a host with a delay are at least one step (delay + guard) apart: a start within this
is the same slot."""


def slide(
    state: HostPoliteness,
    now: float,
    lease_id: str,
    start_at: float,
    lease_ttl_s: float,
    *,
    lead_s: float = 0.0,
    guard_s: float = 0.0,
) -> tuple[HostPoliteness, Granted | None]:
    """Move a granted slot its holder missed (it woke too late) to `now + lead_s`, if no slot was granted
    after it; None: the slot must be given back unused.

    Only a later start than granted, and only for the latest grant: the gap to the request before grows and
    the next grant follows the new start by a full step, so the host never sees two starts closer than the
    delay. Without it a late wake-up leaves a whole step unused (one missed slot per event-loop stall).
    """
    new_start = now + lead_s
    if (
        lease_id not in state.live_leases(now)
        or abs(state.last_start_at - start_at) > SAME_SLOT_S
        or new_start <= start_at
        or state.blocked_until > new_start
    ):
        return state, None
    expires_at = new_start + lease_ttl_s
    moved = replace(
        state,
        leases={**state.live_leases(now), lease_id: expires_at},
        next_allowed_at=new_start + spacing_s(state.delay_ms, guard_s),
        last_start_at=new_start,
    )
    slack = start_slack_s(state.delay_ms, guard_s)
    return moved, Granted(start_at=new_start, lease_id=lease_id, lease_expires_at=expires_at, slack_s=slack)


def release(
    state: HostPoliteness,
    lease_id: str,
    observation: Observation | None,
    now: float,
    settings: AimdSettings = DEFAULT_SETTINGS,
) -> HostPoliteness:
    """Give the slot back and fold in what the request saw (None: the slot went unused)."""
    leases = {k: v for k, v in state.live_leases(now).items() if k != lease_id}
    state = state.with_leases(leases)
    if observation is None:
        return state
    return observe(state, observation, now, settings)


@dataclass(frozen=True, slots=True)
class SlotRequest:
    """One caller of a coalesced reservation: its lease, the lease's lifetime, and how long it may wait."""

    lease_id: str
    lease_ttl_s: float
    max_local_wait_s: float


def reserve_group(
    state: HostPoliteness,
    now: float,
    requests: Sequence[SlotRequest],
    *,
    lead_s: float = 0.0,
    guard_s: float = 0.0,
    busy_retry_s: float = 1.0,
) -> tuple[HostPoliteness, tuple[Reservation, ...]]:
    """Reserve for several callers at once: k consecutive slots, one per granted caller (answers in
    request order).

    Exactly what `reserve` called once per request on the evolving state would give, taken in the order
    of the callers' local-wait horizons (shortest first: the earliest slot goes to the caller that can
    wait least, so a group never defers a caller a later one could have spared). Hence the group's
    grants start at the host's next start and follow each other by one step (delay + guard); they never
    exceed the free slots (the rest is deferred for CONCURRENCY) nor any caller's horizon (PACING).
    """
    if len({r.lease_id for r in requests}) != len(requests):
        raise ValueError("lease ids of a group must be distinct")
    answers: dict[int, Reservation] = {}
    order = sorted(range(len(requests)), key=lambda i: requests[i].max_local_wait_s)
    for i in order:
        r = requests[i]
        state, answers[i] = reserve(
            state,
            now,
            r.lease_id,
            r.lease_ttl_s,
            r.max_local_wait_s,
            lead_s=lead_s,
            guard_s=guard_s,
            busy_retry_s=busy_retry_s,
        )
    return state, tuple(answers[i] for i in range(len(requests)))


def release_group(
    state: HostPoliteness,
    returns: Sequence[tuple[str, Observation | None]],
    now: float,
    settings: AimdSettings = DEFAULT_SETTINGS,
) -> HostPoliteness:
    """Give several slots back at once, folding the observations in the order they came."""
    for lease_id, observation in returns:
        state = release(state, lease_id, observation, now, settings)
    return state
