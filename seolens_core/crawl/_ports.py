"""The ports the page worker needs for robots and pacing; adapters implement them, tests fake them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from seolens_core.fetch import Fetcher, FetchResult
from seolens_core.politeness import WindowReport
from seolens_core.settings import CrawlSettings


@dataclass(frozen=True, slots=True)
class RobotsAnswer:
    """May this URL be fetched now? `wait_until` set = the host is suspended or its robots.txt is being fetched."""

    allowed: bool
    wait_until: float | None = None
    crawl_delay_s: float | None = None
    reason: str = ""
    finding: str | None = None
    applied_agent: str | None = None
    suspended: bool = False
    """True when the host's robots.txt is unreachable and the host is suspended until `wait_until`."""


class RobotsPort(Protocol):
    async def check(
        self, origin: str, path_query: str, settings: CrawlSettings, fetcher: Fetcher, now: float
    ) -> RobotsAnswer: ...

    async def sitemaps(
        self, origin: str, settings: CrawlSettings, fetcher: Fetcher, now: float
    ) -> list[str]: ...


@dataclass(frozen=True, slots=True)
class Ticket:
    """A granted fetch slot on a host: start not before `start_at`, then release with the outcome."""

    origin: str
    lease_id: str
    start_at: float
    slack_s: float = 0.0
    """Start no later than `start_at + slack_s`, or the gap to the next worker's slot shrinks: give it back."""


@dataclass(frozen=True, slots=True)
class Wait:
    """No slot now; come back at `until` (a re-send with that delay)."""

    until: float
    reason: str


class PacingPort(Protocol):
    async def acquire(
        self,
        origin: str,
        settings: CrawlSettings,
        floor_s: float | None,
        now: float,
        on_granted: Callable[[], object] | None = None,
        *,
        crawl_id: str = "",
    ) -> Ticket | Wait:
        """A slot (waited for until shortly before its start) or when to come back; `on_granted` runs as
        soon as the slot is granted, so the caller's preparation overlaps the wait. `crawl_id`: whose
        request it is (a pacing deferral takes a turn in that crawl's line of returns on the host)."""
        ...

    async def release(self, ticket: Ticket, result: FetchResult, waf: bool, now: float) -> None: ...

    async def give_back(self, ticket: Ticket) -> None: ...

    async def settle(self) -> None:
        """Return every slot kept for a next request (the end of an invocation)."""
        ...

    def idle(self, origin: str, settings: CrawlSettings) -> bool:
        """As last seen: a slot on `origin` would start at once (no spacing to wait for)."""
        ...

    async def slide(self, ticket: Ticket) -> Ticket | None:
        """The missed slot moved to the earliest start, or given back (None)."""
        ...

    def drain_timeline(self) -> dict[str, list[WindowReport]]: ...
