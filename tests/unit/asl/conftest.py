"""Fakes for the ASL executor tests: a fake clock whose sleep advances it, and a recording invoke."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from infra.local.asl import AslExecutor

START = 1_700_000_000.0
FN = "arn:aws:lambda:us-east-1:123456789012:function:fn"


@dataclass
class FakeTime:
    """`clock()` returns `now`; `sleep(s)` records `s` and advances `now`, then runs an optional hook."""

    now: float = START
    sleeps: list[float] = field(default_factory=list)
    on_sleep: Callable[[float], None] | None = None

    def clock(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        if self.on_sleep is not None:
            self.on_sleep(self.now)


@dataclass
class Recorder:
    """An invoke that records (target, payload) and answers from a function or a script of outcomes."""

    answer: Callable[[str, Any], Any] = lambda target, payload: payload
    calls: list[tuple[str, Any]] = field(default_factory=list)

    def __call__(self, target: str, payload: Any) -> Any:
        self.calls.append((target, payload))
        return self.answer(target, payload)


def scripted(*outcomes: Any) -> Callable[[str, Any], Any]:
    """Answer with each outcome in turn; an exception instance is raised instead of returned."""
    queue = list(outcomes)
    lock = threading.Lock()

    def answer(target: str, payload: Any) -> Any:
        with lock:
            outcome = queue.pop(0)
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    return answer


@pytest.fixture
def fake_time() -> FakeTime:
    return FakeTime()


def machine(states: dict[str, Any], start: str | None = None, **top: Any) -> dict[str, Any]:
    """A definition from a States dict (StartAt defaults to the first state)."""
    return {"StartAt": start or next(iter(states)), "States": states, **top}


def task(**fields: Any) -> dict[str, Any]:
    """A direct-ARN Task that ends the execution unless Next is given."""
    state: dict[str, Any] = {"Type": "Task", "Resource": FN, **fields}
    if "Next" not in state:
        state["End"] = True
    return state


def run_one(
    state: dict[str, Any],
    input: Any,
    invoke: Callable[[str, Any], Any] | None = None,
    fake: FakeTime | None = None,
) -> Any:
    """Run a one-state machine and return the Execution."""
    fake = fake or FakeTime()
    executor = AslExecutor(machine({"Only": state}), invoke or Recorder(), clock=fake.clock, sleep=fake.sleep)
    return executor.run(input, name="test")
