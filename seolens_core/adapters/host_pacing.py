"""HostPacingStore: per-host politeness in HostsTable (`host`, kind `PACE`), shared by all workers and crawls.

Optimistic concurrency: consistent GetItem, pure decision, PutItem conditioned on the `version` read;
a lost race re-reads and retries with jitter. The state is one JSON attribute (`state`), mirrored into a
few numeric attributes for people reading the table.
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from botocore.exceptions import ClientError

from seolens_core.politeness import (
    DEFAULT_SETTINGS,
    AimdSettings,
    CorruptState,
    Deferred,
    HostPoliteness,
    Observation,
    PacingConflict,
    PacingContention,
    Reservation,
    release,
    reserve,
    set_floor,
)

KIND = "PACE"
TTL_SECONDS = 30 * 24 * 3600
T = TypeVar("T")

Decision = Callable[[HostPoliteness, float], tuple[HostPoliteness | None, T]]
"""(current state, fresh now) -> (state to write or None to write nothing, result)."""


class HostPacingStore:
    """The DynamoDB implementation of `seolens_core.politeness.HostPacing`.

    `calls` counts the API calls made (GetItem, PutItem) and `conflicts` the lost races; `on_call`
    receives each operation name as it happens, for metrics.
    """

    def __init__(
        self,
        client: Any,
        table_name: str,
        *,
        settings: AimdSettings = DEFAULT_SETTINGS,
        clock: Callable[[], float] = time.time,
        rng: random.Random | None = None,
        sleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
        max_attempts: int = 12,
        retry_base_s: float = 0.005,
        grant_lead_s: float = 0.05,
        start_guard_s: float = 0.01,
        busy_retry_s: float = 1.0,
        on_call: Callable[[str], None] | None = None,
    ) -> None:
        """`grant_lead_s` is the earliest start after the read that a grant may name: it must cover the
        conditional write. `start_guard_s` is added to each spacing and is the slack a worker may start
        late (timer and scheduling jitter) without bringing two starts closer than the delay."""
        if max_attempts < 1:
            raise ValueError("max_attempts must be >= 1")
        self._client = client
        self._table = table_name
        self._settings = settings
        self._clock = clock
        self._rng = rng if rng is not None else random.Random()
        self._sleep = sleep
        self._max_attempts = max_attempts
        self._retry_base_s = retry_base_s
        self._grant_lead_s = grant_lead_s
        self._start_guard_s = start_guard_s
        self._busy_retry_s = busy_retry_s
        self._on_call = on_call
        self.calls: Counter[str] = Counter()
        self.conflicts = 0

    async def reserve(
        self, host: str, lease_id: str, *, lease_ttl_s: float, max_local_wait_s: float
    ) -> Reservation:
        """A start slot and lease (one read and one conditional write), or Deferred after the read alone."""

        def decide(state: HostPoliteness, now: float) -> tuple[HostPoliteness | None, Reservation]:
            new_state, reservation = reserve(
                state,
                now,
                lease_id,
                lease_ttl_s,
                max_local_wait_s,
                lead_s=self._grant_lead_s,
                guard_s=self._start_guard_s,
                busy_retry_s=self._busy_retry_s,
            )
            if isinstance(reservation, Deferred) or new_state == state:
                return None, reservation
            return new_state, reservation

        return await self._update(host, decide)

    async def release(self, host: str, lease_id: str, observation: Observation | None) -> HostPoliteness:
        """Drop the lease and fold the observation into the controller."""

        def decide(state: HostPoliteness, now: float) -> tuple[HostPoliteness | None, HostPoliteness]:
            new_state = release(state, lease_id, observation, now, self._settings)
            return (None if new_state == state else new_state), new_state

        return await self._update(host, decide)

    async def set_floor(self, host: str, floor_ms: int) -> HostPoliteness:
        """Apply the robots Crawl-delay; no write when it is already in force."""

        def decide(state: HostPoliteness, now: float) -> tuple[HostPoliteness | None, HostPoliteness]:
            new_state = set_floor(state, floor_ms, self._settings)
            return (None if new_state == state else new_state), new_state

        return await self._update(host, decide)

    async def get(self, host: str) -> HostPoliteness | None:
        state, _ = await self._read(host)
        return state

    async def _update(self, host: str, decide: Decision[T]) -> T:
        for attempt in range(self._max_attempts):
            stored, version = await self._read(host)
            now = self._clock()
            current = stored if stored is not None else HostPoliteness.initial(self._settings)
            new_state, result = decide(current, now)
            if new_state is None:
                return result
            try:
                await self._write(host, new_state, version, now)
            except PacingConflict:
                self.conflicts += 1
                ceiling = self._retry_base_s * 2 ** min(attempt, 5)
                await self._sleep(self._rng.uniform(0, ceiling))
                continue
            return result
        raise PacingContention(f"{self._max_attempts} lost races on {host}")

    async def _read(self, host: str) -> tuple[HostPoliteness | None, int]:
        self._count("GetItem")
        response = await self._client.get_item(TableName=self._table, Key=_key(host), ConsistentRead=True)
        item = response.get("Item")
        if item is None:
            return None, 0
        try:
            state = HostPoliteness.from_item(json.loads(item["state"]["S"]))
            version = int(item["version"]["N"])
        except (KeyError, ValueError) as exc:
            raise CorruptState(f"unreadable PACE item for {host}: {exc}") from exc
        return state, version

    async def _write(self, host: str, state: HostPoliteness, version: int, now: float) -> None:
        item: dict[str, Any] = {
            **_key(host),
            "version": {"N": str(version + 1)},
            "state": {"S": json.dumps(state.to_item(), separators=(",", ":"))},
            "delay_ms": {"N": str(state.delay_ms)},
            "concurrency": {"N": str(state.concurrency)},
            "next_allowed_at": {"N": repr(state.next_allowed_at)},
            "blocked_until": {"N": repr(state.blocked_until)},
            "updated_at": {"N": repr(now)},
            "expires_at": {"N": str(int(now) + TTL_SECONDS)},
        }
        if version == 0:
            condition: dict[str, Any] = {"ConditionExpression": "attribute_not_exists(#v)"}
        else:
            condition = {
                "ConditionExpression": "#v = :v",
                "ExpressionAttributeValues": {":v": {"N": str(version)}},
            }
        self._count("PutItem")
        try:
            await self._client.put_item(
                TableName=self._table, Item=item, ExpressionAttributeNames={"#v": "version"}, **condition
            )
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException":
                raise PacingConflict(host) from exc
            raise

    def _count(self, operation: str) -> None:
        self.calls[operation] += 1
        if self._on_call is not None:
            self._on_call(operation)


def _key(host: str) -> dict[str, Any]:
    return {"host": {"S": host}, "kind": {"S": KIND}}
