"""A crashed emulated environment leaves nothing suspended: tasks its cancelled tasks start are cancelled too."""

from __future__ import annotations

import asyncio
import threading

import pytest

from infra.local.lambda_host import _discard_environment
from seolens_core import bootstrap


def test_tasks_started_by_a_cancelled_task_are_cancelled_before_the_loop_closes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("CRAWLS_TABLE", "URLS_TABLE", "HOSTS_TABLE", "FRONTIER_QUEUE_URL", "DEAD_LETTER_QUEUE_URL"):
        monkeypatch.setenv(name, name.lower())
    monkeypatch.setenv("RESULTS_BUCKET", "results")
    outcome: dict[str, object] = {}

    def environment() -> None:  # each emulated environment is a thread with its own container
        app = bootstrap.container()
        started: list[asyncio.Task[None]] = []

        async def commit() -> None:
            await asyncio.sleep(3600)

        async def work() -> None:
            try:
                await asyncio.sleep(3600)
            finally:  # like a batch whose cancellation starts its commit
                started.append(asyncio.get_running_loop().create_task(commit()))

        task = app.loop.create_task(work())
        app.loop.run_until_complete(asyncio.sleep(0))
        _discard_environment()
        outcome["work"] = task.cancelled()
        outcome["commit"] = [t.cancelled() for t in started]
        outcome["closed"] = app.loop.is_closed()
        outcome["fresh"] = bootstrap.container() is not app
        bootstrap.reset_container()

    thread = threading.Thread(target=environment)
    thread.start()
    thread.join(10)
    assert outcome == {"work": True, "commit": [True], "closed": True, "fresh": True}
