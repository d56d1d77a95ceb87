"""The adapters' fan-outs (calls at once) leave nothing running when one call fails: a warm container's loop
would otherwise resume the rest in its next invocation, next to the retry of the step that failed."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from seolens_core.adapters.frontier_queue import FrontierQueue, Outgoing
from seolens_core.adapters.urls import UrlStore
from seolens_core.frontier import FrontierMessage


class _OneFailsOneHangs:
    """A client whose first call hangs until cancelled and whose second call fails."""

    def __init__(self) -> None:
        self.calls = 0
        self.cancelled = 0

    async def _call(self) -> dict[str, Any]:
        self.calls += 1
        if self.calls == 1:
            try:
                await asyncio.sleep(3600)
            except asyncio.CancelledError:
                self.cancelled += 1
                raise
        await asyncio.sleep(0)
        raise RuntimeError("the service said no")

    async def send_message_batch(self, **_: Any) -> dict[str, Any]:
        return await self._call()

    async def batch_get_item(self, **_: Any) -> dict[str, Any]:
        return await self._call()


def _messages(n: int) -> list[FrontierMessage]:
    return [
        FrontierMessage(crawl_id="c", url=f"http://a.test/{i}", key=f"{i:032x}", depth=1) for i in range(n)
    ]


def _nothing_left_running() -> bool:
    current = asyncio.current_task()
    return all(t.done() for t in asyncio.all_tasks() if t is not current)


def test_a_failed_send_chunk_cancels_the_others() -> None:
    client = _OneFailsOneHangs()

    async def scenario() -> bool:
        with pytest.raises(RuntimeError, match="said no"):
            await FrontierQueue(client, "q").send([Outgoing(m) for m in _messages(20)])
        return _nothing_left_running()

    assert asyncio.run(scenario())
    assert (client.calls, client.cancelled) == (2, 1)


def test_a_failed_read_page_cancels_the_others() -> None:
    client = _OneFailsOneHangs()

    async def scenario() -> bool:
        with pytest.raises(RuntimeError, match="said no"):
            await UrlStore(client, "urls").states(_messages(150))
        return _nothing_left_running()

    assert asyncio.run(scenario())
    assert (client.calls, client.cancelled) == (2, 1)
