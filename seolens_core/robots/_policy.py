"""What a robots.txt fetch outcome means for a host: an explicit table after RFC 9309 section 2.3.1.

| outcome                                   | mode                       | cached as      |
| ----------------------------------------- | -------------------------- | -------------- |
| 2xx (after at most `max_redirects` hops)  | PARSED                     | good copy      |
| 3xx unresolved, too many hops, or a loop  | ALLOW_ALL (unavailable)    | definitive     |
| 4xx except 429                            | ALLOW_ALL (401/403: maybe DISALLOW_ALL) | definitive |
| 429, 5xx, other status, network error     | DISALLOW_ALL, host suspended until `retry_at` | never |
|   ... with a good copy younger than 30 d  | PARSED from that copy, robots retried at `retry_at` | never |
|   ... after N days of 5xx, setting on     | ALLOW_ALL, robots retried at `retry_at` | never |

Unlike Scrapy and HttpRobotRulesParser, no failure ever falls back to allow-all.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass

from ._rules import DEFAULT_AGENTS, RobotsRules, decode_robots_body
from ._settings import DAY_S, DEFAULT_ROBOTS_SETTINGS, RobotsSettings


class FetchKind(enum.Enum):
    """How the robots.txt fetch ended: a 2xx body, another HTTP status, or no HTTP answer at all."""

    OK = "ok"
    HTTP_STATUS = "http_status"
    NETWORK_ERROR = "network_error"


class NetworkErrorClass(enum.Enum):
    """Why no HTTP answer arrived; every class is treated as unreachable."""

    DNS = "dns"
    CONNECT = "connect"
    RESET = "reset"
    TIMEOUT = "timeout"
    TLS = "tls"
    OTHER = "other"


class RobotsMode(enum.Enum):
    """Which rules apply to the host's pages."""

    PARSED = "parsed"
    ALLOW_ALL = "allow_all"
    DISALLOW_ALL = "disallow_all"


class DecisionReason(enum.StrEnum):
    """Why a decision was taken; a stable code for logs and reports."""

    FETCHED = "fetched"
    UNAVAILABLE_4XX = "unavailable_4xx"
    FORBIDDEN_DISALLOW = "forbidden_disallow"
    REDIRECT_LIMIT = "redirect_limit"
    REDIRECT_LOOP = "redirect_loop"
    REDIRECT_UNRESOLVED = "redirect_unresolved"
    UNREACHABLE = "unreachable"
    GOOD_COPY_DURING_OUTAGE = "good_copy_during_outage"
    LONG_5XX_OUTAGE_ALLOW = "long_5xx_outage_allow"


@dataclass(frozen=True, slots=True)
class RobotsFetchOutcome:
    """What the caller observed when it fetched robots.txt (it follows redirects; the policy judges them)."""

    kind: FetchKind
    status: int | None = None
    """Final HTTP status; None for a network error. kind OK implies 2xx (200 if None)."""
    error: NetworkErrorClass | None = None
    """Set for NETWORK_ERROR; None there means OTHER."""
    redirect_hops: int = 0
    """Redirects followed before `status` arrived (0 = none)."""
    redirect_loop: bool = False
    """True if a redirect pointed back to a URL already visited in this chain."""
    body: bytes | None = None
    """The 2xx body (other statuses' bodies are ignored)."""
    max_age_s: float | None = None
    """`Cache-Control: max-age` of the final response; None when absent."""
    retry_after_s: float | None = None
    """`Retry-After` of a 429/503, in seconds from now; None when absent."""


@dataclass(frozen=True, slots=True)
class RobotsState:
    """Per-host robots memory kept between fetches (stored with the decision)."""

    last_good_text: str | None = None
    """Text of the last 2xx robots.txt; None when there is none (or it aged out)."""
    last_good_fetched_at: float | None = None
    consecutive_failures: int = 0
    """Unreachable answers since the last definitive one (0 = not failing)."""
    first_failure_at: float | None = None
    """Start of the current run of unreachable answers; None when not failing."""
    first_5xx_at: float | None = None
    """Start of the current unbroken run of 5xx answers (a 429 or network error resets it)."""


@dataclass(frozen=True, slots=True)
class RobotsDecision:
    """The robots decision for a host, stored in the per-host state and shared by every worker."""

    mode: RobotsMode
    rules_text: str | None
    """robots.txt text to parse when mode is PARSED; None otherwise."""
    valid_until: float
    """Epoch seconds after which robots.txt must be fetched again before any page."""
    retry_at: float | None
    """Next robots retry after an unreachable answer; None after a definitive answer."""
    suspended: bool
    """True: no page of the host is fetched before `retry_at`; its URLs wait, they are not dropped."""
    reason: DecisionReason
    state: RobotsState
    """The state to store for the next decision."""


def _backoff_s(failures: int, settings: RobotsSettings) -> float:
    """Retry gap after the n-th consecutive failure: base * 2**(n-1), capped (60 s, 2 min, ... 6 h)."""
    exponent = min(max(failures - 1, 0), 32)
    return float(min(settings.retry_base_s * 2.0**exponent, settings.retry_max_s))


def _cache_until(now: float, max_age_s: float | None, settings: RobotsSettings) -> float:
    """Cache expiry: 24 h at most, shorter when `Cache-Control: max-age` says so (floored)."""
    ttl = settings.cache_ttl_s
    if max_age_s is not None and max_age_s == max_age_s:  # NaN reads as absent
        ttl = min(ttl, max(max_age_s, settings.min_cache_ttl_s))
    return now + ttl


def _definitive(
    mode: RobotsMode,
    text: str | None,
    reason: DecisionReason,
    now: float,
    outcome: RobotsFetchOutcome,
    settings: RobotsSettings,
) -> RobotsDecision:
    """A decision from an answer that is not an outage: cached, failure counters reset."""
    state = RobotsState(last_good_text=text, last_good_fetched_at=now) if text is not None else RobotsState()
    return RobotsDecision(
        mode=mode,
        rules_text=text,
        valid_until=_cache_until(now, outcome.max_age_s, settings),
        retry_at=None,
        suspended=False,
        reason=reason,
        state=state,
    )


def _unreachable(
    outcome: RobotsFetchOutcome, previous: RobotsState | None, now: float, settings: RobotsSettings
) -> RobotsDecision:
    """429, 5xx, network errors: complete disallow unless a recent good copy (or the 5xx setting) applies."""
    prev = previous or RobotsState()
    failures = prev.consecutive_failures + 1
    is_5xx = (
        outcome.kind is FetchKind.HTTP_STATUS and outcome.status is not None and 500 <= outcome.status < 600
    )
    first_5xx_at = (prev.first_5xx_at if prev.first_5xx_at is not None else now) if is_5xx else None
    gap = _backoff_s(failures, settings)
    if outcome.retry_after_s is not None and outcome.retry_after_s == outcome.retry_after_s:
        gap = max(gap, min(outcome.retry_after_s, settings.retry_max_s))
    retry_at = now + gap

    copy_ok = (
        prev.last_good_text is not None
        and prev.last_good_fetched_at is not None
        and now - prev.last_good_fetched_at <= settings.good_copy_max_age_s
    )
    state = RobotsState(
        last_good_text=prev.last_good_text if copy_ok else None,
        last_good_fetched_at=prev.last_good_fetched_at if copy_ok else None,
        consecutive_failures=failures,
        first_failure_at=prev.first_failure_at if prev.first_failure_at is not None else now,
        first_5xx_at=first_5xx_at,
    )
    # During an outage robots.txt is retried at retry_at, and the decision expires then too.
    if copy_ok:
        mode, text, suspended, reason = (
            RobotsMode.PARSED,
            prev.last_good_text,
            False,
            DecisionReason.GOOD_COPY_DURING_OUTAGE,
        )
    elif (
        settings.robots_5xx_allow_after_days is not None
        and first_5xx_at is not None
        and now - first_5xx_at >= settings.robots_5xx_allow_after_days * DAY_S
    ):
        mode, text, suspended, reason = (
            RobotsMode.ALLOW_ALL,
            None,
            False,
            DecisionReason.LONG_5XX_OUTAGE_ALLOW,
        )
    else:
        mode, text, suspended, reason = RobotsMode.DISALLOW_ALL, None, True, DecisionReason.UNREACHABLE
    return RobotsDecision(
        mode=mode,
        rules_text=text,
        valid_until=retry_at,
        retry_at=retry_at,
        suspended=suspended,
        reason=reason,
        state=state,
    )


def decide_robots(
    outcome: RobotsFetchOutcome,
    previous: RobotsState | None,
    now: float,
    settings: RobotsSettings = DEFAULT_ROBOTS_SETTINGS,
) -> RobotsDecision:
    """Map one robots.txt fetch outcome (and the stored state) to the host's decision; see the table above."""
    if outcome.kind is FetchKind.NETWORK_ERROR:
        return _unreachable(outcome, previous, now, settings)
    if outcome.redirect_loop:
        return _definitive(RobotsMode.ALLOW_ALL, None, DecisionReason.REDIRECT_LOOP, now, outcome, settings)
    if outcome.redirect_hops > settings.max_redirects:
        return _definitive(RobotsMode.ALLOW_ALL, None, DecisionReason.REDIRECT_LIMIT, now, outcome, settings)
    status = outcome.status if outcome.status is not None else (200 if outcome.kind is FetchKind.OK else 0)
    if 200 <= status < 300:
        text, _ = decode_robots_body(outcome.body or b"", settings.max_bytes)
        return _definitive(RobotsMode.PARSED, text, DecisionReason.FETCHED, now, outcome, settings)
    if 300 <= status < 400:
        reason = (
            DecisionReason.REDIRECT_LIMIT
            if outcome.redirect_hops >= settings.max_redirects
            else DecisionReason.REDIRECT_UNRESOLVED
        )
        return _definitive(RobotsMode.ALLOW_ALL, None, reason, now, outcome, settings)
    if 400 <= status < 500 and status != 429:
        if status in (401, 403) and settings.disallow_on_401_403:
            return _definitive(
                RobotsMode.DISALLOW_ALL, None, DecisionReason.FORBIDDEN_DISALLOW, now, outcome, settings
            )
        return _definitive(RobotsMode.ALLOW_ALL, None, DecisionReason.UNAVAILABLE_4XX, now, outcome, settings)
    # 429, 5xx, and statuses outside 200..599: unreachable (RFC 9309 section 2.3.1.4).
    return _unreachable(outcome, previous, now, settings)


STORED_TEXT_MAX_BYTES = 1 << 62
"""No cut when a decision's text is parsed again: it was cut when the body was decided."""


class PageAction(enum.Enum):
    """What a worker does with a page of a host, given the host's stored robots decision."""

    FETCH = "fetch"
    WAIT = "wait"
    """Host suspended: keep the URL and come back at `until` (BlockQueueUntil)."""
    DISALLOWED = "disallowed"
    FETCH_ROBOTS = "fetch_robots"
    """No usable decision (none yet, expired, or retry due): refresh robots.txt first."""


@dataclass(frozen=True, slots=True)
class PageVerdict:
    """The answer of `decision_for`: act now, wait until `until`, or skip."""

    action: PageAction
    until: float | None = None


def rules_for(decision: RobotsDecision, agents: tuple[str, ...] = DEFAULT_AGENTS) -> RobotsRules:
    """The matcher for a decision (parse once per host and keep it next to the decision)."""
    if decision.mode is RobotsMode.PARSED:
        # The text was cut to `max_bytes` when decided; a stored compact form may be longer than its source.
        return RobotsRules.parse(decision.rules_text or "", agents, max_bytes=STORED_TEXT_MAX_BYTES)
    if decision.mode is RobotsMode.DISALLOW_ALL:
        return RobotsRules.parse("User-agent: *\nDisallow: /\n", agents)
    return RobotsRules.parse("", agents)


def decision_for(
    decision: RobotsDecision | None, now: float, path_query: str, rules: RobotsRules | None = None
) -> PageVerdict:
    """May `path_query` of the host be fetched at `now`? `rules` defaults to `rules_for(decision)`."""
    if decision is None:
        return PageVerdict(PageAction.FETCH_ROBOTS)
    if decision.suspended:
        if decision.retry_at is not None and now < decision.retry_at:
            return PageVerdict(PageAction.WAIT, decision.retry_at)
        return PageVerdict(PageAction.FETCH_ROBOTS)
    if now >= decision.valid_until:
        return PageVerdict(PageAction.FETCH_ROBOTS)
    if decision.mode is RobotsMode.ALLOW_ALL:
        return PageVerdict(PageAction.FETCH)
    if decision.mode is RobotsMode.DISALLOW_ALL:
        return PageVerdict(PageAction.DISALLOWED)
    matcher = rules if rules is not None else rules_for(decision)
    return PageVerdict(PageAction.FETCH if matcher.can_fetch(path_query) else PageAction.DISALLOWED)
