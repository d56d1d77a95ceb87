"""Crawl control: start, list, inspect, pause, resume, cancel, report links, operator switch.

Written against CrawlStore and ResultsStore; status changes are conditional writes (`allowed_from`), so two
racing requests cannot both win and an impossible transition is a StatusConflict, never a silent overwrite.
"""

from __future__ import annotations

import calendar
import re
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from seolens_core.adapters.crawls import CrawlNotFound, CrawlPage, CrawlRecord, CrawlStatus, CrawlStore
from seolens_core.adapters.results import ResultsStore
from seolens_core.control._starter import ExecutionStarter
from seolens_core.settings import CrawlSettings
from seolens_core.urls import NormalizedURL, normalize

REPORT_LINK_EXPIRY_S = 900
_CRAWL_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")

PAUSABLE = (CrawlStatus.QUEUED, CrawlStatus.RUNNING)
RESUMABLE = (CrawlStatus.PAUSED,)
CANCELLABLE = (CrawlStatus.QUEUED, CrawlStatus.RUNNING, CrawlStatus.PAUSED)


class ReportNotReady(RuntimeError):
    """The crawl has no report objects yet."""


@dataclass(frozen=True, slots=True)
class ReportLink:
    name: str
    key: str
    url: str
    expires_in_s: int


def site_of(settings: CrawlSettings) -> str:
    """The site a crawl audits: the origin of its first start URL (the `by_site` index key)."""
    first = normalize(settings.start_urls[0])
    return first.origin if isinstance(first, NormalizedURL) else settings.start_urls[0]


def _new_id() -> str:
    return uuid.uuid4().hex[:16]


class CrawlControl:
    def __init__(
        self,
        crawls: CrawlStore,
        results: ResultsStore,
        starter: ExecutionStarter,
        *,
        clock: Callable[[], float] = time.time,
        new_id: Callable[[], str] = _new_id,
    ) -> None:
        self.crawls = crawls
        self.results = results
        self.starter = starter
        self._clock = clock
        self._new_id = new_id

    async def start(self, settings: CrawlSettings, owner: str | None = None) -> CrawlRecord:
        """Record the crawl as QUEUED (owned by `owner`), then start its execution; a refused start marks it
        FAILED (the reason is logged, not stored: it can name accounts and roles)."""
        crawl_id = self._new_id()
        record = await self.crawls.create(crawl_id, settings, site_of(settings), self._clock(), owner=owner)
        try:
            await self.starter.start(crawl_id)
        except Exception:
            await self.crawls.set_status(
                crawl_id, CrawlStatus.FAILED, now=self._clock(), error="execution not started"
            )
            raise
        return record

    async def get(self, crawl_id: str, owner: str | None = None) -> CrawlRecord:
        """The crawl; with `owner`, only if that caller owns it (another's crawl is unknown to it)."""
        record = await self.crawls.get(_checked(crawl_id))
        if owner is not None and record.owner != owner:
            raise CrawlNotFound(crawl_id)
        return record

    async def recent(
        self, owner: str, limit: int = 50, status: CrawlStatus | None = None, cursor: str | None = None
    ) -> CrawlPage:
        """`owner`'s crawls, newest first, a page at a time."""
        return await self.crawls.of_owner(owner, limit=limit, status=status, cursor=cursor)

    async def pause(self, crawl_id: str, owner: str | None = None) -> CrawlRecord:
        return await self._move(crawl_id, CrawlStatus.PAUSED, PAUSABLE, owner)

    async def resume(self, crawl_id: str, owner: str | None = None) -> CrawlRecord:
        return await self._move(crawl_id, CrawlStatus.RUNNING, RESUMABLE, owner)

    async def cancel(self, crawl_id: str, owner: str | None = None) -> CrawlRecord:
        return await self._move(crawl_id, CrawlStatus.CANCELLED, CANCELLABLE, owner)

    async def report_links(
        self, crawl_id: str, expires_s: int = REPORT_LINK_EXPIRY_S, owner: str | None = None
    ) -> list[ReportLink]:
        record = await self.get(crawl_id, owner)
        keys = await self.results.report_keys(record.crawl_id)
        if not keys:
            raise ReportNotReady(f"crawl {crawl_id} has no report yet (status {record.status.value})")
        return [
            ReportLink(key.rsplit("/", 1)[-1], key, await self.results.presign(key, expires_s), expires_s)
            for key in keys
        ]

    async def frontier_paused(self) -> bool:
        return await self.crawls.frontier_paused()

    async def set_frontier_paused(self, paused: bool) -> None:
        """The operator switch: pauses (or resumes) fetching for every crawl at once."""
        await self.crawls.set_frontier_paused(paused)

    async def _move(
        self,
        crawl_id: str,
        target: CrawlStatus,
        allowed_from: tuple[CrawlStatus, ...],
        owner: str | None,
    ) -> CrawlRecord:
        crawl_id = (await self.get(crawl_id, owner)).crawl_id  # another caller's crawl is unknown to this one
        await self.crawls.set_status(crawl_id, target, allowed_from=allowed_from, now=self._clock())
        return await self.crawls.get(crawl_id)


def _checked(crawl_id: str) -> str:
    """Ids that cannot be a crawl (the frontier switch item, oversized keys) are simply unknown."""
    if not _CRAWL_ID.match(crawl_id):
        raise CrawlNotFound(crawl_id)
    return crawl_id


def progress_view(record: CrawlRecord, now: float) -> dict[str, Any]:
    """Progress as the API shows it: pages against the page budget and time against the time budget."""
    fetched = record.counters.get("n_fetched", 0)
    settings = record.settings
    end = _epoch(record.finished_at) if record.finished_at else now
    elapsed = max(0.0, end - record.started_epoch)
    return {
        "fetched": fetched,
        "max_pages": settings.max_pages,
        "pages_fraction": round(min(1.0, fetched / settings.max_pages), 4) if settings.max_pages else None,
        "elapsed_s": round(elapsed, 1),
        "max_seconds": settings.max_seconds,
    }


def _epoch(iso: str) -> float:
    return float(calendar.timegm(time.strptime(iso, "%Y-%m-%dT%H:%M:%SZ")))
