"""BatchCommit: one flush per batch; whatever the flush raises reaches every waiting record (none waits forever)."""

from __future__ import annotations

import asyncio

from seolens_core.crawl._commit import BatchCommit, Contribution


class EnvironmentDied(BaseException):
    """Like the fault injector's InjectedCrash: not an Exception, so no `except Exception` swallows it."""


def _run_batch(flush_error: BaseException | None) -> list[object]:
    flushed: list[list[Contribution]] = []

    async def flush(contributions: list[Contribution]) -> None:
        flushed.append(contributions)
        if flush_error is not None:
            raise flush_error

    async def main() -> list[object]:
        commit = BatchCommit(3, flush)

        async def record(i: int) -> object:
            if i == 2:
                commit.withdraw()
                return "withdrawn"
            await commit.submit(Contribution(crawl_id=f"c{i}"))
            return "written"

        tasks = [asyncio.create_task(record(i)) for i in range(3)]
        _, pending = await asyncio.wait(tasks, timeout=5)
        assert not pending, "a record still waits for the flush"
        return [t.exception() or t.result() for t in tasks]

    outcomes = asyncio.run(main())
    assert len(flushed) == 1 and [c.crawl_id for c in flushed[0]] == ["c0", "c1"]
    return outcomes


def test_one_flush_for_the_batch_then_every_record_is_released() -> None:
    assert _run_batch(None) == ["written", "written", "withdrawn"]


def test_a_failed_flush_fails_every_submitted_record() -> None:
    error = RuntimeError("S3 down")
    assert _run_batch(error) == [error, error, "withdrawn"]


def test_an_environment_dying_in_the_flush_reaches_the_records_instead_of_hanging_them() -> None:
    crash = EnvironmentDied()
    assert _run_batch(crash) == [crash, crash, "withdrawn"]
