"""BatchCommit: the records of one SQS batch are processed concurrently but written together.

Each record submits what it wants written (page rows, link rows, finished URLs, counters, re-sends) and waits;
when every record of the batch has submitted or withdrawn, one flush writes it all. A record is acknowledged
only after the flush that carries its data succeeded, so a failed flush leaves every record to be retried.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from seolens_core.adapters.frontier_queue import Outgoing
from seolens_core.adapters.urls import Journal
from seolens_core.frontier import FrontierMessage


@dataclass
class Contribution:
    """What one record adds to the batch's writes (`crawl_id` names whose counters they are)."""

    crawl_id: str = ""
    pages: list[dict[str, Any]] = field(default_factory=list)
    links: list[dict[str, Any]] = field(default_factory=list)
    finished: list[tuple[FrontierMessage, str, str]] = field(default_factory=list)
    outgoing: list[Outgoing] = field(default_factory=list)
    enqueue: list[tuple[FrontierMessage, str]] = field(default_factory=list)
    """Discovered URLs (message, origin) to claim: the flush claims the whole batch's at once."""
    counters: dict[str, int] = field(default_factory=dict)
    republish: list[Journal] = field(default_factory=list)
    """Open journals of earlier deliveries whose flush crashed: this batch's flush publishes them."""

    def count(self, name: str, n: int = 1) -> None:
        self.counters[name] = self.counters.get(name, 0) + n


Flush = Callable[[list[Contribution]], Awaitable[None]]


class BatchCommit:
    def __init__(self, expected: int, flush: Flush) -> None:
        self._expected = expected
        self._flush = flush
        self._arrived = 0
        self._contributions: list[Contribution] = []
        self._done: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def submit(self, contribution: Contribution) -> None:
        """Queue `contribution` and wait until the batch's flush has written it (raises if that failed)."""
        self._contributions.append(contribution)
        self._arrive()
        await asyncio.shield(self._done)

    def withdraw(self) -> None:
        """This record contributes nothing (it failed); do not make the others wait for it."""
        self._arrive()

    def _arrive(self) -> None:
        self._arrived += 1
        if self._arrived == self._expected:
            asyncio.get_running_loop().create_task(self._run())

    async def _run(self) -> None:
        try:
            if self._contributions:
                await self._flush(self._contributions)
        except BaseException as exc:
            # Every waiting record re-raises it, so the invocation fails (or, for a BaseException such as a
            # cancellation or a dying environment, ends) with it: nobody waits for a flush that will never come.
            self._done.set_exception(exc)
            self._done.exception()  # mark retrieved; the submitters re-raise it
            if not isinstance(exc, Exception):
                raise
        else:
            self._done.set_result(None)
