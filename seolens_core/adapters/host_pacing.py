"""HostPacingStore: per-host politeness in HostsTable (`host`, kind `PACE`), shared by all workers and crawls.

One attribute per field, so the hot operations are single `UpdateItem` calls with DynamoDB's own arithmetic
and no prior read (no optimistic retry loop on a shared `version`, hence no conflict storms):

- reserve, paced host: `SET leases.#id = next_allowed_at + :ttl, last_start_at = next_allowed_at,
  next_allowed_at = next_allowed_at + step` if `next_allowed_at` is within the caller's local wait, no block
  is in force and `size(leases) < concurrency`; the granted start is the old `next_allowed_at` (every
  operand of an update expression reads the item as it was before the update). Idle host: the start is
  `now + lead`, if `next_allowed_at` is not later. `step` = delay + start guard, kept in the item.
- release: `REMOVE leases.#id SET obs = list_append(obs, :o)` with ReturnValues ALL_NEW.
- A failed condition returns the item it saw (ReturnValuesOnConditionCheckFailure=ALL_OLD: no GetItem),
  and the pure `reserve` says why:
  Deferred (blocked, all slots leased, next slot beyond the local wait), expired leases to purge, or the
  other fast path to take.
- Controller changes (a full window, a distress signal, a robots floor) are rare: the pure controller
  computes them from the state seen, and one UpdateItem conditioned on the control sequence `cseq` writes
  them, so exactly one worker closes each window (`REMOVE obs[0..W-1]`); a lost race re-reads and retries.
  A raised delay moves `next_allowed_at` by arithmetic (`+ :bump`), never by overwriting it.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import random
import time
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from botocore.exceptions import ClientError

from seolens_core.politeness import (
    DEFAULT_SETTINGS,
    SAME_SLOT_S,
    AimdSettings,
    BlockReason,
    CorruptState,
    DeferReason,
    Deferred,
    Granted,
    HostPoliteness,
    Observation,
    PacingContention,
    Reservation,
    SlotRequest,
    Verdict,
    Window,
    WindowReport,
    close_window,
    react,
    reserve,
    reserve_group,
    set_floor,
    spacing_s,
    start_slack_s,
)

KIND = "PACE"
LINE_MAX_AHEAD_S = 900.0
"""A line of pacing returns whose end is further ahead than this (SQS's longest delay) is started over: on a
live line that long, the turns are held by duplicates or by messages nobody will bring back."""
CATCH_UP_WINDOWS = 4
"""Most extra windows one release closes after the one it filled (a closer died: see `_closes_window`)."""
GROUP_LEAD_FACTOR = 2.0
"""On a paced host, a group's grants start this many leads after `now` when the host is idle: its first slot
cannot slide if its holder learns of it late (the next one is granted behind it), and a write slower than
one lead on a loaded machine made it go unused (seen in the utilisation proof). One lead later, once per
idle period."""
FORMAT = 2
TTL_SECONDS = 30 * 24 * 3600

Entry = tuple[float | None, bool]
"""One completed request in the open window: (TTFB ms or None, counted as an error)."""


@dataclass(frozen=True, slots=True)
class _Stored:
    state: HostPoliteness
    obs: tuple[Entry, ...]
    cseq: int
    step: float
    """The stored spacing (delay + guard of whoever wrote the controller fields)."""


class HostPacingStore:
    """The DynamoDB implementation of `seolens_core.politeness.HostPacing`.

    `calls` counts the API calls made by operation, `conflicts` the failed conditional writes (a fast path
    that did not apply, or a lost control race); `on_call` receives each operation name, for metrics.
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
        max_attempts: int = 6,
        retry_base_s: float = 0.005,
        grant_lead_s: float = 0.02,
        start_guard_s: float = 0.01,
        busy_retry_s: float = 1.0,
        lead_per_rtt: float = 1.5,
        on_call: Callable[[str], None] | None = None,
    ) -> None:
        """An idle host's grant starts `lead` after `now`: it must cover the write's round trip, so the lead
        is `grant_lead_s` or `lead_per_rtt` times the observed UpdateItem latency (EWMA), whichever is
        longer (a loaded local emulator answers in tenths of a second, DynamoDB in milliseconds).
        `start_guard_s` is added to each spacing and is the slack a worker may start late without
        bringing two starts closer than the delay."""
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
        self._base_lead = grant_lead_s
        self._lead_per_rtt = lead_per_rtt
        self._rtt = 0.0
        """EWMA of the UpdateItem round trip (s)."""
        self._guard = start_guard_s
        self._busy_retry_s = busy_retry_s
        self._on_call = on_call
        self._loop: asyncio.AbstractEventLoop | None = None
        self._locks: dict[str, asyncio.Lock] = {}
        self._last: dict[str, _Stored] = {}
        """Per host: the item as last seen (plans a group reservation before its write checks it)."""
        self._read_at: dict[str, float] = {}
        """When each host's item was last read (by a write that returned it, or a read)."""
        self.calls: Counter[str] = Counter()
        self.conflicts = 0

    # --- the HostPacing port ---------------------------------------------------------------------

    async def reserve(
        self, host: str, lease_id: str, *, lease_ttl_s: float, max_local_wait_s: float
    ) -> Reservation:
        """Usually one UpdateItem; a deferral costs that failed update plus one GetItem."""
        if lease_ttl_s <= 0 or max_local_wait_s < 0:
            raise ValueError("lease_ttl_s must be > 0 and max_local_wait_s >= 0")
        for _ in range(self._max_attempts):
            now = self._clock()
            lead = self._lead()
            start = now + lead
            if start - now <= max_local_wait_s:
                # One fast-path attempt per host in flight from this container: its coroutines would
                # otherwise race each other for the same idle slot and all but one fail.
                async with self._host_lock(host):
                    now = self._clock()
                    lead = self._lead()
                    start = now + lead
                    taken = await self._take(
                        host, lease_id, now, start, lease_ttl_s, max_local_wait_s, self._paced(host)
                    )
                if isinstance(taken, Granted):
                    return taken
                stored = taken  # the item as the failed condition saw it
            else:
                stored = await self._read(host)
            if stored is None:
                await self._create(host, HostPoliteness.initial(self._settings))
                continue
            now = self._clock()
            _, decision = reserve(
                stored.state,
                now,
                lease_id,
                lease_ttl_s,
                max_local_wait_s,
                lead_s=lead,
                guard_s=self._guard,
                busy_retry_s=self._busy_retry_s,
            )
            if isinstance(decision, Deferred) or lease_id in stored.state.leases:
                return decision
            expired = [k for k, exp in stored.state.leases.items() if exp <= now]
            if expired:
                await self._purge(host, expired)
        raise PacingContention(f"{self._max_attempts} attempts to reserve on {host}")

    async def reserve_many(self, host: str, requests: Sequence[SlotRequest]) -> tuple[Reservation, ...]:
        """Slots for several callers of this container: k consecutive slots in ONE conditional UpdateItem.

        The pure `reserve_group` plans the grants on the item as last seen; the write re-checks every value
        the plan used (`step`, `concurrency`, room for k more leases, no block, next start within the
        tightest horizon), so a stale view costs one failed write, whose answer is the item to plan on
        again. A plan of one grant takes the single fast path; a plan of none is final on a fresh item.
        """
        if len(requests) == 1:
            r = requests[0]
            one = await self.reserve(
                host, r.lease_id, lease_ttl_s=r.lease_ttl_s, max_local_wait_s=r.max_local_wait_s
            )
            return (one,)
        for r in requests:
            if r.lease_ttl_s <= 0 or r.max_local_wait_s < 0:
                raise ValueError("lease_ttl_s must be > 0 and max_local_wait_s >= 0")
        answers: dict[str, Reservation] = {}
        todo = list(requests)
        fresh: _Stored | None = None
        """The item as the last call answered it (None: only the cached view)."""
        async with self._host_lock(host):
            for _ in range(self._max_attempts):
                if not todo:
                    break
                now = self._clock()
                seen = fresh or self._last.get(host)
                lead = self._lead() * (GROUP_LEAD_FACTOR if seen is not None and seen.step > 0 else 1.0)
                if seen is None:
                    fresh = await self._read(host)
                    if fresh is None:
                        await self._create(host, HostPoliteness.initial(self._settings))
                    continue
                _, plan = reserve_group(
                    seen.state,
                    now,
                    todo,
                    lead_s=lead,
                    guard_s=self._guard,
                    busy_retry_s=self._busy_retry_s,
                )
                grants = sorted(
                    ((r, g) for r, g in zip(todo, plan, strict=True) if isinstance(g, Granted)),
                    key=lambda rg: rg[1].start_at,
                )
                expired = [k for k, exp in seen.state.leases.items() if exp <= now]
                if fresh is not None and not grants:
                    answers.update((r.lease_id, d) for r, d in zip(todo, plan, strict=True))
                    todo = []
                    break
                if fresh is not None and expired:
                    await self._purge(host, expired)
                    live = seen.state.with_leases(seen.state.live_leases(now))
                    self._last[host], fresh = replace(seen, state=live), None
                    continue
                if len(grants) >= 2 and _num(seen.step) == _num(spacing_s(seen.state.delay_ms, self._guard)):
                    taken = await self._take_group(host, seen, grants, now, now + lead)
                else:
                    first = grants[0][0] if grants else todo[0]
                    busy = grants[0][1].start_at > now + lead if grants else self._paced(host)
                    single = await self._take(
                        host,
                        first.lease_id,
                        now,
                        now + lead,
                        first.lease_ttl_s,
                        first.max_local_wait_s,
                        busy,
                    )
                    taken = [single] if isinstance(single, Granted) else single
                if isinstance(taken, list):
                    answers.update((g.lease_id, g) for g in taken)
                    won = {g.lease_id for g in taken}
                    todo = [q for q in todo if q.lease_id not in won]
                    fresh = self._last.get(host)
                else:
                    fresh = taken
                    if taken is None:
                        await self._create(host, HostPoliteness.initial(self._settings))
        if todo:
            if not answers:
                raise PacingContention(f"{self._max_attempts} attempts to reserve on {host}")
            until = self._clock() + self._busy_retry_s
            answers.update((r.lease_id, Deferred(until=until, reason=DeferReason.CONCURRENCY)) for r in todo)
        return tuple(answers[r.lease_id] for r in requests)

    async def release(self, host: str, lease_id: str, observation: Observation | None) -> HostPoliteness:
        """One UpdateItem; the rare full window or distress signal adds one conditional UpdateItem."""
        return await self.release_many(host, [(lease_id, observation)])

    async def release_many(
        self, host: str, returns: Sequence[tuple[str, Observation | None]]
    ) -> HostPoliteness:
        """k returns in one UpdateItem (`REMOVE` k leases, `list_append` their observations); the window
        close and distress reaction follow in one conditional UpdateItem, as for a single return."""
        if not returns:
            raise ValueError("nothing to release")
        # A slot that served several requests returns once with each one's observation: one path per lease.
        leases = dict.fromkeys(lease_id for lease_id, _ in returns)
        names = {f"#l{i}": lease_id for i, lease_id in enumerate(leases)}
        observations = [o for _, o in returns if o is not None]
        values: dict[str, Any] = {}
        expression = "REMOVE " + ", ".join(f"leases.{n}" for n in names)
        if observations:
            values[":o"] = {"L": [_entry_value((o.ttfb_ms, o.is_error)) for o in observations]}
            expression += " SET obs = list_append(obs, :o)"
        try:
            response = await self._update(
                host,
                expression,
                condition="attribute_exists(cseq)",
                names=names,
                values=values,
                returns="ALL_NEW",
            )
        except _ConditionFailed:
            return HostPoliteness.initial(self._settings)  # no such host: nothing was leased
        stored = self._remember(host, _parse(response["Attributes"], self._settings))
        closer = _closes_window(len(stored.obs) - len(observations), len(stored.obs), self._settings.window)
        if any(o.is_distress for o in observations) or closer:

            def decide(s: _Stored, now: float) -> tuple[HostPoliteness, int] | None:
                state = s.state
                for o in observations:
                    state = react(state, o, now, self._settings)
                return self._close(s, state, now)

            stored = await self._control(host, stored, decide)
            catch_up = CATCH_UP_WINDOWS if closer else 0
            while catch_up and len(stored.obs) >= self._settings.window:
                stored = await self._control(host, stored, lambda s, now: self._close(s, s.state, now))
                catch_up -= 1
        return stored.state

    async def slide(self, host: str, lease_id: str, start_at: float, *, lease_ttl_s: float) -> Granted | None:
        """One conditional UpdateItem: the missed slot starts at `now + lead` if it is still the latest grant
        (`last_start_at` is its start), no block came meanwhile and the lease is still held (see `slide`)."""
        now = self._clock()
        start = now + self._lead()
        if start <= start_at:
            return None
        expression = "SET leases.#l = :exp, last_start_at = :start, next_allowed_at = :start + step"
        condition = (
            "attribute_exists(leases.#l) AND last_start_at BETWEEN :lo AND :hi AND blocked_until <= :start"
        )
        values = {
            ":exp": _num(start + lease_ttl_s),
            ":start": _num(start),
            ":lo": _num(start_at - SAME_SLOT_S),
            ":hi": _num(start_at + SAME_SLOT_S),
        }
        item = await self._grant_write(host, expression, condition, {"#l": lease_id}, values)
        return self._granted(host, item, lease_id) if isinstance(item, Mapping) else None

    async def set_floor(self, host: str, floor_ms: int) -> HostPoliteness:
        """Apply the robots Crawl-delay: one GetItem, and a write only when it changes something."""
        stored = await self._read(host)
        if stored is None:
            state = set_floor(HostPoliteness.initial(self._settings), floor_ms, self._settings)
            if await self._create(host, state):
                return state
            stored = await self._read(host)
            if stored is None:
                raise CorruptState(f"PACE item for {host} vanished")

        def decide(s: _Stored, now: float) -> tuple[HostPoliteness, int] | None:
            state = set_floor(s.state, floor_ms, self._settings)
            return None if state == s.state else (state, 0)

        stored = await self._control(host, stored, decide)
        return stored.state

    async def book_returns(self, host: str, earliest: float, count: int, *, line: str) -> tuple[float, ...]:
        """Come-back times for `count` requests of crawl `line` deferred for pacing: one step apart, behind
        every return booked on the host before and not before `earliest`.

        The host's deferred requests form one line (`returns_at`, the end of it): each comes back when its
        turn is near, instead of all of them asking for the same next slot, one winning and the others
        going round again (ten containers of ten records on a paced host: ~8 re-sends a fetched page). The
        line only says when to ask again; every start is still granted by `reserve`. Turns whose holders
        never come back (a cancelled crawl, duplicate deliveries) are not known, so a line is started over
        when another crawl books (`line_crawl`: its turns would only delay this one) or when its end is
        further ahead than `LINE_MAX_AHEAD_S`. One UpdateItem; two when the line starts over. A host without
        spacing has no line: `earliest` each.
        """
        if count < 1:
            raise ValueError("count must be >= 1")
        seen = self._last.get(host)
        step = seen.step if seen is not None else 0.0
        if step <= 0:
            return (earliest,) * count
        in_line = "returns_at BETWEEN :earliest AND :cap AND line_crawl = :line"
        values = {
            ":earliest": _num(earliest),
            ":cap": _num(self._clock() + LINE_MAX_AHEAD_S),
            ":line": {"S": line},
        }
        for _ in range(self._max_attempts):
            try:
                response = await self._update(
                    host,
                    "SET returns_at = returns_at + :span",
                    condition=in_line,
                    values={**values, ":span": _num(count * step)},
                    returns="UPDATED_NEW",
                )
                end = float(response["Attributes"]["returns_at"]["N"])
            except _ConditionFailed as failed:
                if failed.item is None:  # no host item: nobody is in line
                    return (earliest,) * count
                end = earliest + count * step
                try:
                    await self._update(
                        host,
                        "SET returns_at = :end, line_crawl = :line",
                        condition="attribute_not_exists(returns_at) OR attribute_not_exists(line_crawl)"
                        f" OR NOT ({in_line})",
                        values={**values, ":end": _num(end)},
                    )
                except _ConditionFailed:
                    continue  # another container started the line meanwhile: join it
            first = end - count * step
            return tuple(round(first + i * step, 6) for i in range(count))
        raise PacingContention(f"{self._max_attempts} attempts to book returns on {host}")

    async def get(self, host: str) -> HostPoliteness | None:
        stored = await self._read(host)
        return None if stored is None else stored.state

    def outlook(self, host: str) -> tuple[float, float] | None:
        """The host's next start and its spacing (delay + guard) as last seen here, None if never seen."""
        seen = self._last.get(host)
        return None if seen is None else (seen.state.next_allowed_at, seen.step)

    def idle(self, host: str) -> bool:
        """As last seen here, judged now: the host's next start is not beyond `now + lead`, no block runs and
        a lease is free (a host never seen counts as idle). A grant on an idle host starts within one write's
        round trip; on a host whose leases were all taken, a reservation is likely deferred. Judged against
        the clock, not when seen: a host seen busy a few seconds ago is idle once its next start has passed."""
        seen = self._last.get(host)
        if seen is None:
            return True
        now = self._clock()
        state = seen.state
        return (
            not self._paced(host)
            and state.blocked_until <= now + self._lead()
            and len(state.live_leases(now)) < state.concurrency
        )

    def unspaced(self, host: str, within_s: float) -> bool:
        """The host's item, read by this container within the last `within_s` (every pacing write returns
        it), asks for no spacing (no delay) and no block runs now: a slot of this container may serve its
        next request on the host (see `PacingGate`)."""
        seen = self._last.get(host)
        now = self._clock()
        return (
            seen is not None
            and now - self._read_at.get(host, -math.inf) <= within_s
            and seen.state.delay_ms == 0
            and seen.state.blocked_until <= now
        )

    @property
    def read_lead_s(self) -> float:
        """How long before a start to ask `get` so the answer is back in time (the round trip, with margin)."""
        return self._lead()

    # --- fast paths ------------------------------------------------------------------------------

    async def _take(
        self, host: str, lease_id: str, now: float, start: float, ttl: float, max_wait: float, busy: bool
    ) -> Granted | _Stored | None:
        """One conditional UpdateItem: the grant, or the item its condition failed on (None: no item)."""
        names = {"#l": lease_id}
        common = "blocked_until <= :start AND size(leases) < concurrency AND attribute_not_exists(leases.#l)"
        values: dict[str, Any] = {":start": _num(start)}
        if busy:  # paced: the slot is the stored next start
            expression = (
                "SET leases.#l = next_allowed_at + :ttl, last_start_at = next_allowed_at,"
                " next_allowed_at = next_allowed_at + step"
            )
            condition = f"next_allowed_at > :start AND next_allowed_at <= :horizon AND {common}"
            values |= {":ttl": _num(ttl), ":horizon": _num(now + max_wait)}
        else:  # idle: start as soon as the write has landed
            expression = "SET leases.#l = :exp, last_start_at = :start, next_allowed_at = :start + step"
            condition = f"next_allowed_at <= :start AND {common}"
            values[":exp"] = _num(start + ttl)
        item = await self._grant_write(host, expression, condition, names, values)
        return self._granted(host, item, lease_id) if isinstance(item, Mapping) else item

    def _granted(self, host: str, item: Mapping[str, Any], lease_id: str) -> Granted:
        """The single slot a grant write gave `lease_id`: it starts at the item's `last_start_at`."""
        try:
            start_at = float(item["last_start_at"]["N"])
            expires = float(item["leases"]["M"][lease_id]["N"])
            slack = start_slack_s(int(item["delay_ms"]["N"]), self._guard)
        except (KeyError, ValueError) as exc:
            raise CorruptState(f"unreadable PACE item for {host}: {exc}") from exc
        return Granted(start_at=start_at, lease_id=lease_id, lease_expires_at=expires, slack_s=slack)

    async def _take_group(
        self,
        host: str,
        seen: _Stored,
        grants: Sequence[tuple[SlotRequest, Granted]],
        now: float,
        start: float,
    ) -> list[Granted] | _Stored | None:
        """The plan's k grants as one conditional UpdateItem: the grants, or the item its condition failed on.

        DynamoDB conditions cannot multiply, so the write is conditioned on the `step` and `concurrency`
        the plan used and on room for k leases (`size(leases) <= c - k`). On a paced host the slots follow
        the stored next start (`next_allowed_at + i*step`, which must be within every caller's horizon); on
        an idle one they start at `start` (the plan's `now + lead`).
        """
        k = len(grants)
        step = seen.step
        c = seen.state.concurrency
        names = {f"#l{i}": r.lease_id for i, (r, _) in enumerate(grants)}
        values: dict[str, Any] = {
            ":start": _num(start),
            ":step": _num(step),
            ":c": {"N": str(c)},
            ":cmk": {"N": str(c - k)},
        }
        fresh_ids = " AND ".join(f"attribute_not_exists(leases.{n})" for n in names)
        common = (
            "step = :step AND concurrency = :c AND size(leases) <= :cmk AND blocked_until <= :start"
            f" AND {fresh_ids}"
        )
        if grants[0][1].start_at > start:  # paced: slot i is the stored next start + i steps
            sets = [f"leases.#l{i} = next_allowed_at + :o{i}" for i in range(k)]
            values |= {f":o{i}": _num(i * step + r.lease_ttl_s) for i, (r, _) in enumerate(grants)}
            values |= {":last": _num((k - 1) * step), ":k": _num(k * step)}
            values[":hz"] = _num(min(now + r.max_local_wait_s - i * step for i, (r, _) in enumerate(grants)))
            expression = (
                "SET " + ", ".join(sets) + ", last_start_at = next_allowed_at + :last,"
                " next_allowed_at = next_allowed_at + :k"
            )
            condition = f"next_allowed_at > :start AND next_allowed_at <= :hz AND {common}"
        else:  # idle: slot i starts i steps after `start`
            sets = [f"leases.#l{i} = :e{i}" for i in range(k)]
            values |= {f":e{i}": _num(start + i * step + r.lease_ttl_s) for i, (r, _) in enumerate(grants)}
            values |= {":last": _num(start + (k - 1) * step), ":next": _num(start + k * step)}
            expression = "SET " + ", ".join(sets) + ", last_start_at = :last, next_allowed_at = :next"
            condition = f"next_allowed_at <= :start AND {common}"
        item = await self._grant_write(host, expression, condition, names, values)
        if not isinstance(item, Mapping):
            return item
        try:
            last = float(item["last_start_at"]["N"])
            expiries = [float(item["leases"]["M"][r.lease_id]["N"]) for r, _ in grants]
            slack = start_slack_s(int(item["delay_ms"]["N"]), self._guard)
        except (KeyError, ValueError) as exc:
            raise CorruptState(f"unreadable PACE item for {host}: {exc}") from exc
        return [
            Granted(
                start_at=round(last - (k - 1 - i) * step, 6),
                lease_id=r.lease_id,
                lease_expires_at=expires,
                slack_s=slack,
            )
            for i, ((r, _), expires) in enumerate(zip(grants, expiries, strict=True))
        ]

    async def _grant_write(
        self, host: str, expression: str, condition: str, names: Mapping[str, str], values: Mapping[str, Any]
    ) -> Mapping[str, Any] | _Stored | None:
        """A conditional grant: the item as written, or the item its condition failed on (None: no item)."""
        try:
            response = await self._update(
                host, expression, condition=condition, names=names, values=values, returns="ALL_NEW"
            )
        except _ConditionFailed as failed:
            return self._stored(failed.item, host)
        item: Mapping[str, Any] = response["Attributes"]
        self._remember(host, _parse(item, self._settings))
        return item

    async def _purge(self, host: str, leases: Sequence[str]) -> None:
        """Drop expired leases (of crashed workers); unconditional, expired ids are never granted again."""
        names = {f"#x{i}": lease for i, lease in enumerate(leases)}
        expression = "REMOVE " + ", ".join(f"leases.{n}" for n in names)
        with contextlib.suppress(_ConditionFailed):
            await self._update(host, expression, condition="attribute_exists(cseq)", names=names)

    # --- controller writes -----------------------------------------------------------------------

    def _close(self, s: _Stored, state: HostPoliteness, now: float) -> tuple[HostPoliteness, int] | None:
        """Close the window if full: (new state, entries to drop); None when nothing changes."""
        w = self._settings.window
        if len(s.obs) < w:
            return None if state == s.state else (state, 0)
        entries = s.obs[:w]
        window = Window(
            n=w,
            errors=sum(err for _, err in entries),
            ttfb_ms=tuple(max(t, 0.0) for t, _ in entries if t is not None),
        )
        closed = close_window(state, window, now, self._settings)
        rest = s.obs[w:]
        return replace(closed, window=_window(rest, self._settings)), w

    async def _control(
        self,
        host: str,
        stored: _Stored,
        decide: Callable[[_Stored, float], tuple[HostPoliteness, int] | None],
    ) -> _Stored:
        """Write the controller fields `decide` computes from the state seen, conditioned on `cseq`."""
        for attempt in range(self._max_attempts):
            now = self._clock()
            change = decide(stored, now)
            if change is None:
                return stored
            state, drop = change
            old_step = spacing_s(stored.state.delay_ms, self._guard)
            new_step = spacing_s(state.delay_ms, self._guard)
            values: dict[str, Any] = {
                ":seen": {"N": str(stored.cseq)},
                ":one": {"N": "1"},
                ":bump": _num(max(new_step - old_step, 0.0)),
                **{f":{k}": v for k, v in _controller_values(state, self._guard, now).items()},
            }
            sets = ", ".join(f"{k} = :{k}" for k in _CONTROLLER_FIELDS)
            expression = f"SET {sets}, cseq = cseq + :one, next_allowed_at = next_allowed_at + :bump"
            if drop:
                expression += " REMOVE " + ", ".join(f"obs[{i}]" for i in range(drop))
            try:
                response = await self._update(
                    host, expression, condition="cseq = :seen", values=values, returns="ALL_NEW"
                )
            except _ConditionFailed as failed:
                await self._sleep(self._rng.uniform(0, self._retry_base_s * 2 ** min(attempt, 5)))
                fresh = self._stored(failed.item, host)
                if fresh is None:
                    raise CorruptState(f"PACE item for {host} vanished") from None
                stored = fresh
                continue
            written = self._remember(host, _parse(response["Attributes"], self._settings))
            return written
        raise PacingContention(f"{self._max_attempts} lost control races on {host}")

    # --- plumbing --------------------------------------------------------------------------------

    async def _create(self, host: str, state: HostPoliteness) -> bool:
        """Write a fresh item (also replaces an item of an older format); False if another worker did."""
        now = self._clock()
        item = {
            **_key(host),
            **_controller_values(state, self._guard, now),
            "fmt": {"N": str(FORMAT)},
            "cseq": {"N": "0"},
            "next_allowed_at": _num(state.next_allowed_at),
            "last_start_at": _num(state.last_start_at),
            "leases": {"M": {k: _num(v) for k, v in state.leases.items()}},
            "obs": {"L": []},
        }
        self._count("PutItem")
        try:
            await self._client.put_item(
                TableName=self._table, Item=item, ConditionExpression="attribute_not_exists(cseq)"
            )
        except ClientError as exc:
            if _is_condition_failure(exc):
                self.conflicts += 1
                return False
            raise
        step = round(spacing_s(state.delay_ms, self._guard), 6)
        self._remember(host, _Stored(state=state, obs=(), cseq=0, step=step))
        return True

    async def _read(self, host: str) -> _Stored | None:
        self._count("GetItem")
        response = await self._client.get_item(TableName=self._table, Key=_key(host), ConsistentRead=True)
        item = response.get("Item")
        return self._stored(item, host)

    def _stored(self, item: Mapping[str, Any] | None, host: str) -> _Stored | None:
        if item is None or "cseq" not in item:
            self._last.pop(host, None)
            return None  # never seen, or an item of an older format that `_create` replaces
        return self._remember(host, _parse(item, self._settings))

    def _remember(self, host: str, stored: _Stored) -> _Stored:
        self._last[host] = stored
        self._read_at[host] = self._clock()
        return stored

    async def _update(
        self,
        host: str,
        expression: str,
        *,
        condition: str,
        names: Mapping[str, str] | None = None,
        values: Mapping[str, Any] | None = None,
        returns: str = "NONE",
    ) -> Any:
        kwargs: dict[str, Any] = {
            "TableName": self._table,
            "Key": _key(host),
            "UpdateExpression": expression,
            "ConditionExpression": condition,
            "ReturnValues": returns,
            # A failed condition answers with the item it saw: no GetItem to learn why.
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }
        if names:
            kwargs["ExpressionAttributeNames"] = dict(names)
        if values:
            kwargs["ExpressionAttributeValues"] = dict(values)
        self._count("UpdateItem")
        sent = time.monotonic()
        try:
            return await self._client.update_item(**kwargs)
        except ClientError as exc:
            if _is_condition_failure(exc):
                self.conflicts += 1
                raise _ConditionFailed(exc.response.get("Item")) from exc
            raise
        finally:
            self._rtt += 0.2 * (time.monotonic() - sent - self._rtt)

    def _host_lock(self, host: str) -> asyncio.Lock:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:  # locks bind to a loop; a warm container may run on a new one
            self._loop, self._locks = loop, {}
        return self._locks.setdefault(host, asyncio.Lock())

    def _lead(self) -> float:
        return max(self._base_lead, self._lead_per_rtt * self._rtt)

    def _paced(self, host: str) -> bool:
        """As last seen here, judged now: the host's next start is beyond `now + lead` (a grant follows the
        stored next start, the fast path to try; an unknown host tries the idle path)."""
        seen = self._last.get(host)
        return seen is not None and seen.state.next_allowed_at > self._clock() + self._lead()

    def _count(self, operation: str) -> None:
        self.calls[operation] += 1
        if self._on_call is not None:
            self._on_call(operation)


class _ConditionFailed(Exception):
    """A conditional write did not apply (internal: translated into a decision by the caller)."""

    def __init__(self, item: Mapping[str, Any] | None) -> None:
        super().__init__("condition failed")
        self.item = item
        """The item the condition was checked against (None: there was none)."""


_CONTROLLER_FIELDS = (
    "delay_ms",
    "concurrency",
    "floor_ms",
    "step",
    "blocked_until",
    "block_reason",
    "incidents",
    "last_incident_at",
    "baseline",
    "last_window",
    "updated_at",
    "expires_at",
)


def _closes_window(before: int, after: int, window: int) -> bool:
    """Does the release that took the open window from `before` to `after` entries close it?

    The one whose entries filled it does: every other release that finds it full would only lose the
    conditional write to that one (each such loss is a wasted UpdateItem). A window still full with two
    windows' worth of entries lost its closer (it died between its two writes): whoever sees that closes
    every full window (see `CATCH_UP_WINDOWS`)."""
    return after >= window and (before < window or after >= 2 * window)


def _controller_values(state: HostPoliteness, guard_s: float, now: float) -> dict[str, Any]:
    w = state.last_window
    last_window: dict[str, Any] = (
        {"NULL": True}
        if w is None
        else {
            "S": json.dumps(
                w.to_dict(),
                separators=(",", ":"),
            )
        }
    )
    values = {
        "delay_ms": {"N": str(state.delay_ms)},
        "concurrency": {"N": str(state.concurrency)},
        "floor_ms": {"N": str(state.floor_ms)},
        "step": _num(spacing_s(state.delay_ms, guard_s)),
        "blocked_until": _num(state.blocked_until),
        "block_reason": {"NULL": True} if state.block_reason is None else {"S": state.block_reason.value},
        "incidents": {"N": str(state.incidents)},
        "last_incident_at": _num(state.last_incident_at),
        "baseline": {"NULL": True} if state.baseline_ttfb_ms is None else _num(state.baseline_ttfb_ms),
        "last_window": last_window,
        "updated_at": _num(now),
        "expires_at": {"N": str(int(now) + TTL_SECONDS)},
    }
    assert tuple(values) == _CONTROLLER_FIELDS
    return values


def _parse(item: Mapping[str, Any], settings: AimdSettings) -> _Stored:
    """The stored item as a HostPoliteness (the open window from `obs`), its entries and `cseq`."""
    try:
        if int(item["fmt"]["N"]) != FORMAT:
            raise ValueError(f"unknown format {item['fmt']}")
        obs = tuple(_entry(v) for v in item["obs"]["L"])
        lw_raw = item["last_window"]
        last_window = None
        if "S" in lw_raw:
            lw = json.loads(lw_raw["S"])
            last_window = WindowReport(
                closed_at=float(lw["closed_at"]),
                n=int(lw["n"]),
                errors=int(lw["errors"]),
                p95_ms=None if lw["p95_ms"] is None else float(lw["p95_ms"]),
                verdict=Verdict(lw["verdict"]),
                delay_ms=int(lw["delay_ms"]),
                concurrency=int(lw["concurrency"]),
            )
        reason = item["block_reason"]
        state = HostPoliteness(
            delay_ms=int(item["delay_ms"]["N"]),
            concurrency=int(item["concurrency"]["N"]),
            floor_ms=int(item["floor_ms"]["N"]),
            window=_window(obs, settings),
            baseline_ttfb_ms=float(item["baseline"]["N"]) if "N" in item["baseline"] else None,
            next_allowed_at=float(item["next_allowed_at"]["N"]),
            last_start_at=float(item["last_start_at"]["N"]),
            blocked_until=float(item["blocked_until"]["N"]),
            block_reason=BlockReason(reason["S"]) if "S" in reason else None,
            incidents=int(item["incidents"]["N"]),
            last_incident_at=float(item["last_incident_at"]["N"]),
            leases={str(k): float(v["N"]) for k, v in item["leases"]["M"].items()},
            last_window=last_window,
        )
        cseq = int(item["cseq"]["N"])
        step = float(item["step"]["N"])
    except (KeyError, TypeError, ValueError) as exc:
        raise CorruptState(f"unreadable PACE item: {exc}") from exc
    if state.delay_ms < 0 or state.concurrency < 1 or state.floor_ms < 0:
        raise CorruptState("PACE item out of range")
    return _Stored(state=state, obs=obs, cseq=cseq, step=step)


def _window(obs: Sequence[Entry], settings: AimdSettings) -> Window:
    samples = tuple(max(t, 0.0) for t, _ in obs if t is not None)
    return Window(n=len(obs), errors=sum(err for _, err in obs), ttfb_ms=samples[-settings.window :])


def _entry(value: Mapping[str, Any]) -> Entry:
    """An observation as `_entry_value` writes it, or as items written before it hold it ([ttfb, error])."""
    if "S" in value:
        text = str(value["S"])
        core = text.removesuffix("!")
        return (None if core == "-" else float(core)), core != text
    ttfb, err = value["L"]
    return (None if "NULL" in ttfb else float(ttfb["N"])), err["N"] != "0"


def _entry_value(entry: Entry) -> dict[str, Any]:
    """One string ("12.3", "12.3!" for an error, "-" without a time to first byte): the host's item is
    rewritten and returned on every pacing write, and a [number, number] list per observation made a
    full window ~3x the nodes to encode, parse and bill. A tenth of a millisecond is plenty for a p95."""
    ttfb, err = entry
    return {"S": ("-" if ttfb is None else f"{round(ttfb, 1):g}") + ("!" if err else "")}


def _num(x: float) -> dict[str, str]:
    """A DynamoDB number; rounded to the microsecond so decimal arithmetic stays short and exact."""
    return {"N": repr(round(x, 6))}


def _is_condition_failure(exc: ClientError) -> bool:
    return bool(exc.response.get("Error", {}).get("Code") == "ConditionalCheckFailedException")


def _key(host: str) -> dict[str, Any]:
    return {"host": {"S": host}, "kind": {"S": KIND}}
