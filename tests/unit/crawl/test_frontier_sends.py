"""Frontier re-sends: the delay SQS is given, and SendGroup (re-sends made close together share one call;
a failed call reaches every caller)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import pytest

from seolens_core.adapters.frontier_queue import Outgoing, SendGroup
from seolens_core.frontier import FrontierMessage


class RecordingQueue:
    def __init__(self, fail: bool = False) -> None:
        self.calls: list[list[str]] = []
        self.fail = fail

    async def send(self, outgoing: Sequence[Outgoing]) -> None:
        self.calls.append([o.message.url for o in outgoing])
        if self.fail:
            raise RuntimeError("SQS unavailable")


def _out(n: int) -> Outgoing:
    return Outgoing(FrontierMessage(crawl_id="c", url=f"http://h/{n}", key=f"k{n}", depth=1), 0.0)


def _group(queue: RecordingQueue, window_s: float) -> SendGroup:
    return SendGroup(queue, window_s=window_s)  # type: ignore[arg-type]


def test_sends_within_the_window_share_one_call_and_later_ones_start_another() -> None:
    queue = RecordingQueue()

    async def main() -> None:
        group = _group(queue, 0.05)
        await asyncio.gather(group.send(_out(1)), group.send(_out(2)), group.send(_out(3)))
        await group.send(_out(4))

    asyncio.run(main())
    assert queue.calls == [["http://h/1", "http://h/2", "http://h/3"], ["http://h/4"]]


def test_every_caller_sees_a_failed_send() -> None:
    queue = RecordingQueue(fail=True)

    async def main() -> list[BaseException | None]:
        group = _group(queue, 0.01)
        return await asyncio.gather(group.send(_out(1)), group.send(_out(2)), return_exceptions=True)

    results = asyncio.run(main())
    assert len(queue.calls) == 1
    assert all(isinstance(r, RuntimeError) for r in results)


def test_a_caller_returns_only_once_its_message_is_sent() -> None:
    queue = RecordingQueue()

    async def main() -> None:
        group = _group(queue, 0.02)
        task = asyncio.ensure_future(group.send(_out(1)))
        await asyncio.sleep(0.005)
        assert not task.done() and queue.calls == []
        await task
        assert queue.calls == [["http://h/1"]]

    asyncio.run(main())


@pytest.mark.parametrize(
    ("ahead", "delay"),
    [(-3.0, 0), (0.0, 0), (0.2, 1), (0.9, 1), (1.4, 1), (1.5, 2), (2.6, 3), (899.7, 900), (5000.0, 900)],
)
def test_a_delay_is_the_nearest_whole_second_and_never_zero_while_ahead(ahead: float, delay: int) -> None:
    assert Outgoing(_out(1).message, 1000.0 + ahead).delay_s(1000.0) == delay
