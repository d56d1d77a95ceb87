"""AIMD settings: the crawler guide's section 2 numbers as defaults, validated when built."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class AimdSettings:
    """Tuning of the per-host politeness controller; every field is a plain value, times in ms or s.

    `enabled=False` is `--no-aimd`: delay and concurrency stay at their configured values (the
    robots Crawl-delay floor and Retry-After blocks still apply; headerless back-off does not).
    """

    window: int = 50
    """W: completed requests per evaluation window."""
    error_threshold: float = 0.08
    """E above this (strictly) degrades; exactly 8% holds."""
    latency_factor: float = 1.5
    """p95 TTFB above this times the baseline (strictly) degrades."""
    healthy_p95_ms: float = 500.0
    """A window with no error and p95 below this recovers one step."""
    backoff_factor: float = 2.0
    """beta: the delay is multiplied, the concurrency divided by it on degradation."""
    max_delay_ms: int = 10_000
    """Ceiling of the AIMD delay (a robots Crawl-delay floor above it still wins)."""
    recovery_step_ms: int = 25
    """Additive recovery: the delay drops by this per healthy window."""
    min_backoff_step_ms: int = 250
    """A back-off never leaves the delay below this, so backing off from 0 ms actually slows down."""
    initial_delay_ms: int = 250
    """Delay of a host seen for the first time (and the fixed delay when AIMD is off)."""
    initial_concurrency: int = 2
    """Concurrency of a host seen for the first time (and the fixed one when AIMD is off)."""
    max_concurrency: int = 8
    """c_max: additive recovery never goes above this."""
    enabled: bool = True
    """False is `--no-aimd`."""
    baseline_alpha: float = 0.2
    """Weight of a new healthy window's p95 in the EWMA latency baseline (1.0 = last healthy p95)."""
    retry_after_cap_s: float = 3600.0
    """A Retry-After longer than this suspends the host (never fetched earlier than asked)."""
    block_base_s: float = 5.0
    """First escalation block (the second headerless 429/503/WAF incident); doubles per incident."""
    block_cap_s: float = 600.0
    """Longest escalation block."""
    quiet_reset_s: float = 120.0
    """After this long without an incident the escalation starts again from the first step."""
    incident_cooldown_s: float = 1.0
    """Distress signals closer together than this are one incident (one overload, one reaction)."""

    def __post_init__(self) -> None:
        checks = {
            "window >= 1": self.window >= 1,
            "0 < error_threshold < 1": 0 < self.error_threshold < 1,
            "latency_factor > 1": self.latency_factor > 1,
            "healthy_p95_ms > 0": self.healthy_p95_ms > 0,
            "backoff_factor > 1": self.backoff_factor > 1,
            "max_delay_ms >= 1": self.max_delay_ms >= 1,
            "recovery_step_ms >= 1": self.recovery_step_ms >= 1,
            "0 <= min_backoff_step_ms <= max_delay_ms": 0 <= self.min_backoff_step_ms <= self.max_delay_ms,
            "0 <= initial_delay_ms": self.initial_delay_ms >= 0,
            "1 <= initial_concurrency <= max_concurrency": 1
            <= self.initial_concurrency
            <= self.max_concurrency,
            "0 < baseline_alpha <= 1": 0 < self.baseline_alpha <= 1,
            "retry_after_cap_s > 0": self.retry_after_cap_s > 0,
            "0 < block_base_s <= block_cap_s": 0 < self.block_base_s <= self.block_cap_s,
            "quiet_reset_s > 0": self.quiet_reset_s > 0,
            "incident_cooldown_s >= 0": self.incident_cooldown_s >= 0,
        }
        failed = [name for name, ok in checks.items() if not ok]
        if failed:
            raise ValueError(f"invalid AimdSettings: {', '.join(failed)}")
