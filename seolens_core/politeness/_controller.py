"""The AIMD controller (crawler guide section 2): pure `observe(state, observation, now) -> state`.

Two kinds of reaction, as URL Frontier separates them: pacing (delay and concurrency, SetDelay) moves
once per window of W completed requests or one step per distress incident; a pause (`blocked_until`,
BlockQueueUntil) comes from Retry-After or from repeated distress incidents.
"""

from __future__ import annotations

import math
from dataclasses import replace

from ._observation import Observation, parse_retry_after
from ._settings import AimdSettings
from ._state import BlockReason, HostPoliteness, Verdict, Window, WindowReport

DEFAULT_SETTINGS = AimdSettings()


def p95(samples: tuple[float, ...] | list[float]) -> float | None:
    """Nearest-rank 95th percentile; None for no samples."""
    if not samples:
        return None
    ordered = sorted(samples)
    return ordered[math.ceil(0.95 * len(ordered)) - 1]


def judge(window: Window, baseline_ms: float | None, settings: AimdSettings) -> Verdict:
    """The window rule: degrade if E > threshold or p95 > factor x baseline; healthy if E == 0 and fast."""
    if window.n == 0:
        return Verdict.HOLD
    error_rate = window.errors / window.n
    tail = p95(window.ttfb_ms)
    slow = tail is not None and baseline_ms is not None and tail > settings.latency_factor * baseline_ms
    if error_rate > settings.error_threshold or slow:
        return Verdict.DEGRADE
    if window.errors == 0 and tail is not None and tail < settings.healthy_p95_ms:
        return Verdict.HEALTHY
    return Verdict.HOLD


def observe(
    state: HostPoliteness, observation: Observation, now: float, settings: AimdSettings = DEFAULT_SETTINGS
) -> HostPoliteness:
    """Fold one completed request into the host state: immediate signals first, then the window rule."""
    state = _immediate(state, observation, now, settings)
    return _count(state, observation, now, settings)


def set_floor(
    state: HostPoliteness, floor_ms: int, settings: AimdSettings = DEFAULT_SETTINGS
) -> HostPoliteness:
    """Apply a robots Crawl-delay: raising takes effect now, lowering only lets recovery go further down.

    With AIMD off nothing else would bring the delay down, so it follows the floor both ways.
    """
    if floor_ms < 0:
        raise ValueError("floor_ms must be >= 0")
    delay = max(state.delay_ms if settings.enabled else settings.initial_delay_ms, floor_ms)
    return _with_delay(replace(state, floor_ms=floor_ms), delay)


def backoff(state: HostPoliteness, settings: AimdSettings) -> HostPoliteness:
    """Multiplicative decrease: delay x beta (at least `min_backoff_step_ms`, at most the cap), c / beta."""
    multiplied = max(math.ceil(state.delay_ms * settings.backoff_factor), settings.min_backoff_step_ms)
    stepped = min(multiplied, settings.max_delay_ms)
    delay = max(state.delay_ms, stepped, state.floor_ms)
    concurrency = max(math.floor(state.concurrency / settings.backoff_factor), 1)
    return _with_delay(replace(state, concurrency=concurrency), delay)


def recover(state: HostPoliteness, settings: AimdSettings) -> HostPoliteness:
    """Additive increase: delay - step (not below the floor), concurrency + 1 (not above c_max)."""
    delay = max(state.delay_ms - settings.recovery_step_ms, state.floor_ms)
    concurrency = max(min(state.concurrency + 1, settings.max_concurrency), 1)
    return replace(state, delay_ms=delay, concurrency=concurrency)


def _with_delay(state: HostPoliteness, delay_ms: int) -> HostPoliteness:
    """Set the delay; a longer one also pushes the next start, counted from the latest granted start."""
    next_allowed = state.next_allowed_at
    if delay_ms > state.delay_ms and state.last_start_at > 0:
        next_allowed = max(next_allowed, state.last_start_at + delay_ms / 1000)
    return replace(state, delay_ms=delay_ms, next_allowed_at=next_allowed)


def _block(state: HostPoliteness, until: float, reason: BlockReason) -> HostPoliteness:
    """Pause the host until `until`; an existing longer pause is never shortened."""
    if until <= state.blocked_until:
        return state
    return replace(state, blocked_until=until, block_reason=reason)


def react(
    state: HostPoliteness, observation: Observation, now: float, settings: AimdSettings = DEFAULT_SETTINGS
) -> HostPoliteness:
    """The immediate part of `observe`: Retry-After block, or a back-off step and escalation on distress.

    Stores that keep the window apart from the controller fields apply this at once and `close_window`
    when W requests have completed; together they equal `observe`.
    """
    return _immediate(state, observation, now, settings)


def _immediate(
    state: HostPoliteness, observation: Observation, now: float, settings: AimdSettings
) -> HostPoliteness:
    if not observation.is_distress:
        return state
    asked = None
    if not observation.waf:
        asked = parse_retry_after(observation.retry_after, now)
    if asked is not None and asked > 0:
        # Never fetch earlier than asked: beyond the cap the host is suspended rather than retried early.
        reason = BlockReason.SUSPENDED if asked > settings.retry_after_cap_s else BlockReason.RETRY_AFTER
        return _block(state, now + asked, reason)
    if state.incidents and now - state.last_incident_at < settings.incident_cooldown_s:
        return state
    incidents = 1 if now - state.last_incident_at >= settings.quiet_reset_s else state.incidents + 1
    state = replace(state, incidents=incidents, last_incident_at=now)
    if not settings.enabled:
        return state
    state = backoff(state, settings)
    if incidents >= 2:
        seconds = min(settings.block_base_s * 2 ** (incidents - 2), settings.block_cap_s)
        state = _block(state, now + seconds, BlockReason.ESCALATION)
    return state


def _count(
    state: HostPoliteness, observation: Observation, now: float, settings: AimdSettings
) -> HostPoliteness:
    w = state.window
    samples = w.ttfb_ms if observation.ttfb_ms is None else (*w.ttfb_ms, max(observation.ttfb_ms, 0.0))
    window = Window(n=w.n + 1, errors=w.errors + observation.is_error, ttfb_ms=samples[-settings.window :])
    if window.n < settings.window:
        return replace(state, window=window)
    return close_window(state, window, now, settings)


def close_window(
    state: HostPoliteness, window: Window, now: float, settings: AimdSettings = DEFAULT_SETTINGS
) -> HostPoliteness:
    """Judge a full window (W completed requests): the AIMD step, the baseline, the timeline point.

    The returned state has an empty window; `state.window` itself is not read.
    """
    verdict = judge(window, state.baseline_ttfb_ms, settings)
    if settings.enabled and verdict is Verdict.DEGRADE:
        state = backoff(state, settings)
    elif settings.enabled and verdict is Verdict.HEALTHY:
        state = recover(state, settings)
    tail = p95(window.ttfb_ms)
    baseline = state.baseline_ttfb_ms
    # Learn from every error-free window under the absolute healthy bound, even one the relative rule
    # degraded: a lasting moderate shift is absorbed after a few back-offs, a slow host never is.
    if window.errors == 0 and tail is not None and tail < settings.healthy_p95_ms:
        baseline = tail if baseline is None else baseline + settings.baseline_alpha * (tail - baseline)
    report = WindowReport(
        closed_at=now,
        n=window.n,
        errors=window.errors,
        p95_ms=tail,
        verdict=verdict,
        delay_ms=state.delay_ms,
        concurrency=state.concurrency,
    )
    return replace(state, window=Window(), baseline_ttfb_ms=baseline, last_window=report)
