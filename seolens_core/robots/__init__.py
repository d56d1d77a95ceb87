"""robots.txt engine: RFC 9309 matching, the fetch-outcome policy and the Crawl-delay policy (pure)."""

from __future__ import annotations

from ._crawl_delay import (
    ALERT_ROBOTS_CRAWL_DELAY_TOO_LONG,
    CrawlDelayVerdict,
    FloorChange,
    crawl_delay_policy,
    effective_delay,
    next_floor,
)
from ._policy import (
    DecisionReason,
    FetchKind,
    NetworkErrorClass,
    PageAction,
    PageVerdict,
    RobotsDecision,
    RobotsFetchOutcome,
    RobotsMode,
    RobotsState,
    decide_robots,
    decision_for,
    rules_for,
)
from ._rules import DEFAULT_AGENTS, DEFAULT_MAX_BYTES, RobotsRules, compact_robots_text, decode_robots_body
from ._settings import DEFAULT_ROBOTS_SETTINGS, RobotsSettings, validate_settings

__all__ = [
    "ALERT_ROBOTS_CRAWL_DELAY_TOO_LONG",
    "DEFAULT_AGENTS",
    "DEFAULT_MAX_BYTES",
    "DEFAULT_ROBOTS_SETTINGS",
    "CrawlDelayVerdict",
    "DecisionReason",
    "FetchKind",
    "FloorChange",
    "NetworkErrorClass",
    "PageAction",
    "PageVerdict",
    "RobotsDecision",
    "RobotsFetchOutcome",
    "RobotsMode",
    "RobotsRules",
    "RobotsSettings",
    "RobotsState",
    "compact_robots_text",
    "crawl_delay_policy",
    "decide_robots",
    "decision_for",
    "decode_robots_body",
    "effective_delay",
    "next_floor",
    "rules_for",
    "validate_settings",
]
