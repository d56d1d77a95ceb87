"""The pacing port every store implements, and `acquire`: reserve, wait for the slot, start on time."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol

from ._observation import Observation
from ._reservation import DeferReason, Deferred, Granted, Reservation
from ._state import BlockReason, HostPoliteness


class HostPacing(Protocol):
    """Shared per-host politeness state; `host` is the politeness key (origin `scheme://host:port`)."""

    async def reserve(
        self, host: str, lease_id: str, *, lease_ttl_s: float, max_local_wait_s: float
    ) -> Reservation:
        """Take a start slot and a lease, or learn until when to come back."""
        ...

    async def release(self, host: str, lease_id: str, observation: Observation | None) -> HostPoliteness:
        """Return the lease and feed the controller what the request saw."""
        ...

    async def slide(self, host: str, lease_id: str, start_at: float, *, lease_ttl_s: float) -> Granted | None:
        """Move a slot its holder missed to the earliest start, if none was granted after it (see `slide`)."""
        ...

    async def set_floor(self, host: str, floor_ms: int) -> HostPoliteness:
        """Apply the host's robots Crawl-delay (ms)."""
        ...

    async def get(self, host: str) -> HostPoliteness | None:
        """The stored state, None for a host never seen."""
        ...


RECHECK_AHEAD = 3.0
"""A slot granted more than this many read round trips before its start is re-checked for a block."""


async def acquire(
    pacing: HostPacing,
    host: str,
    lease_id: str,
    *,
    lease_ttl_s: float,
    max_local_wait_s: float,
    clock: Callable[[], float],
    sleep: Callable[[float], Awaitable[object]],
    max_late_retries: int = 3,
    recheck_lead_s: float | None = None,
    wake_early_s: float = 0.0,
    on_granted: Callable[[], object] | None = None,
) -> Reservation:
    """Reserve and sleep until the granted start; return Granted only when the caller may start *now*
    (or, with `wake_early_s`, that much before: the caller prepares its request and waits the rest itself).

    A start later than the grant's slack would squeeze the gap to the next worker's slot below the
    delay: the slot slides to the earliest start when nobody holds a later one, else it is given back
    unused and a new one reserved. With `recheck_lead_s` (a read's round trip), a slot granted well ahead
    is re-read that long before its start: a 429/503 another worker got meanwhile blocks the host, and
    the slot is given back instead of knocking inside the block. `on_granted` is called as soon as a slot
    is granted, before the wait: the caller's own preparation (e.g. its claim on the URL) overlaps it.
    """
    reservation = await pacing.reserve(
        host, lease_id, lease_ttl_s=lease_ttl_s, max_local_wait_s=max_local_wait_s
    )
    for attempt in range(max_late_retries + 1):
        if isinstance(reservation, Deferred):
            return reservation
        if on_granted is not None:
            on_granted()
        # The re-read must have answered by the time the caller wakes (not by the slot): a read issued
        # inside the wake-early window made callers late whenever it took longer than the lead.
        wake_in = reservation.start_at - wake_early_s - clock()
        if recheck_lead_s is not None and wake_in > RECHECK_AHEAD * recheck_lead_s:
            await sleep(wake_in - recheck_lead_s)
            state = await pacing.get(host)
            if state is not None and state.blocked_until > reservation.start_at:
                await pacing.release(host, lease_id, None)
                suspended = state.block_reason is BlockReason.SUSPENDED
                return Deferred(
                    until=max(state.blocked_until, state.next_allowed_at),
                    reason=DeferReason.SUSPENDED if suspended else DeferReason.BLOCKED,
                )
        while (wait := reservation.start_at - wake_early_s - clock()) > 0:
            await sleep(wait)
        if clock() - reservation.start_at <= reservation.slack_s:
            return reservation
        moved = None
        if attempt < max_late_retries:
            moved = await pacing.slide(host, lease_id, reservation.start_at, lease_ttl_s=lease_ttl_s)
        if moved is not None:
            reservation = moved
            continue
        await pacing.release(host, lease_id, None)
        if attempt < max_late_retries:
            reservation = await pacing.reserve(
                host, lease_id, lease_ttl_s=lease_ttl_s, max_local_wait_s=max_local_wait_s
            )
    return Deferred(until=clock(), reason=DeferReason.PACING)
