"""Composition root: one Container per Lambda execution environment (per thread in the local runtime).

It owns the event loop, the aiobotocore clients and the long-lived services, built lazily on first use and
reused across invocations (clients are never built per invocation).
"""

from __future__ import annotations

import asyncio
import gc
import threading
from collections.abc import Coroutine
from functools import cached_property
from typing import Any, TypeVar

import sniffio

from seolens_core.adapters._aws import AwsClients, Resources
from seolens_core.adapters.crawls import CrawlStore
from seolens_core.adapters.frontier_queue import FrontierQueue
from seolens_core.adapters.results import ResultsStore
from seolens_core.adapters.secrets import SecretSealer
from seolens_core.adapters.urls import UrlStore
from seolens_core.crawl._dead_letters import DeadLetterDrain, DeadLetterServices
from seolens_core.crawl._pacing import PacingGate
from seolens_core.crawl._progress import ProgressChecker, ProgressServices
from seolens_core.crawl._report import Reporter, ReportServices
from seolens_core.crawl._robots_gate import RobotsGate
from seolens_core.crawl._seed import Seeder, SeedServices
from seolens_core.crawl._worker import PageWorker, WorkerServices
from seolens_core.report_html import render_report_html

T = TypeVar("T")


GC_THRESHOLDS = (10_000, 20, 20)
"""Python's default (700, 10, 10) collected young objects every 700 allocations: 7.5% of a fetch worker's CPU
in collections on a 6,000-page crawl (4,650 young, 35 full); 2% with these (fewer, larger collections). The
worker memory benchmark's peak: 189 MB instead of 180 (10 pages of 5 MB in flight; 256 MB is the budget)."""


def tune_gc() -> None:
    """After a cold start: what it built (modules, service models, clients) lives as long as the environment;
    out of the collector's sight (`gc.freeze`), a full collection no longer walks it (measured: 90-120 ms
    pauses mid-crawl, which made paced requests miss their slots); and collections run less often."""
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


class Container:
    def __init__(self, resources: Resources | None = None) -> None:
        self.resources = resources or Resources.from_env()
        self.loop = asyncio.new_event_loop()
        asyncio.set_event_loop(self.loop)
        # This thread runs only this asyncio loop; telling sniffio so (its documented hook) spares whatever still
        # asks it (anyio, httpcore's primitives where `fetch/_sync.py` has not replaced them) a running-task lookup.
        sniffio.thread_local.name = "asyncio"
        self._clients: AwsClients | None = None
        self.extras: dict[str, Any] = {}

    def run(self, coro: Coroutine[Any, Any, T]) -> T:
        """Run a coroutine on this container's loop (the sync Lambda entry points use this)."""
        return self.loop.run_until_complete(coro)

    @property
    def clients(self) -> AwsClients:
        if self._clients is None:
            self._clients = self.run(AwsClients().open())
            tune_gc()
        return self._clients

    @cached_property
    def crawls(self) -> CrawlStore:
        key = self.resources.secrets_key_id
        sealer = SecretSealer(self.clients.kms, key) if key else None
        return CrawlStore(self.clients.dynamodb, self.resources.crawls_table, sealer)

    @cached_property
    def urls(self) -> UrlStore:
        return UrlStore(self.clients.dynamodb, self.resources.urls_table)

    @cached_property
    def queue(self) -> FrontierQueue:
        return FrontierQueue(self.clients.sqs, self.resources.frontier_queue_url)

    @cached_property
    def dead_letters(self) -> FrontierQueue:
        return FrontierQueue(self.clients.sqs, self.resources.dead_letter_queue_url)

    @cached_property
    def results(self) -> ResultsStore:
        return ResultsStore(self.clients.s3, self.resources.results_bucket)

    @cached_property
    def robots(self) -> RobotsGate:
        return RobotsGate(self.clients.dynamodb, self.resources.hosts_table)

    @cached_property
    def pacing(self) -> PacingGate:
        return PacingGate(self.clients.dynamodb, self.resources.hosts_table)

    @cached_property
    def worker(self) -> PageWorker:
        return PageWorker(
            WorkerServices(
                crawls=self.crawls,
                urls=self.urls,
                queue=self.queue,
                results=self.results,
                robots=self.robots,
                pacing=self.pacing,
            )
        )

    @cached_property
    def dead_letter_drain(self) -> DeadLetterDrain:
        return DeadLetterDrain(DeadLetterServices(self.crawls, self.urls, self.queue, self.results))

    @cached_property
    def seeder(self) -> Seeder:
        return Seeder(
            SeedServices(self.crawls, self.urls, self.queue, self.results, self.robots, self.pacing)
        )

    @cached_property
    def progress(self) -> ProgressChecker:
        return ProgressChecker(
            ProgressServices(
                self.crawls,
                self.urls,
                self.robots,
                publish_journal=self.dead_letter_drain.publish,
                premap=self.reporter.premap,
            )
        )

    @cached_property
    def reporter(self) -> Reporter:
        return Reporter(
            ReportServices(
                self.crawls,
                self.urls,
                self.results,
                self.dead_letters,
                self.pacing,
                extra_outputs=[_html_report],
                clean_work=True,
            )
        )

    def close(self) -> None:
        if self._clients is not None:
            self.run(self._clients.close())
        self.loop.close()
        sniffio.thread_local.name = None


def _html_report(
    report: dict[str, Any], rows: list[dict[str, Any]], findings: list[dict[str, Any]]
) -> dict[str, bytes]:
    return {"report.html": render_report_html(report, rows, findings)}


_local = threading.local()


def container() -> Container:
    """This execution environment's container (Lambda runs one thread; the local runtime one per poller)."""
    current: Container | None = getattr(_local, "container", None)
    if current is None:
        current = Container()
        _local.container = current
    return current


def reset_container() -> None:
    """Drop this thread's container (tests and the local runtime between crawls)."""
    current: Container | None = getattr(_local, "container", None)
    if current is not None:
        current.close()
        _local.container = None
