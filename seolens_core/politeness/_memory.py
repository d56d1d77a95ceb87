"""In-memory HostPacing: the fake for unit tests of callers, and the reference for the contract tests."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ._controller import DEFAULT_SETTINGS, set_floor
from ._observation import Observation
from ._reservation import (
    Granted,
    Reservation,
    SlotRequest,
    release,
    release_group,
    reserve,
    reserve_group,
    slide,
)
from ._settings import AimdSettings
from ._state import HostPoliteness


class InMemoryHostPacing:
    """Same behaviour as the DynamoDB store, for one process; the clock is injected."""

    def __init__(
        self,
        clock: Callable[[], float],
        settings: AimdSettings = DEFAULT_SETTINGS,
        *,
        busy_retry_s: float = 1.0,
        guard_s: float = 0.0,
    ) -> None:
        self._clock = clock
        self._settings = settings
        self._busy_retry_s = busy_retry_s
        self._guard_s = guard_s
        self._states: dict[str, HostPoliteness] = {}
        self.group_sizes: list[int] = []
        """Requests per `reserve_many` call (to see coalescing at work)."""
        self.release_sizes: list[int] = []

    def _load(self, host: str) -> HostPoliteness:
        return self._states.get(host) or HostPoliteness.initial(self._settings)

    async def reserve(
        self, host: str, lease_id: str, *, lease_ttl_s: float, max_local_wait_s: float
    ) -> Reservation:
        state, reservation = reserve(
            self._load(host),
            self._clock(),
            lease_id,
            lease_ttl_s,
            max_local_wait_s,
            busy_retry_s=self._busy_retry_s,
            guard_s=self._guard_s,
        )
        self._states[host] = state
        return reservation

    async def release(self, host: str, lease_id: str, observation: Observation | None) -> HostPoliteness:
        state = release(self._load(host), lease_id, observation, self._clock(), self._settings)
        self._states[host] = state
        return state

    async def slide(self, host: str, lease_id: str, start_at: float, *, lease_ttl_s: float) -> Granted | None:
        state, moved = slide(
            self._load(host), self._clock(), lease_id, start_at, lease_ttl_s, guard_s=self._guard_s
        )
        self._states[host] = state
        return moved

    async def reserve_many(self, host: str, requests: Sequence[SlotRequest]) -> tuple[Reservation, ...]:
        state, answers = reserve_group(
            self._load(host),
            self._clock(),
            requests,
            busy_retry_s=self._busy_retry_s,
            guard_s=self._guard_s,
        )
        self._states[host] = state
        self.group_sizes.append(len(requests))
        return answers

    async def release_many(
        self, host: str, returns: Sequence[tuple[str, Observation | None]]
    ) -> HostPoliteness:
        state = release_group(self._load(host), returns, self._clock(), self._settings)
        self._states[host] = state
        self.release_sizes.append(len(returns))
        return state

    async def set_floor(self, host: str, floor_ms: int) -> HostPoliteness:
        state = set_floor(self._load(host), floor_ms, self._settings)
        self._states[host] = state
        return state

    async def get(self, host: str) -> HostPoliteness | None:
        return self._states.get(host)
