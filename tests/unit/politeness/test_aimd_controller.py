"""The AIMD controller with a fake clock: each rule, its boundaries, caps, floors, recovery, --no-aimd."""

from __future__ import annotations

from dataclasses import replace

import pytest

from seolens_core.politeness import (
    AimdSettings,
    BlockReason,
    HostPoliteness,
    Observation,
    Verdict,
    Window,
    backoff,
    judge,
    observe,
    p95,
    set_floor,
)

S = AimdSettings()
T0 = 1_700_000_000.0
OK = Observation(status=200, ttfb_ms=100.0)


def state(delay_ms: int = 250, concurrency: int = 4, **kw: object) -> HostPoliteness:
    return replace(HostPoliteness(delay_ms=delay_ms, concurrency=concurrency), **kw)  # type: ignore[arg-type]


def run_window(
    s: HostPoliteness, errors: int = 0, ttfb_ms: float = 100.0, settings: AimdSettings = S, now: float = T0
) -> HostPoliteness:
    """Feed exactly one full window: `errors` 500s (not immediate signals) then successes."""
    for i in range(settings.window):
        status = 500 if i < errors else 200
        s = observe(s, Observation(status=status, ttfb_ms=ttfb_ms), now, settings)
    return s


def window(errors: int, ttfb: list[float]) -> Window:
    return Window(n=50, errors=errors, ttfb_ms=tuple(ttfb))


# --- the window rule and its boundaries ---------------------------------------------------------


@pytest.mark.parametrize(
    ("errors", "tail_ms", "baseline", "expected"),
    [
        (4, 100.0, None, Verdict.HOLD),  # exactly 8%: not above the threshold, not error-free
        (5, 100.0, None, Verdict.DEGRADE),  # 10%
        (0, 100.0, None, Verdict.HEALTHY),
        (0, 499.0, None, Verdict.HEALTHY),
        (0, 500.0, None, Verdict.HOLD),  # healthy needs p95 strictly below 500 ms
        (0, 600.0, 400.0, Verdict.HOLD),  # exactly 1.5x baseline: hold
        (0, 600.5, 400.0, Verdict.DEGRADE),  # just above 1.5x
        (0, 150.0, 100.0, Verdict.HEALTHY),  # exactly 1.5x but fast: not degraded, healthy
        (0, 151.0, 100.0, Verdict.DEGRADE),
        (1, 100.0, 100.0, Verdict.HOLD),  # 2%: neither
        (0, 2000.0, None, Verdict.HOLD),  # slow but no baseline yet: nothing to compare with
    ],
)
def test_judge_boundaries(errors: int, tail_ms: float, baseline: float | None, expected: Verdict) -> None:
    # 47 fast samples and 3 at tail_ms: nearest-rank p95 of 50 samples is the 48th, i.e. tail_ms.
    samples = [10.0] * 47 + [tail_ms] * 3
    assert p95(samples) == tail_ms
    assert judge(window(errors, samples), baseline, S) is expected


def test_p95_nearest_rank() -> None:
    assert p95([]) is None
    assert p95([7.0]) == 7.0
    assert p95([float(i) for i in range(1, 101)]) == 95.0
    assert p95([float(i) for i in range(1, 21)]) == 19.0


def test_window_applies_only_when_full() -> None:
    s = state()
    for _ in range(S.window - 1):
        s = observe(s, Observation(status=503, ttfb_ms=50.0, retry_after="1"), T0, S)
    assert (s.delay_ms, s.concurrency, s.window.n, s.last_window) == (250, 4, 49, None)
    s = observe(s, Observation(status=503, ttfb_ms=50.0, retry_after="1"), T0, S)
    assert (s.delay_ms, s.concurrency, s.window) == (500, 2, Window())
    assert s.last_window is not None
    assert (s.last_window.verdict, s.last_window.errors, s.last_window.error_rate) == (
        Verdict.DEGRADE,
        50,
        1.0,
    )


@pytest.mark.parametrize(
    ("delay", "conc", "floor", "want_delay", "want_conc"),
    [
        (250, 4, 0, 500, 2),
        (0, 2, 0, 250, 1),  # from zero: the minimum back-off step
        (100, 3, 0, 250, 1),  # 2x would be 200: still at least the minimum step
        (8000, 1, 0, 10_000, 1),  # capped; concurrency never below 1
        (10_000, 1, 0, 10_000, 1),
        (15_000, 2, 15_000, 15_000, 1),  # a Crawl-delay floor above the cap wins
        (300, 8, 1000, 1000, 4),  # floor above the doubled delay
        (7, 5, 0, 250, 2),  # floor(5 * 0.5) = 2
    ],
)
def test_degrade_step(delay: int, conc: int, floor: int, want_delay: int, want_conc: int) -> None:
    s = run_window(state(delay, conc, floor_ms=floor), errors=5)
    assert (s.delay_ms, s.concurrency) == (want_delay, want_conc)


@pytest.mark.parametrize(
    ("delay", "conc", "floor", "want_delay", "want_conc"),
    [
        (250, 2, 0, 225, 3),
        (10, 8, 0, 0, 8),  # never below 0, never above c_max
        (510, 3, 500, 500, 4),  # stops at the floor
        (500, 3, 500, 500, 4),
    ],
)
def test_healthy_step(delay: int, conc: int, floor: int, want_delay: int, want_conc: int) -> None:
    s = run_window(state(delay, conc, floor_ms=floor))
    assert (s.delay_ms, s.concurrency) == (want_delay, want_conc)


def test_hold_keeps_pacing() -> None:
    s = run_window(state(400, 3), errors=4)
    assert (s.delay_ms, s.concurrency) == (400, 3)
    assert s.last_window is not None and s.last_window.verdict is Verdict.HOLD


def test_recovery_after_backoff_is_gentle() -> None:
    s = state(250, 4)
    for _ in range(3):
        s = run_window(s, errors=10)
    assert (s.delay_ms, s.concurrency) == (2000, 1)
    delays = []
    for _ in range(4):
        s = run_window(s)
        delays.append((s.delay_ms, s.concurrency))
    assert delays == [(1975, 2), (1950, 3), (1925, 4), (1900, 5)]


def test_latency_rise_degrades_against_learned_baseline() -> None:
    s = run_window(state(0, 4), ttfb_ms=20.0)
    assert s.baseline_ttfb_ms == 20.0
    s = run_window(s, ttfb_ms=600.0)
    assert (s.delay_ms, s.concurrency) == (250, 2)
    assert s.last_window is not None and s.last_window.p95_ms == 600.0
    assert s.baseline_ttfb_ms == 20.0  # a slow window never teaches the baseline


def test_baseline_is_an_ewma_of_error_free_fast_windows() -> None:
    s = run_window(state(), ttfb_ms=100.0)
    s = run_window(s, ttfb_ms=140.0)
    assert s.baseline_ttfb_ms == pytest.approx(100 + 0.2 * 40)
    s = run_window(s, ttfb_ms=140.0, errors=1)
    assert s.baseline_ttfb_ms == pytest.approx(108.0)


def test_moderate_permanent_shift_is_absorbed() -> None:
    s = run_window(state(0, 4), ttfb_ms=20.0)
    verdicts = []
    for _ in range(8):
        s = run_window(s, ttfb_ms=100.0)
        assert s.last_window is not None
        verdicts.append(s.last_window.verdict)
    assert verdicts[0] is Verdict.DEGRADE
    assert verdicts[-1] is Verdict.HEALTHY


def test_network_errors_count_and_carry_no_sample() -> None:
    s = observe(state(), Observation(status=None, network_error=True), T0, S)
    assert (s.window.n, s.window.errors, s.window.ttfb_ms) == (1, 1, ())


def test_samples_bounded_by_window() -> None:
    small = AimdSettings(window=5)
    s = state()
    for i in range(23):
        s = observe(s, Observation(status=200, ttfb_ms=float(i)), T0, small)
        assert len(s.window.ttfb_ms) <= small.window
        assert len(s.to_item()["window"]["ttfb_ms"]) <= small.window


def test_observe_does_not_mutate() -> None:
    before = state(leases={"a": T0 + 5})
    snapshot = before.to_item()
    observe(before, Observation(status=429), T0, S)
    assert before.to_item() == snapshot


# --- immediate signals --------------------------------------------------------------------------


@pytest.mark.parametrize("status", [429, 503])
def test_retry_after_seconds_blocks(status: int) -> None:
    s = observe(state(), Observation(status=status, retry_after="3"), T0, S)
    assert (s.blocked_until, s.block_reason) == (T0 + 3, BlockReason.RETRY_AFTER)
    assert (s.delay_ms, s.concurrency, s.incidents) == (250, 4, 0)  # the host said when: no extra step


def test_retry_after_http_date_blocks() -> None:
    s = observe(
        state(), Observation(status=429, retry_after="Wed, 21 Oct 2015 07:28:00 GMT"), 1445412470.0, S
    )
    assert s.blocked_until == 1445412480.0


def test_retry_after_beyond_cap_suspends_without_shortening() -> None:
    s = observe(state(), Observation(status=429, retry_after="7200"), T0, S)
    assert (s.blocked_until, s.block_reason) == (T0 + 7200, BlockReason.SUSPENDED)
    at_cap = observe(state(), Observation(status=429, retry_after="3600"), T0, S)
    assert at_cap.block_reason is BlockReason.RETRY_AFTER


def test_shorter_block_never_shortens_a_longer_one() -> None:
    s = observe(state(), Observation(status=429, retry_after="60"), T0, S)
    s = observe(s, Observation(status=429, retry_after="5"), T0 + 1, S)
    assert s.blocked_until == T0 + 60


def test_retry_after_on_other_statuses_is_ignored() -> None:
    s = observe(state(), Observation(status=500, retry_after="30"), T0, S)
    assert (s.blocked_until, s.delay_ms) == (0.0, 250)


@pytest.mark.parametrize("header", [None, "garbage", "0", "-3", "1.5"])
def test_headerless_or_unreadable_retry_after_steps_back(header: str | None) -> None:
    s = observe(state(250, 4), Observation(status=429, retry_after=header), T0, S)
    assert (s.delay_ms, s.concurrency, s.incidents, s.blocked_until) == (500, 2, 1, 0.0)


def test_waf_challenge_is_distress() -> None:
    s = observe(state(250, 4), Observation(status=200, ttfb_ms=30.0, waf=True), T0, S)
    assert (s.delay_ms, s.concurrency, s.window.errors) == (500, 2, 1)


def test_escalation_doubles_per_incident_up_to_cap_then_quiet_reset() -> None:
    settings = AimdSettings(block_base_s=5, block_cap_s=30, quiet_reset_s=120, incident_cooldown_s=1)
    s = state(0, 8)
    blocks = []
    t = T0
    for _ in range(6):
        s = observe(s, Observation(status=503), t, settings)
        blocks.append(round(s.blocked_until - t, 6) if s.blocked_until > t else 0)
        t = max(t, s.blocked_until) + 2
    assert blocks == [0, 5, 10, 20, 30, 30]
    assert s.block_reason is BlockReason.ESCALATION
    assert s.incidents == 6
    quiet = t + 120
    s = observe(s, Observation(status=503), quiet, settings)
    assert (s.incidents, s.blocked_until < quiet) == (1, True)


def test_incidents_inside_cooldown_are_one() -> None:
    s = observe(state(250, 8), Observation(status=429), T0, S)
    s = observe(s, Observation(status=429), T0 + 0.5, S)
    assert (s.incidents, s.delay_ms, s.concurrency) == (1, 500, 4)
    s = observe(s, Observation(status=429), T0 + 1.0, S)
    assert (s.incidents, s.delay_ms, s.concurrency) == (2, 1000, 2)
    assert s.blocked_until == T0 + 1.0 + S.block_base_s


def test_backoff_pushes_next_start_from_last_start() -> None:
    s = state(100, 2, last_start_at=T0, next_allowed_at=T0 + 0.1)
    s = backoff(s, S)
    assert s.next_allowed_at == pytest.approx(T0 + 0.25)


# --- floors and --no-aimd -----------------------------------------------------------------------


def test_raising_floor_applies_now_lowering_waits_for_recovery() -> None:
    s = state(250, 2, last_start_at=T0, next_allowed_at=T0 + 0.25)
    s = set_floor(s, 1000)
    assert (s.floor_ms, s.delay_ms, s.next_allowed_at) == (1000, 1000, T0 + 1.0)
    s = set_floor(s, 500)
    assert (s.floor_ms, s.delay_ms) == (500, 1000)
    for _ in range(25):
        s = run_window(s)
    assert s.delay_ms == 500
    with pytest.raises(ValueError):
        set_floor(s, -1)


def test_no_aimd_fixes_pacing_but_honours_floor_and_retry_after() -> None:
    off = AimdSettings(enabled=False, initial_delay_ms=100, initial_concurrency=3)
    s = HostPoliteness.initial(off)
    s = run_window(s, errors=50, settings=off)
    s = run_window(s, ttfb_ms=5.0, settings=off)
    s = observe(s, Observation(status=429), T0, off)
    s = observe(s, Observation(status=503), T0 + 5, off)
    assert (s.delay_ms, s.concurrency, s.blocked_until) == (100, 3, 0.0)
    assert s.last_window is not None and s.last_window.verdict is Verdict.HEALTHY  # still reported
    s = observe(s, Observation(status=429, retry_after="4"), T0 + 10, off)
    assert s.blocked_until == T0 + 14
    assert set_floor(s, 2000, off).delay_ms == 2000
    assert set_floor(set_floor(s, 2000, off), 0, off).delay_ms == 100


def test_initial_state_respects_floor() -> None:
    assert HostPoliteness.initial(S, floor_ms=3000).delay_ms == 3000
    assert HostPoliteness.initial(S).delay_ms == S.initial_delay_ms


@pytest.mark.parametrize(
    "bad",
    [
        {"window": 0},
        {"error_threshold": 1.0},
        {"latency_factor": 1.0},
        {"backoff_factor": 1.0},
        {"initial_concurrency": 9, "max_concurrency": 8},
        {"block_base_s": 100, "block_cap_s": 10},
        {"min_backoff_step_ms": 20_000},
    ],
)
def test_settings_validate(bad: dict[str, object]) -> None:
    with pytest.raises(ValueError):
        AimdSettings(**bad)  # type: ignore[arg-type]
