"""Crawl-delay policy: the robots delay is a floor under AIMD, refused or locally capped when too long.

The delay always comes from the host's own parsed rules (`RobotsRules.crawl_delay`), never from message
metadata or another host's headers; outlinks never inherit it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from ._settings import DEFAULT_ROBOTS_SETTINGS, RobotsSettings

ALERT_ROBOTS_CRAWL_DELAY_TOO_LONG = "ALERT_ROBOTS_CRAWL_DELAY_TOO_LONG"


@dataclass(frozen=True, slots=True)
class CrawlDelayVerdict:
    """How a host's robots Crawl-delay is applied."""

    requested_s: float | None
    """The Crawl-delay of the applied group; None when robots.txt sets none."""
    pacing_floor_s: float
    """Floor under the AIMD delay in the shared host pacing: always the full request (0 = no floor)."""
    local_wait_cap_s: float | None
    """Longest a worker waits locally for the host's next slot; None = no cap (beyond it, requeue)."""
    refused: bool
    """True: the delay exceeds `max_crawl_delay_s` and no cap is forced; skip the host with `finding`."""
    finding: str | None = None

    @property
    def pacing_floor_ms(self) -> int:
        """The floor in whole ms, rounded up so pacing is never faster than robots.txt asks."""
        return math.ceil(self.pacing_floor_s * 1000)


def crawl_delay_policy(
    rules_delay: float | None, settings: RobotsSettings = DEFAULT_ROBOTS_SETTINGS
) -> CrawlDelayVerdict:
    """Apply `max_crawl_delay_s`: accept, refuse with a finding, or (forced) cap only the local wait."""
    if rules_delay is None or not math.isfinite(rules_delay) or rules_delay < 0:
        return CrawlDelayVerdict(None, 0.0, None, False)
    if rules_delay <= settings.max_crawl_delay_s:
        return CrawlDelayVerdict(rules_delay, rules_delay, None, False)
    if settings.force_crawl_delay_cap:
        return CrawlDelayVerdict(rules_delay, rules_delay, settings.max_crawl_delay_s, False)
    return CrawlDelayVerdict(rules_delay, rules_delay, None, True, ALERT_ROBOTS_CRAWL_DELAY_TOO_LONG)


@dataclass(frozen=True, slots=True)
class FloorChange:
    """A new robots floor and how the running AIMD delay must react to it."""

    floor_s: float
    """The floor from now on (the new request, possibly lower than before)."""
    raise_current_now: bool
    """True: lift the current delay to `floor_s` at once. False: leave the current delay alone and
    let AIMD recovery walk it down, never below `floor_s`."""


def next_floor(previous_floor_s: float, new_delay_s: float | None) -> FloorChange:
    """A robots refresh changes the floor: a rise applies at once, a fall never speeds a crawl up at once."""
    floor = new_delay_s if new_delay_s is not None and math.isfinite(new_delay_s) and new_delay_s > 0 else 0.0
    return FloorChange(floor, floor > previous_floor_s)


def effective_delay(current_delay_s: float, floor_s: float) -> float:
    """The delay AIMD may use: its own current delay, never below the robots floor."""
    return max(current_delay_s, floor_s)
