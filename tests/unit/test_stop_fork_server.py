"""`stop_fork_server` kills an idle fork server instead of waiting out its teardown, and loses no CPU time."""

from __future__ import annotations

import multiprocessing
import os
import time
from multiprocessing import forkserver
from pathlib import Path

import pytest

from infra.local import process_host


def _burn(seconds: float) -> None:
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def _sleep(seconds: float) -> None:
    time.sleep(seconds)


def _server_pid() -> int:
    pid = forkserver._forkserver._forkserver_pid  # type: ignore[attr-defined]
    assert pid is not None
    return int(pid)


@pytest.mark.skipif(
    not Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").exists(), reason="Linux only"
)
def test_an_idle_fork_server_is_killed_and_its_childrens_cpu_still_counted(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    context = multiprocessing.get_context("forkserver")
    child = context.Process(target=_burn, args=(0.4,))
    child.start()
    server = _server_pid()
    assert process_host._children_of(server) == [child.pid]
    child.join()
    assert process_host._children_of(server) == []
    killed: list[int] = []
    real_kill = os.kill
    monkeypatch.setattr(os, "kill", lambda pid, sig: (killed.append(pid), real_kill(pid, sig)))
    before = os.times()
    process_host.stop_fork_server()
    after = os.times()
    assert killed == [server]
    assert not Path(f"/proc/{server}").exists()  # reaped
    # the child's CPU reached this process through the server's own count of the children it reaped
    assert after.children_user + after.children_system - before.children_user - before.children_system >= 0.3


def test_a_fork_server_with_a_live_child_is_not_killed(monkeypatch: pytest.MonkeyPatch) -> None:
    context = multiprocessing.get_context("forkserver")
    child = context.Process(target=_sleep, args=(1,))
    child.start()
    try:
        killed: list[int] = []
        monkeypatch.setattr(os, "kill", lambda pid, sig: killed.append(pid))
        monkeypatch.setattr(process_host, "_children_of", lambda pid: [child.pid])
        process_host.stop_fork_server()
        assert killed == []
    finally:
        child.kill()
        child.join()
