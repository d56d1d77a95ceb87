"""The flush counts every URL it enqueues (re-sends of a crashed delivery included) in its depth's queue."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

from seolens_core.adapters.frontier_queue import Outgoing
from seolens_core.adapters.urls import Claimed
from seolens_core.crawl import Contribution, PageWorker, WorkerServices
from seolens_core.frontier import FrontierMessage


def _msg(path: str, depth: int) -> FrontierMessage:
    return FrontierMessage("c1", f"http://h{path}", path.strip("/").rjust(16, "0"), depth, parent="p")


class _Urls:
    """A visited set where `/old` was claimed by this parent in a delivery that crashed before its flush."""

    def __init__(self) -> None:
        self.created = {"/new"}
        self.claimed_before = {"/old"}

    async def claim(self, messages: Sequence[FrontierMessage], *_: Any, **__: Any) -> Claimed:
        new = [m for m in messages if _path(m) in self.created]
        return Claimed(new + [m for m in messages if _path(m) in self.claimed_before], new)


def _path(msg: FrontierMessage) -> str:
    return msg.url.removeprefix("http://h")


def test_a_re_sent_url_is_counted_like_a_new_one() -> None:
    services: Any = WorkerServices(
        crawls=None,
        urls=_Urls(),
        queue=None,
        results=None,
        robots=None,
        pacing=None,  # type: ignore[arg-type]
    )
    worker = PageWorker(services)
    c = Contribution(crawl_id="c1")
    c.enqueue += [
        (_msg("/new", 2), "http://h"),
        (_msg("/old", 2), "http://h"),
        (_msg("/taken", 2), "http://h"),
    ]
    outgoing: list[Outgoing] = []
    counters: dict[str, dict[str, int]] = {}
    asyncio.run(worker._claim_discovered([c], outgoing, counters))
    assert sorted(o.message.url for o in outgoing) == ["http://h/new", "http://h/old"]
    # Both are queued at depth 2 now and each will leave it once: without the re-send, q2 would end at -1.
    assert counters == {"c1": {"n_discovered": 2, "q2": 2}}
