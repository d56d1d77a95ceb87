"""Per-host politeness state: one immutable value per host, stored as one item (HostsTable `PACE`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from ._errors import CorruptState
from ._settings import AimdSettings

STATE_FORMAT = 1


class BlockReason(StrEnum):
    """Why `blocked_until` is in the future (URL Frontier's BlockQueueUntil, as opposed to SetDelay)."""

    RETRY_AFTER = "retry_after"
    """The server asked for a pause no longer than the cap."""
    SUSPENDED = "suspended"
    """The server asked for more than the cap: honoured; callers skip the host with a finding."""
    ESCALATION = "escalation"
    """Repeated headerless 429/503/WAF incidents."""


class Verdict(StrEnum):
    """Outcome of one evaluation window."""

    DEGRADE = "degrade"
    HEALTHY = "healthy"
    HOLD = "hold"


@dataclass(frozen=True, slots=True)
class Window:
    """Statistics of the window being filled; `ttfb_ms` keeps at most W samples (network errors have none)."""

    n: int = 0
    errors: int = 0
    ttfb_ms: tuple[float, ...] = ()


@dataclass(frozen=True, slots=True)
class WindowReport:
    """A closed window and what it decided: one point of the host's timeline for reports and metrics."""

    closed_at: float
    n: int
    errors: int
    p95_ms: float | None
    verdict: Verdict
    delay_ms: int
    concurrency: int

    @property
    def error_rate(self) -> float:
        return self.errors / self.n if self.n else 0.0

    def to_dict(self) -> dict[str, Any]:
        """Plain values, for storage and timelines."""
        return {
            "closed_at": self.closed_at,
            "n": self.n,
            "errors": self.errors,
            "p95_ms": self.p95_ms,
            "verdict": self.verdict.value,
            "delay_ms": self.delay_ms,
            "concurrency": self.concurrency,
        }


@dataclass(frozen=True, slots=True)
class HostPoliteness:
    """Everything workers share about one host: pacing (SetDelay), pause (BlockQueueUntil), leases.

    Times are epoch seconds; zero means "never" for `next_allowed_at` and `blocked_until`.
    `leases` maps a lease id to its expiry; the mapping is replaced, never mutated.
    """

    delay_ms: int
    concurrency: int
    floor_ms: int = 0
    """Robots Crawl-delay in ms; 0 means no floor."""
    window: Window = field(default_factory=Window)
    baseline_ttfb_ms: float | None = None
    """EWMA of the p95 TTFB of healthy windows; None until the first healthy window."""
    next_allowed_at: float = 0.0
    last_start_at: float = 0.0
    """Start time of the latest granted slot; a raised delay is applied from it."""
    blocked_until: float = 0.0
    block_reason: BlockReason | None = None
    incidents: int = 0
    """Distress incidents since the last quiet period (drives the escalation)."""
    last_incident_at: float = 0.0
    leases: Mapping[str, float] = field(default_factory=dict)
    last_window: WindowReport | None = None

    @classmethod
    def initial(cls, settings: AimdSettings, floor_ms: int = 0) -> HostPoliteness:
        """The state of a host never seen before."""
        return cls(
            delay_ms=max(settings.initial_delay_ms, floor_ms),
            concurrency=settings.initial_concurrency,
            floor_ms=floor_ms,
        )

    def live_leases(self, now: float) -> dict[str, float]:
        """Leases not yet expired at `now` (an expired lease belongs to a crashed or stuck worker)."""
        return {lease: exp for lease, exp in self.leases.items() if exp > now}

    def with_leases(self, leases: Mapping[str, float]) -> HostPoliteness:
        return replace(self, leases=dict(leases))

    def to_item(self) -> dict[str, Any]:
        """Plain JSON types only (str, int, float, bool, None, list, dict), for storage."""
        w = self.last_window
        return {
            "format": STATE_FORMAT,
            "delay_ms": self.delay_ms,
            "concurrency": self.concurrency,
            "floor_ms": self.floor_ms,
            "window": {
                "n": self.window.n,
                "errors": self.window.errors,
                "ttfb_ms": list(self.window.ttfb_ms),
            },
            "baseline_ttfb_ms": self.baseline_ttfb_ms,
            "next_allowed_at": self.next_allowed_at,
            "last_start_at": self.last_start_at,
            "blocked_until": self.blocked_until,
            "block_reason": None if self.block_reason is None else self.block_reason.value,
            "incidents": self.incidents,
            "last_incident_at": self.last_incident_at,
            "leases": dict(self.leases),
            "last_window": None if w is None else w.to_dict(),
        }

    @classmethod
    def from_item(cls, item: Mapping[str, Any]) -> HostPoliteness:
        """Inverse of `to_item`; raises CorruptState on anything it did not write."""
        try:
            if item.get("format") != STATE_FORMAT:
                raise ValueError(f"unknown format {item.get('format')!r}")
            win = item["window"]
            lw = item["last_window"]
            state = cls(
                delay_ms=_int(item["delay_ms"]),
                concurrency=_int(item["concurrency"]),
                floor_ms=_int(item["floor_ms"]),
                window=Window(
                    n=_int(win["n"]),
                    errors=_int(win["errors"]),
                    ttfb_ms=tuple(_float(x) for x in win["ttfb_ms"]),
                ),
                baseline_ttfb_ms=None
                if item["baseline_ttfb_ms"] is None
                else _float(item["baseline_ttfb_ms"]),
                next_allowed_at=_float(item["next_allowed_at"]),
                last_start_at=_float(item["last_start_at"]),
                blocked_until=_float(item["blocked_until"]),
                block_reason=None if item["block_reason"] is None else BlockReason(item["block_reason"]),
                incidents=_int(item["incidents"]),
                last_incident_at=_float(item["last_incident_at"]),
                leases={str(k): _float(v) for k, v in dict(item["leases"]).items()},
                last_window=None
                if lw is None
                else WindowReport(
                    closed_at=_float(lw["closed_at"]),
                    n=_int(lw["n"]),
                    errors=_int(lw["errors"]),
                    p95_ms=None if lw["p95_ms"] is None else _float(lw["p95_ms"]),
                    verdict=Verdict(lw["verdict"]),
                    delay_ms=_int(lw["delay_ms"]),
                    concurrency=_int(lw["concurrency"]),
                ),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise CorruptState(f"unreadable host politeness item: {exc}") from exc
        if state.delay_ms < 0 or state.concurrency < 1 or state.floor_ms < 0:
            raise CorruptState("host politeness item out of range")
        return state


def _int(value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"expected int, got {value!r}")
    return value


def _float(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"expected number, got {value!r}")
    result = float(value)
    if not math.isfinite(result):
        raise ValueError(f"expected a finite number, got {value!r}")
    return result
