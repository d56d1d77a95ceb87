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
