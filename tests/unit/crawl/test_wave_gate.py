"""WaveGate: records of a large batch are admitted in groups, so that they ask for their slots together."""

from __future__ import annotations

import asyncio

import pytest

from seolens_core.crawl._worker import WaveGate


class _Records:
    """`n` records asking to enter `gate` at once, in order; each stays inside until it is released."""

    def __init__(self, gate: WaveGate, n: int) -> None:
        self.admitted: list[int] = []
        self.release = [asyncio.Event() for _ in range(n)]
        self.tasks = [asyncio.create_task(self._record(gate, i)) for i in range(n)]

    async def _record(self, gate: WaveGate, i: int) -> None:
        async with gate:
            self.admitted.append(i)
            await self.release[i].wait()

    async def finish(self) -> None:
        """Release every record and wait for all (the cancelled ones included)."""
        for event in self.release:
            event.set()
        await asyncio.gather(*self.tasks, return_exceptions=True)


def test_the_gate_reopens_when_half_have_left_and_admits_the_free_places_together() -> None:
    async def main() -> list[int]:
        records = _Records(WaveGate(4), 10)
        await asyncio.sleep(0.01)
        assert records.admitted == [0, 1, 2, 3]
        records.release[0].set()
        await asyncio.sleep(0.01)
        assert records.admitted == [0, 1, 2, 3]  # three inside: a semaphore would admit one now, alone
        records.release[1].set()
        await asyncio.sleep(0.01)
        assert records.admitted == [0, 1, 2, 3, 4, 5]  # two inside: the two free places, together
        await records.finish()
        return records.admitted

    assert sorted(asyncio.run(main())) == list(range(10))


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
    """A waiter cancelled while it waits leaves no trace; one cancelled after it was woken (before it ran)
    passes the wake on: the gate neither leaks nor loses places."""

    async def main() -> tuple[list[int], int, int]:
        gate = WaveGate(2)
        records = _Records(gate, 6)
        await asyncio.sleep(0.01)
        records.tasks[2].cancel()  # waiting
        await asyncio.sleep(0.01)
        records.release[0].set()  # one of two inside left: the gate reopens and wakes 3
        await asyncio.sleep(0)  # 0 leaves and wakes 3, which has not run yet
        records.tasks[3].cancel()  # so 3 wakes 4
        await asyncio.sleep(0.01)
        inside_then = list(records.admitted)
        await records.finish()
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
    """Each woken waiter takes its place when it runs and wakes the next. 225eb75 handed the places out as a
    record left (taken before the admitted ran, all in one turn), and polite crawls of many hosts slowed
    (`bench_politeness.py`, 20 hosts: 36-40 s in 3 of 5 runs against 30-32); this fails on it. The
    `asyncio.Condition` gate before it also let both run in one turn (it fails this too) and was not slow."""

    async def main() -> list[int]:
        records = _Records(WaveGate(4), 8)
        await asyncio.sleep(0.01)
        records.release[0].set()
        records.release[1].set()  # two of four inside leave: the gate reopens with two places
        seen = []
        for _ in range(20):
            await asyncio.sleep(0)
            seen.append(len(records.admitted))
        await records.finish()
        return seen

    seen = asyncio.run(main())
    steps = [b - a for a, b in zip([4, *seen], seen, strict=False)]
    assert seen[-1] == 6
    assert max(steps) == 1
