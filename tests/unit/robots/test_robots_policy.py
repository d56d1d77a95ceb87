"""The robots fetch-outcome policy: one table row per outcome class, then the outage rules over time."""

from __future__ import annotations

from dataclasses import replace

import pytest

from seolens_core.robots import (
    DecisionReason,
    FetchKind,
    NetworkErrorClass,
    PageAction,
    RobotsDecision,
    RobotsFetchOutcome,
    RobotsMode,
    RobotsSettings,
    RobotsState,
    decide_robots,
    decision_for,
    rules_for,
)

NOW = 1_700_000_000.0
DAY = 86_400.0
BODY = b"User-agent: *\nDisallow: /private\n"
OLD_TEXT = "User-agent: *\nDisallow: /old\n"

ALLOW, DISALLOW, PARSED = RobotsMode.ALLOW_ALL, RobotsMode.DISALLOW_ALL, RobotsMode.PARSED


def http(status: int, hops: int = 0, loop: bool = False, body: bytes | None = None) -> RobotsFetchOutcome:
    kind = FetchKind.OK if 200 <= status < 300 else FetchKind.HTTP_STATUS
    return RobotsFetchOutcome(kind, status=status, redirect_hops=hops, redirect_loop=loop, body=body)


def net(error: NetworkErrorClass | None) -> RobotsFetchOutcome:
    return RobotsFetchOutcome(FetchKind.NETWORK_ERROR, error=error)


# (outcome, expected mode, suspended, reason). No previous state, default settings.
TABLE: list[tuple[RobotsFetchOutcome, RobotsMode, bool, DecisionReason]] = [
    (http(200, body=BODY), PARSED, False, DecisionReason.FETCHED),
    (http(204), PARSED, False, DecisionReason.FETCHED),
    (RobotsFetchOutcome(FetchKind.OK, body=BODY), PARSED, False, DecisionReason.FETCHED),
    # Redirect chains: the caller followed `hops` redirects and then got the final status.
    *[(http(200, hops=n, body=BODY), PARSED, False, DecisionReason.FETCHED) for n in range(1, 6)],
    (http(200, hops=6, body=BODY), ALLOW, False, DecisionReason.REDIRECT_LIMIT),
    (http(301, hops=5), ALLOW, False, DecisionReason.REDIRECT_LIMIT),
    (http(302, hops=6), ALLOW, False, DecisionReason.REDIRECT_LIMIT),
    (http(301, hops=0), ALLOW, False, DecisionReason.REDIRECT_UNRESOLVED),
    (http(308, hops=2), ALLOW, False, DecisionReason.REDIRECT_UNRESOLVED),
    (http(301, hops=2, loop=True), ALLOW, False, DecisionReason.REDIRECT_LOOP),
    (http(200, hops=1, loop=True, body=BODY), ALLOW, False, DecisionReason.REDIRECT_LOOP),
    # 4xx other than 429: unavailable.
    *[(http(s), ALLOW, False, DecisionReason.UNAVAILABLE_4XX) for s in (400, 401, 403, 404, 410, 451, 499)],
    # 429, 5xx, odd statuses, network errors: complete disallow and suspension.
    *[(http(s), DISALLOW, True, DecisionReason.UNREACHABLE) for s in (429, 500, 502, 503, 504, 599)],
    *[(http(s), DISALLOW, True, DecisionReason.UNREACHABLE) for s in (100, 600, 999)],
    *[(net(e), DISALLOW, True, DecisionReason.UNREACHABLE) for e in NetworkErrorClass],
    (net(None), DISALLOW, True, DecisionReason.UNREACHABLE),
    # A network error after redirects is still unreachable, not "too many hops".
    (
        RobotsFetchOutcome(FetchKind.NETWORK_ERROR, redirect_hops=3),
        DISALLOW,
        True,
        DecisionReason.UNREACHABLE,
    ),
]


@pytest.mark.parametrize(("outcome", "mode", "suspended", "reason"), TABLE)
def test_fetch_outcome_table(
    outcome: RobotsFetchOutcome, mode: RobotsMode, suspended: bool, reason: DecisionReason
) -> None:
    decision = decide_robots(outcome, None, NOW)
    assert (decision.mode, decision.suspended, decision.reason) == (mode, suspended, reason)
    if suspended:
        assert decision.retry_at == NOW + 60
        assert decision.valid_until == decision.retry_at
        assert decision.rules_text is None
        assert decision.state.consecutive_failures == 1
        assert decision.state.last_good_text is None  # a failure is never cached as a success
    else:
        assert decision.retry_at is None
        assert decision.valid_until == NOW + DAY
        assert decision.state.consecutive_failures == 0


def test_2xx_keeps_the_text_and_stores_a_good_copy() -> None:
    decision = decide_robots(http(200, body=BODY), None, NOW)
    assert decision.rules_text == BODY.decode()
    assert decision.state == RobotsState(last_good_text=BODY.decode(), last_good_fetched_at=NOW)
    assert not rules_for(decision).can_fetch("/private")


def test_2xx_body_is_cut_to_max_bytes() -> None:
    body = BODY + b"Disallow: /" + b"x" * 600_000 + b"\n"
    decision = decide_robots(http(200, body=body), None, NOW)
    assert decision.rules_text == BODY.decode()


@pytest.mark.parametrize("status", [401, 403])
def test_401_403_may_disallow_all_by_setting(status: int) -> None:
    decision = decide_robots(http(status), None, NOW, RobotsSettings(disallow_on_401_403=True))
    assert (decision.mode, decision.suspended, decision.reason) == (
        DISALLOW,
        False,
        DecisionReason.FORBIDDEN_DISALLOW,
    )
    assert decide_robots(http(404), None, NOW, RobotsSettings(disallow_on_401_403=True)).mode is ALLOW


@pytest.mark.parametrize(
    ("max_age", "ttl"),
    [(None, DAY), (3600.0, 3600.0), (0.0, 60.0), (10.0, 60.0), (2 * DAY, DAY), (float("nan"), DAY)],
)
def test_cache_control_max_age_shortens_the_cache(max_age: float | None, ttl: float) -> None:
    outcome = replace(http(200, body=BODY), max_age_s=max_age)
    assert decide_robots(outcome, None, NOW).valid_until == NOW + ttl


def test_retries_back_off_exponentially_up_to_the_cap() -> None:
    state: RobotsState | None = None
    now = NOW
    gaps = []
    for _ in range(12):
        decision = decide_robots(http(503), state, now)
        assert decision.suspended and decision.mode is DISALLOW
        assert decision.retry_at is not None
        gaps.append(decision.retry_at - now)
        state, now = decision.state, decision.retry_at
    assert gaps == [60, 120, 240, 480, 960, 1920, 3840, 7680, 15360, 21600, 21600, 21600]
    assert state is not None
    assert state.consecutive_failures == 12
    assert state.first_failure_at == NOW


def test_retry_after_longer_than_the_backoff_is_honoured_up_to_the_cap() -> None:
    long_wait = replace(http(429), retry_after_s=900.0)
    assert decide_robots(long_wait, None, NOW).retry_at == NOW + 900
    huge_wait = replace(http(503), retry_after_s=10 * DAY)
    assert decide_robots(huge_wait, None, NOW).retry_at == NOW + 6 * 3600


def test_success_after_failures_resets_the_counters() -> None:
    failing = decide_robots(net(NetworkErrorClass.TIMEOUT), None, NOW).state
    failing = decide_robots(http(503), failing, NOW + 60).state
    decision = decide_robots(http(200, body=BODY), failing, NOW + 200)
    assert decision.state == RobotsState(last_good_text=BODY.decode(), last_good_fetched_at=NOW + 200)


def test_good_copy_keeps_applying_during_an_outage() -> None:
    good = RobotsState(last_good_text=OLD_TEXT, last_good_fetched_at=NOW - 29 * DAY)
    decision = decide_robots(http(503), good, NOW)
    assert decision.mode is PARSED
    assert decision.rules_text == OLD_TEXT
    assert not decision.suspended
    assert decision.reason is DecisionReason.GOOD_COPY_DURING_OUTAGE
    assert decision.retry_at == NOW + 60  # robots.txt is still retried
    assert decision.valid_until == decision.retry_at
    assert decision.state.last_good_fetched_at == NOW - 29 * DAY  # not refreshed by the failure
    assert decision.state.consecutive_failures == 1


def test_good_copy_older_than_30_days_no_longer_applies() -> None:
    old = RobotsState(last_good_text=OLD_TEXT, last_good_fetched_at=NOW - 31 * DAY, consecutive_failures=3)
    decision = decide_robots(net(NetworkErrorClass.DNS), old, NOW)
    assert (decision.mode, decision.suspended) == (DISALLOW, True)
    assert decision.state.last_good_text is None
    assert decision.state.consecutive_failures == 4


def _run_5xx(days: float, settings: RobotsSettings, start: RobotsState | None = None) -> RobotsDecision:
    """Answer 503 to every robots retry for `days` days, following retry_at; return the last decision."""
    state, now = start, NOW
    while True:
        decision = decide_robots(http(503), state, now, settings)
        assert decision.retry_at is not None
        if now - NOW >= days * DAY:
            return decision
        state, now = decision.state, decision.retry_at


def test_30_days_of_5xx_without_copy_stay_disallowed_by_default() -> None:
    decision = _run_5xx(31, RobotsSettings())
    assert (decision.mode, decision.suspended) == (DISALLOW, True)


def test_30_days_of_5xx_without_copy_allow_all_when_the_setting_says_so() -> None:
    settings = RobotsSettings(robots_5xx_allow_after_days=30)
    before = _run_5xx(29.5, settings)
    assert (before.mode, before.suspended) == (DISALLOW, True)
    after = _run_5xx(30.1, settings)
    assert (after.mode, after.suspended, after.reason) == (ALLOW, False, DecisionReason.LONG_5XX_OUTAGE_ALLOW)
    assert after.retry_at is not None and after.valid_until == after.retry_at  # still retried


def test_30_days_of_5xx_with_copy_use_the_copy_then_follow_the_setting() -> None:
    settings = RobotsSettings(robots_5xx_allow_after_days=30)
    good = RobotsState(last_good_text=OLD_TEXT, last_good_fetched_at=NOW)
    early = _run_5xx(29.5, settings, good)
    assert (early.mode, early.rules_text, early.suspended) == (PARSED, OLD_TEXT, False)
    late = _run_5xx(30.1, settings, good)
    assert late.mode is ALLOW
    assert _run_5xx(30.1, RobotsSettings(), good).mode is DISALLOW


def test_non_5xx_failure_breaks_the_continuous_5xx_run() -> None:
    settings = RobotsSettings(robots_5xx_allow_after_days=30)
    state = RobotsState(
        consecutive_failures=500, first_failure_at=NOW - 40 * DAY, first_5xx_at=NOW - 40 * DAY
    )
    assert decide_robots(http(503), state, NOW, settings).mode is ALLOW
    broken = decide_robots(net(NetworkErrorClass.TIMEOUT), state, NOW, settings)
    assert broken.mode is DISALLOW and broken.state.first_5xx_at is None
    assert decide_robots(http(503), broken.state, NOW + 60, settings).mode is DISALLOW


def test_429_never_counts_towards_the_5xx_allow() -> None:
    settings = RobotsSettings(robots_5xx_allow_after_days=30)
    state = RobotsState(consecutive_failures=500, first_failure_at=NOW - 40 * DAY)
    assert decide_robots(http(429), state, NOW, settings).mode is DISALLOW


def test_definitive_answer_after_an_outage_drops_the_copy() -> None:
    good = RobotsState(last_good_text=OLD_TEXT, last_good_fetched_at=NOW, consecutive_failures=2)
    decision = decide_robots(http(404), good, NOW)
    assert decision.mode is ALLOW
    assert decision.state == RobotsState()


# decision_for: what a worker does with one page of the host.

PARSED_DECISION = decide_robots(http(200, body=BODY), None, NOW)
SUSPENDED = decide_robots(http(503), None, NOW)


@pytest.mark.parametrize(
    ("decision", "now", "path", "action", "until"),
    [
        (None, NOW, "/", PageAction.FETCH_ROBOTS, None),
        (PARSED_DECISION, NOW + 10, "/public", PageAction.FETCH, None),
        (PARSED_DECISION, NOW + 10, "/private", PageAction.DISALLOWED, None),
        (PARSED_DECISION, NOW + DAY, "/public", PageAction.FETCH_ROBOTS, None),
        (SUSPENDED, NOW + 1, "/public", PageAction.WAIT, NOW + 60),
        (SUSPENDED, NOW + 60, "/public", PageAction.FETCH_ROBOTS, None),
        (decide_robots(http(404), None, NOW), NOW + 1, "/private", PageAction.FETCH, None),
        (
            decide_robots(http(403), None, NOW, RobotsSettings(disallow_on_401_403=True)),
            NOW + 1,
            "/public",
            PageAction.DISALLOWED,
            None,
        ),
        (
            decide_robots(http(503), RobotsState(OLD_TEXT, NOW - DAY), NOW),
            NOW + 1,
            "/old",
            PageAction.DISALLOWED,
            None,
        ),
        (
            decide_robots(http(503), RobotsState(OLD_TEXT, NOW - DAY), NOW),
            NOW + 1,
            "/new",
            PageAction.FETCH,
            None,
        ),
        (
            decide_robots(http(503), RobotsState(OLD_TEXT, NOW - DAY), NOW),
            NOW + 61,
            "/new",
            PageAction.FETCH_ROBOTS,
            None,
        ),
    ],
)
def test_decision_for_a_page(
    decision: RobotsDecision | None, now: float, path: str, action: PageAction, until: float | None
) -> None:
    verdict = decision_for(decision, now, path)
    assert (verdict.action, verdict.until) == (action, until)


def test_decision_for_uses_the_given_rules() -> None:
    rules = rules_for(PARSED_DECISION, ("SEOLens", "*"))
    assert decision_for(PARSED_DECISION, NOW, "/private", rules).action is PageAction.DISALLOWED
    assert decision_for(PARSED_DECISION, NOW, "/robots.txt", rules).action is PageAction.FETCH
