"""CallGroup: calls within the window share one batched run; each caller gets its own answer or the error.
read_ahead: ordered answers, a bounded number in flight, nothing left running when the reader stops.
all_or_cancel: the first failure raised as it is, the other calls cancelled first."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import aclosing

import pytest

from seolens_core.adapters._gather import CallGroup, SingleFlight, all_or_cancel, all_settled, read_ahead


def test_calls_within_the_window_run_once_and_each_gets_its_own_result() -> None:
    runs: list[list[int]] = []

    async def run(items: list[int]) -> list[int]:
        runs.append(items)
        return [i * 10 for i in items]

    async def main() -> list[int]:
        group: CallGroup[int, int] = CallGroup(run, window_s=0.01)
        first = await asyncio.gather(*(group.call(i) for i in range(3)))
        later = await group.call(7)  # after the window: a run of its own
        return [*first, later]

    assert asyncio.run(main()) == [0, 10, 20, 70]
    assert runs == [[0, 1, 2], [7]]


def test_submitted_items_join_at_once_and_a_flush_runs_them_without_waiting_out_the_window() -> None:
    runs: list[tuple[list[int], float]] = []

    async def run(items: list[int]) -> list[int]:
        runs.append((list(items), asyncio.get_running_loop().time()))
        return [i + 1 for i in items]

    async def main() -> tuple[list[int], float]:
        group: CallGroup[int, int] = CallGroup(run, window_s=10.0)
        t0 = asyncio.get_running_loop().time()
        answers = [group.submit(1), group.submit(2)]  # joined before anything ran
        group.flush()
        return list(await asyncio.gather(*answers)), t0

    answers, t0 = asyncio.run(main())
    assert answers == [2, 3]
    assert [items for items, _ in runs] == [[1, 2]]
    assert runs[0][1] - t0 < 1.0  # not the 10 s window


def test_a_failed_run_fails_every_caller_of_it() -> None:
    async def run(items: list[int]) -> list[int]:
        raise RuntimeError("throttled")

    async def main() -> list[BaseException | int]:
        group: CallGroup[int, int] = CallGroup(run, window_s=0.0)
        return await asyncio.gather(group.call(1), group.call(2), return_exceptions=True)

    answers = asyncio.run(main())
    assert [type(a) for a in answers] == [RuntimeError, RuntimeError]


def test_a_run_that_answers_the_wrong_number_of_results_is_an_error() -> None:
    async def run(items: list[int]) -> list[int]:
        return [1]

    async def main() -> None:
        group: CallGroup[int, int] = CallGroup(run, window_s=0.0)
        await asyncio.gather(group.call(1), group.call(2))

    with pytest.raises(RuntimeError, match="1 results for 2 items"):
        asyncio.run(main())


def test_single_flight_shares_the_call_in_flight_and_runs_anew_after_it_lands() -> None:
    calls: list[str] = []

    async def read(key: str) -> str:
        calls.append(key)
        await asyncio.sleep(0.01)
        return key.upper()

    async def main() -> list[str]:
        flight: SingleFlight[str, str] = SingleFlight()
        first = await asyncio.gather(*(flight.run(k, lambda k=k: read(k)) for k in ["a", "a", "b", "a"]))
        again = await flight.run("a", lambda: read("a"))
        return [*first, again]

    assert asyncio.run(main()) == ["A", "A", "B", "A", "A"]
    assert calls == ["a", "b", "a"]


def test_single_flight_gives_every_caller_the_error_and_survives_a_new_event_loop() -> None:
    flight: SingleFlight[str, int] = SingleFlight()

    async def fail() -> int:
        await asyncio.sleep(0.01)
        raise RuntimeError("boom")

    async def main() -> list[object]:
        return await asyncio.gather(flight.run("k", fail), flight.run("k", fail), return_exceptions=True)

    results = asyncio.run(main())
    assert [type(r) for r in results] == [RuntimeError, RuntimeError]

    async def ok() -> int:
        return 7

    assert asyncio.run(flight.run("k", ok)) == 7  # another loop (as in a warm Lambda container)


def test_a_group_left_pending_by_a_dead_event_loop_does_not_capture_the_next_loops_callers() -> None:
    """A warm container may run each invocation on a new event loop. A group whose loop stopped before it ran
    (the invocation was cut off) must not take in callers of the next loop: its run never comes, and they
    would wait forever."""
    runs: list[list[int]] = []

    async def run(items: list[int]) -> list[int]:
        runs.append(items)
        return [i + 1 for i in items]

    group: CallGroup[int, int] = CallGroup(run, window_s=0.05)

    async def cut_off() -> None:
        caller = asyncio.ensure_future(group.call(1))
        await asyncio.sleep(0)  # the group is open, its run not yet due
        caller.cancel()

    dead = asyncio.new_event_loop()
    dead.run_until_complete(cut_off())
    dead.close()

    async def next_invocation() -> int:
        return await asyncio.wait_for(group.call(5), 1.0)

    assert asyncio.run(next_invocation()) == 6
    assert runs == [[5]]


class _Fetches:
    """fetch(k): sleeps a random time and answers k * 10, recording how many were in flight at once."""

    def __init__(self, seed: int, fail_on: int | None = None, slow_from: int | None = None) -> None:
        import random

        self.rng, self.fail_on, self.slow_from = random.Random(seed), fail_on, slow_from
        self.in_flight = self.most = 0
        self.started: list[int] = []
        self.finished: list[int] = []

    async def __call__(self, key: int) -> int:
        self.started.append(key)
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        try:
            slow = self.slow_from is not None and key >= self.slow_from
            await asyncio.sleep(0.01 if slow else self.rng.uniform(0, 0.004))
            if key == self.fail_on:
                raise ValueError(key)
            self.finished.append(key)
            return key * 10
        finally:
            self.in_flight -= 1


@pytest.mark.parametrize("source", ["list", "async"])
def test_read_ahead_answers_in_order_with_at_most_depth_in_flight(source: str) -> None:
    fetch = _Fetches(seed=1)

    async def keys() -> AsyncIterator[int]:
        for k in range(40):
            await asyncio.sleep(0)
            yield k

    async def main() -> list[tuple[int, int]]:
        given = keys() if source == "async" else list(range(40))
        return [pair async for pair in read_ahead(given, fetch, depth=5)]

    assert asyncio.run(main()) == [(k, k * 10) for k in range(40)]
    assert fetch.most == 5  # overlapped, never more than asked
    assert fetch.finished != sorted(fetch.finished)  # they did land out of order


def test_read_ahead_cancels_what_is_in_flight_when_the_reader_stops() -> None:
    fetch = _Fetches(seed=2, slow_from=10)

    async def main() -> list[int]:
        got = []
        async with aclosing(read_ahead(range(100), fetch, depth=4)) as answers:
            async for key, _ in answers:
                got.append(key)
                if key == 9:
                    break
        await asyncio.sleep(0.05)  # anything still running would finish now
        return got

    assert asyncio.run(main()) == list(range(10))
    assert 10 < len(fetch.started) <= 10 + 4 and fetch.in_flight == 0
    assert sorted(fetch.finished) == list(range(10))  # the ones ahead were cancelled, not left running


def test_read_ahead_raises_a_failed_fetch_at_its_turn_and_cancels_the_rest() -> None:
    fetch = _Fetches(seed=3, fail_on=6)

    async def main() -> list[int]:
        got: list[int] = []
        with pytest.raises(ValueError):
            async for key, _ in read_ahead(range(100), fetch, depth=4):
                got.append(key)
        await asyncio.sleep(0.02)
        return got

    assert asyncio.run(main()) == list(range(6))
    assert fetch.in_flight == 0 and len(fetch.started) <= 6 + 4


def test_all_or_cancel_raises_the_first_failure_itself_with_nothing_left_running() -> None:
    finished: list[str] = []
    cancelled: list[str] = []

    async def call(name: str, delay: float, fails: bool = False) -> str:
        try:
            await asyncio.sleep(delay)
        except asyncio.CancelledError:
            cancelled.append(name)
            raise
        if fails:
            raise KeyError(name)
        finished.append(name)
        return name

    async def main() -> None:
        assert await all_or_cancel(call("a", 0.02), call("b", 0.0)) == ["a", "b"]  # in the order asked
        with pytest.raises(KeyError, match="bad"):  # the error itself, not a group
            await all_or_cancel(call("slow", 0.5), call("bad", 0.01, fails=True), call("fast", 0.0))
        assert cancelled == ["slow"]  # cancelled and awaited before the error was raised
        await asyncio.sleep(0.6)  # plain gather would let "slow" finish now, after its step failed

    asyncio.run(main())
    assert finished == ["b", "a", "fast"]


def test_all_settled_lets_every_call_end_then_raises_the_first_failure_itself() -> None:
    finished: list[str] = []

    async def call(name: str, delay: float, fails: bool = False) -> str:
        await asyncio.sleep(delay)
        if fails:
            raise KeyError(name)
        finished.append(name)
        return name

    async def main() -> None:
        assert await all_settled(call("a", 0.02), call("b", 0.0)) == ["a", "b"]
        with pytest.raises(KeyError, match="first"):
            await all_settled(
                call("slow", 0.1), call("first", 0.02, fails=True), call("second", 0.0, fails=True)
            )
        assert finished == ["b", "a", "slow"]  # "slow" ended before the error was raised

    asyncio.run(main())
