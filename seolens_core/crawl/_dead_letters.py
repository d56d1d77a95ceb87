"""DeadLetterDrain: what becomes of a frontier message that failed `maxReceiveCount` times.

Left in the dead-letter queue, such a message kept its URL `queued` (and, when its batch crashed mid-flush,
that batch's journal open), so the crawl could never drain. Each one is sent back to the frontier a few
times with a growing delay (most failures are a crashed or timed-out container), and after that its URL is
finished with outcome `dead_letter` and a report row; a journal found open is published. Nothing is dropped:
a message that is not even a frontier message is kept in the results bucket for inspection.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from seolens_core.adapters._gather import all_or_cancel
from seolens_core.adapters.crawls import CrawlNotFound, CrawlStatus, CrawlStore
from seolens_core.adapters.frontier_queue import FrontierQueue, Outgoing
from seolens_core.adapters.results import ResultsStore
from seolens_core.adapters.urls import DONE, Journal, UrlStore
from seolens_core.crawl._pages import dead_letter_row
from seolens_core.crawl._worker import close_journals, part_id, replay_journals
from seolens_core.frontier import FrontierMessage, MessageError
from seolens_core.urls import NormalizedURL, normalize

MALFORMED_PREFIX = "dead-letters/malformed/"


@dataclass
class DeadLetterServices:
    crawls: CrawlStore
    urls: UrlStore
    queue: FrontierQueue
    results: ResultsStore
    clock: Callable[[], float] = time.time


REDRIVE_SPACING_S = 1.0


def redrive_delay_s(base_s: float, redrives: int, position: int = 0) -> float:
    """Delay before the next attempt of a message redriven `redrives` times so far, the `position`-th of its
    dead-letter batch: doubled each time, at most SQS's 15 min. The messages of one batch come back one second
    apart (SQS delays are whole seconds), each in a batch of its own: a crashed batch's innocent messages no
    longer share every attempt with the one that crashes it."""
    return min(900.0, base_s * 2.0**redrives + position * REDRIVE_SPACING_S)


class DeadLetterDrain:
    """One dead-lettered message at a time; idempotent, so a redelivered copy changes nothing."""

    def __init__(self, services: DeadLetterServices) -> None:
        self.s = services

    async def handle(self, message_id: str, body: str, position: int = 0) -> str:
        """Redrive, finish or publish one dead-lettered message (`position`: its place in its batch)."""
        s = self.s
        try:
            msg = FrontierMessage.from_json(body)
        except MessageError:
            await s.results.put_object(
                f"{MALFORMED_PREFIX}{_safe(message_id)}.txt", body.encode("utf-8", "replace"), "text/plain"
            )
            return "malformed"
        try:
            record = await s.crawls.get(msg.crawl_id)
        except CrawlNotFound:
            return "unknown_crawl"  # as in the worker: a deleted crawl has nothing to record it against
        found = await s.urls.delivery([msg], s.clock())
        ident = (msg.crawl_id, msg.key)
        if found.states.get(ident) == DONE:
            journal = found.open.get((msg.crawl_id, found.parts.get(ident, "")))
            if journal is None:
                return "duplicate"
            await self.publish(journal)
            return "republished"
        settings = record.settings
        active = not record.status.terminal and record.status is not CrawlStatus.FINISHING
        if active and msg.redrives < settings.dead_letter_redrives:
            delay = redrive_delay_s(settings.dead_letter_retry_s, msg.redrives, position)
            await s.queue.send([Outgoing(replace(msg, redrives=msg.redrives + 1), s.clock() + delay)])
            return "redriven"
        # The row first: a crash after it repeats both (the report keeps one row per URL); after the finish
        # a redelivered copy finds the URL done and writes nothing. A copy that finished the URL meanwhile
        # wins the report too, since any fetched, error or disallowed row outranks a dead letter.
        await s.results.put_batch(msg.crawl_id, part_id(s.clock()), {"pages": [dead_letter_row(msg)]})
        url = normalize(msg.url)
        host = url.origin if isinstance(url, NormalizedURL) else ""
        won = await s.crawls.add_counters(
            msg.crawl_id,
            {"n_dead_letter": 1, msg.queue_counter: -1},
            once=s.urls.dead_letter_finish(msg, host, "dead_letter"),
        )
        return "dead_letter" if won else "duplicate"

    async def publish(self, journal: Journal) -> None:
        """What the crashed flush left unpublished: its rows and messages, then its counters with the close."""
        s = self.s
        pages: dict[str, list[dict[str, Any]]] = {}
        links: dict[str, list[dict[str, Any]]] = {}
        outgoing: list[Outgoing] = []
        replay_journals([journal], pages, links, outgoing)
        part = part_id(s.clock())
        rows = {"pages": pages.get(journal.crawl_id, []), "links": links.get(journal.crawl_id, [])}
        writes = [s.results.put_batch(journal.crawl_id, part, rows)]
        if outgoing:
            writes.append(s.queue.send(outgoing))
        await all_or_cancel(*writes)
        await all_or_cancel(*close_journals(s.crawls, s.urls, [journal]))


def _safe(message_id: str) -> str:
    return "".join(c for c in message_id if c.isalnum() or c in "-_")[:100] or uuid.uuid4().hex
