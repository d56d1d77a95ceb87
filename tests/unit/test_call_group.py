"""CallGroup: calls within the window share one batched run; each caller gets its own answer or the error."""

from __future__ import annotations

import asyncio

import pytest

from seolens_core.adapters._gather import CallGroup


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
