"""WaveGate: records of a large batch are admitted in groups, so that they ask for their slots together."""

from __future__ import annotations

import asyncio

import pytest

from seolens_core.crawl._worker import WaveGate


def test_the_gate_reopens_when_half_have_left_and_admits_the_free_places_together() -> None:
    admitted: list[int] = []

    async def main() -> None:
        gate = WaveGate(4)
        done = [asyncio.Event() for _ in range(10)]

        async def record(i: int) -> None:
            async with gate:
                admitted.append(i)
                await done[i].wait()

        tasks = [asyncio.create_task(record(i)) for i in range(10)]
        await asyncio.sleep(0.01)
        assert admitted == [0, 1, 2, 3]
        done[0].set()
        await asyncio.sleep(0.01)
        assert admitted == [0, 1, 2, 3]  # three inside: a semaphore would admit one now, alone
        done[1].set()
        await asyncio.sleep(0.01)
        assert admitted == [0, 1, 2, 3, 4, 5]  # two inside: the two free places, together
        for event in done:
            event.set()
        await asyncio.gather(*tasks)
        assert sorted(admitted) == list(range(10))

    asyncio.run(main())


def test_a_record_that_fails_inside_still_leaves() -> None:
    async def main() -> int:
        gate = WaveGate(1)

        async def failing() -> None:
            async with gate:
                raise RuntimeError("boom")

        with pytest.raises(RuntimeError):
            await failing()
        async with gate:
            return 1

    assert asyncio.run(main()) == 1


def test_size_must_be_positive() -> None:
    with pytest.raises(ValueError):
        WaveGate(0)


def test_waiters_enter_in_arrival_order_and_a_cancelled_one_takes_no_place() -> None:
    """A waiter cancelled while it waits leaves no trace; one cancelled after it was handed its place (before
    it ran) gives the place on: the gate neither leaks nor loses places."""

    async def main() -> tuple[list[int], int, int]:
        gate = WaveGate(2)
        admitted: list[int] = []
        release = [asyncio.Event() for _ in range(6)]

        async def record(i: int) -> None:
            async with gate:
                admitted.append(i)
                await release[i].wait()

        tasks = [asyncio.create_task(record(i)) for i in range(6)]
        await asyncio.sleep(0.01)
        tasks[2].cancel()  # waiting
        await asyncio.sleep(0.01)
        release[0].set()  # one of two inside left: the gate reopens, 3 is handed the free place
        await asyncio.sleep(0)  # 0 leaves and hands the place on; 3 has not run yet
        tasks[3].cancel()  # so 3 gives it to 4
        await asyncio.sleep(0.01)
        inside_then = list(admitted)
        for event in release:
            event.set()
        await asyncio.gather(*tasks, return_exceptions=True)
        left_inside = gate._inside

        async def enter_and_leave() -> None:
            async with gate:
                await asyncio.sleep(0)

        await asyncio.wait_for(asyncio.gather(*(enter_and_leave() for _ in range(4))), timeout=5)
        return inside_then, left_inside, gate._inside

    inside_then, left_inside, inside_after = asyncio.run(main())
    assert inside_then == [0, 1, 4]
    assert left_inside == 0 and inside_after == 0


def test_a_reopening_admits_one_waiter_a_loop_turn() -> None:
    """As an `asyncio.Condition` admitted them: each admitted waiter takes its place when it runs and wakes the
    next. Handing every freed place out in one turn started a reopened group's records together, which slowed
    polite crawls of many hosts (`bench_politeness.py`, 20 hosts: 36-40 s against 30-32)."""

    async def main() -> list[int]:
        gate = WaveGate(4)
        admitted: list[int] = []
        release = [asyncio.Event() for _ in range(8)]

        async def record(i: int) -> None:
            async with gate:
                admitted.append(i)
                await release[i].wait()

        tasks = [asyncio.create_task(record(i)) for i in range(8)]
        await asyncio.sleep(0.01)
        release[0].set()
        release[1].set()  # two of four inside leave: the gate reopens with two places
        seen = []
        for _ in range(20):
            await asyncio.sleep(0)
            seen.append(len(admitted))
        for event in release:
            event.set()
        await asyncio.gather(*tasks)
        return seen

    seen = asyncio.run(main())
    steps = [b - a for a, b in zip([4, *seen], seen, strict=False)]
    assert seen[-1] == 6
    assert max(steps) == 1
