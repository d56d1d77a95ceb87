"""Runs infra/statemachine/crawl.asl.json with fake Seed, Progress and Report functions (CONTRACTS.md)."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from infra.local.asl import AslExecutor, StatesError, substitute, validate_definition

from .conftest import START, FakeTime

DEFINITION = Path(__file__).resolve().parents[3] / "infra" / "statemachine" / "crawl.asl.json"
pytestmark = pytest.mark.skipif(not DEFINITION.exists(), reason="crawl.asl.json not written yet")

ARNS = {
    name: f"arn:aws:lambda:us-east-1:123456789012:function:{name}"
    for name in ("SeedFunctionArn", "ProgressFunctionArn", "ReportFunctionArn")
}
SEED, PROGRESS, REPORT = ARNS["SeedFunctionArn"], ARNS["ProgressFunctionArn"], ARNS["ReportFunctionArn"]


@dataclass
class FakeFunctions:
    """Seed, Progress and Report stand-ins: scripted progress states, recorded calls."""

    seed_batches: int = 2
    seed_waits: list[int] = field(default_factory=list)
    """Seconds each seed round asks to wait before the next (a held page budget); 0 once empty."""
    progress: list[Any] = field(default_factory=lambda: [("RUNNING", 30), ("DRAINED", 0)])
    calls: list[tuple[str, Any]] = field(default_factory=list)

    def __call__(self, arn: str, payload: Any) -> Any:
        self.calls.append((arn, payload))
        if arn == SEED:
            batch = (payload["cursor"] or {}).get("batch", 0) + 1
            done = batch >= self.seed_batches
            return {
                "crawl_id": payload["crawl_id"],
                "cursor": None if done else {"batch": batch},
                "seed_done": done,
                "wait_seconds": 0 if done or not self.seed_waits else self.seed_waits.pop(0),
            }
        if arn == PROGRESS:
            outcome = self.progress.pop(0)
            if isinstance(outcome, BaseException):
                raise outcome
            state, wait = outcome
            return {
                "crawl_id": payload["crawl_id"],
                "state": state,
                "wait_seconds": wait,
                "counters": {"fetched": 3},
                "checked_at": 1_000.0 + len(self.calls),
            }
        if arn == REPORT:
            return {"crawl_id": payload["crawl_id"], "ok": True}
        raise AssertionError(f"unexpected function {arn}")

    def called(self, arn: str) -> list[Any]:
        return [payload for target, payload in self.calls if target == arn]


def execute(
    functions: FakeFunctions, cancel: threading.Event | None = None, fake: FakeTime | None = None
) -> Any:
    fake = fake or FakeTime()
    text = substitute(DEFINITION.read_text(), ARNS)
    executor = AslExecutor(text, functions, clock=fake.clock, sleep=fake.sleep, cancel_poll_seconds=1)
    return executor.run({"crawl_id": "c1"}, cancel=cancel, name="crawl-c1")


def visited(result: Any) -> list[str]:
    return [state for state, event in result.history if event == "Entered"]


def test_definition_is_valid_once_substituted() -> None:
    text = DEFINITION.read_text()
    assert [p for p in validate_definition(substitute(text, ARNS)) if p.startswith("error:")] == []
    assert any("unresolved" in p for p in validate_definition(text))


def test_crawl_succeeds() -> None:
    functions = FakeFunctions()
    fake = FakeTime()
    result = execute(functions, fake=fake)
    assert result.status == "SUCCEEDED", (result.error, result.cause)
    assert functions.called(SEED) == [
        {"crawl_id": "c1", "cursor": None},
        {"crawl_id": "c1", "cursor": {"batch": 1}},
    ]
    first, second = functions.called(PROGRESS)
    # Each check is handed the previous one's answer (the fetch rate since then); the first, a blank one.
    assert first == {
        "crawl_id": "c1",
        "previous": {"state": "STARTING", "wait_seconds": 0, "counters": {}, "checked_at": 0},
    }
    assert second == {
        "crawl_id": "c1",
        "previous": {
            "state": "RUNNING",
            "wait_seconds": 30,
            "counters": {"fetched": 3},
            "checked_at": 1_003.0,
        },
    }
    assert [p["action"] for p in functions.called(REPORT)] == ["orphans", "report"]
    assert fake.sleeps == [30]
    assert result.output["crawl_id"] == "c1"
    assert "Orphans" in visited(result) and "MarkFailed" not in visited(result)


def test_a_held_seed_round_waits_its_seconds_before_the_next() -> None:
    functions = FakeFunctions(seed_batches=4, seed_waits=[7, 0])
    fake = FakeTime()
    result = execute(functions, fake=fake)
    assert result.status == "SUCCEEDED", (result.error, result.cause)
    assert [p["cursor"] for p in functions.called(SEED)] == [None, {"batch": 1}, {"batch": 2}, {"batch": 3}]
    assert visited(result).count("WaitForSeed") == 1
    assert fake.sleeps == [7, 30]  # the held round's wait, then the progress loop's


def test_a_failed_task_marks_the_crawl_failed() -> None:
    functions = FakeFunctions(progress=[("RUNNING", 5), RuntimeError("table gone")])
    result = execute(functions)
    assert (result.status, result.error) == ("FAILED", "CrawlFailed")
    assert "MarkFailed" in visited(result)
    (failure,) = [p for p in functions.called(REPORT) if p["action"] == "fail"]
    assert failure["crawl_id"] == "c1"
    assert failure["error"]["Error"] == "RuntimeError"
    assert json.loads(failure["error"]["Cause"])["errorMessage"] == "table gone"


def test_throttling_is_retried_with_backoff() -> None:
    throttled = StatesError("Lambda.TooManyRequestsException", "Rate exceeded")
    functions = FakeFunctions(progress=[throttled, throttled, ("DRAINED", 0)])
    fake = FakeTime()
    result = execute(functions, fake=fake)
    assert result.status == "SUCCEEDED"
    assert fake.sleeps == [2, 4]


def test_cancelled_crawl_gets_its_report_and_skips_orphans() -> None:
    functions = FakeFunctions(progress=[("RUNNING", 10), ("CANCELLED", 0)])
    result = execute(functions)
    assert result.status == "SUCCEEDED"
    assert [p["action"] for p in functions.called(REPORT)] == ["report"]
    assert "Orphans" not in visited(result)


def test_unknown_progress_state_fails_the_crawl() -> None:
    functions = FakeFunctions(progress=[("EXPLODED", 0)])
    result = execute(functions)
    assert (result.status, result.error) == ("FAILED", "CrawlFailed")
    assert [p["action"] for p in functions.called(REPORT)] == ["fail"]


def test_stopping_the_execution_aborts_during_the_progress_wait() -> None:
    cancel = threading.Event()
    fake = FakeTime(on_sleep=lambda now: cancel.set() if now - START >= 10 else None)
    functions = FakeFunctions(progress=[("RUNNING", 60), ("DRAINED", 0)])
    result = execute(functions, cancel=cancel, fake=fake)
    assert result.status == "ABORTED"
    assert result.history[-1] == ("WaitForProgress", "ExecutionAborted")
    assert functions.called(REPORT) == []
