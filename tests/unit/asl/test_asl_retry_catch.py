"""Retry (backoff, caps, jitter, MaxAttempts 0, first matching retrier) and Catch (matching, ResultPath)."""

from __future__ import annotations

import random
import threading
from typing import Any

import pytest

from infra.local.asl import AslExecutor, StatesError

from .conftest import FakeTime, Recorder, machine, scripted, task


class Flaky(Exception):
    """A handler error whose Error name is `Flaky`."""


def run(
    retry: list[dict[str, Any]],
    outcomes: list[Any],
    catch: list[dict[str, Any]] | None = None,
    rng: random.Random | None = None,
) -> tuple[Any, FakeTime, Recorder]:
    fake = FakeTime()
    recorder = Recorder(scripted(*outcomes))
    state = task(Retry=retry, **({"Catch": catch} if catch else {}))
    states: dict[str, Any] = {"T": state}
    if catch:
        states["Handler"] = {"Type": "Pass", "End": True}
    executor = AslExecutor(machine(states), recorder, clock=fake.clock, sleep=fake.sleep, rng=rng)
    return executor.run({"in": 1}), fake, recorder


def test_exponential_backoff_then_success() -> None:
    retry = [{"ErrorEquals": ["Flaky"], "IntervalSeconds": 1, "MaxAttempts": 3, "BackoffRate": 2.0}]
    result, fake, recorder = run(retry, [Flaky(), Flaky(), Flaky(), "ok"])
    assert (result.status, result.output) == ("SUCCEEDED", "ok")
    assert fake.sleeps == [1, 2, 4]
    assert len(recorder.calls) == 4
    assert [e for s, e in result.history if s == "T"].count("Retrying") == 3


def test_defaults_are_interval_1_attempts_3_backoff_2() -> None:
    result, fake, _ = run([{"ErrorEquals": ["States.ALL"]}], [Flaky()] * 4)
    assert (result.status, result.error) == ("FAILED", "Flaky")
    assert fake.sleeps == [1, 2, 4]


def test_max_attempts_zero_never_retries() -> None:
    result, fake, recorder = run([{"ErrorEquals": ["States.ALL"], "MaxAttempts": 0}], [Flaky()])
    assert (result.error, fake.sleeps, len(recorder.calls)) == ("Flaky", [], 1)


def test_max_delay_caps_the_backoff() -> None:
    retry = [
        {
            "ErrorEquals": ["Flaky"],
            "IntervalSeconds": 3,
            "MaxAttempts": 4,
            "BackoffRate": 3,
            "MaxDelaySeconds": 20,
        }
    ]
    _, fake, _ = run(retry, [Flaky()] * 4 + ["ok"])
    assert fake.sleeps == [3, 9, 20, 20]


def test_full_jitter_draws_from_the_injected_random() -> None:
    retry = [{"ErrorEquals": ["Flaky"], "IntervalSeconds": 10, "MaxAttempts": 2, "JitterStrategy": "FULL"}]
    _, first, _ = run(retry, [Flaky(), Flaky(), "ok"], rng=random.Random(3))
    _, again, _ = run(retry, [Flaky(), Flaky(), "ok"], rng=random.Random(3))
    assert first.sleeps == again.sleeps
    assert 0 <= first.sleeps[0] <= 10 and 0 <= first.sleeps[1] <= 20
    assert first.sleeps != [10, 20]


def test_each_retrier_counts_its_own_attempts_and_the_first_match_wins() -> None:
    retry = [
        {"ErrorEquals": ["Flaky"], "IntervalSeconds": 1, "MaxAttempts": 1},
        {"ErrorEquals": ["ValueError"], "IntervalSeconds": 5, "MaxAttempts": 2, "BackoffRate": 1},
        {"ErrorEquals": ["States.ALL"], "IntervalSeconds": 100},
    ]
    result, fake, _ = run(retry, [ValueError(), Flaky(), ValueError(), "ok"])
    assert result.status == "SUCCEEDED"
    assert fake.sleeps == [5, 1, 5]


def test_an_exhausted_retrier_does_not_fall_through_to_later_retriers() -> None:
    retry = [
        {"ErrorEquals": ["Flaky"], "MaxAttempts": 1},
        {"ErrorEquals": ["States.ALL"], "MaxAttempts": 5},
    ]
    result, fake, _ = run(retry, [Flaky(), Flaky(), "never"])
    assert (result.error, fake.sleeps) == ("Flaky", [1])


def test_retry_count_is_visible_in_the_context() -> None:
    fake = FakeTime()
    state = task(Retry=[{"ErrorEquals": ["Flaky"]}], Parameters={"n.$": "$$.State.RetryCount"})
    recorder = Recorder(scripted(Flaky(), Flaky(), "ok"))
    AslExecutor(machine({"T": state}), recorder, clock=fake.clock, sleep=fake.sleep).run({})
    assert [payload["n"] for _, payload in recorder.calls] == [0, 1, 2]


def test_exhausted_retries_then_catch_with_result_path() -> None:
    retry = [{"ErrorEquals": ["Flaky"], "IntervalSeconds": 2, "MaxAttempts": 2}]
    catch = [{"ErrorEquals": ["States.ALL"], "ResultPath": "$.error", "Next": "Handler"}]
    result, fake, recorder = run(retry, [Flaky("one"), Flaky("two"), Flaky("three")], catch)
    assert result.status == "SUCCEEDED"
    assert fake.sleeps == [2, 4]
    assert len(recorder.calls) == 3
    assert result.output["in"] == 1
    assert result.output["error"]["Error"] == "Flaky"
    assert '"errorMessage": "three"' in result.output["error"]["Cause"]
    assert [e for s, e in result.history if s == "T"][-2:] == ["Caught", "Exited"]
    assert result.history[-1] == ("Handler", "ExecutionSucceeded")


@pytest.mark.parametrize(
    ("result_path", "expected"),
    [
        (None, {"in": 1}),
        ("$", {"Error": "States.TaskFailed", "Cause": "x"}),
        ("$.e", {"in": 1, "e": {"Error": "States.TaskFailed", "Cause": "x"}}),
    ],
)
def test_catch_result_path(result_path: str | None, expected: Any) -> None:
    catch: dict[str, Any] = {"ErrorEquals": ["States.ALL"], "Next": "Handler"}
    if result_path != "$":
        catch["ResultPath"] = result_path
    result, _, _ = run([], [StatesError("States.TaskFailed", "x")], [catch])
    assert result.output == expected


@pytest.mark.parametrize(
    ("error", "error_equals", "caught"),
    [
        (ValueError("v"), ["ValueError"], True),
        (ValueError("v"), ["KeyError"], False),
        (ValueError("v"), ["States.TaskFailed"], True),
        (ValueError("v"), ["States.ALL"], True),
        (StatesError("States.Timeout"), ["States.TaskFailed"], False),
        (StatesError("States.Timeout"), ["States.Timeout"], True),
        (StatesError("States.Timeout"), ["States.ALL"], True),
        (StatesError("Lambda.ServiceException"), ["Lambda.ServiceException", "Other"], True),
    ],
)
def test_error_matching(error: Exception, error_equals: list[str], caught: bool) -> None:
    catch = [{"ErrorEquals": error_equals, "Next": "Handler"}]
    result, _, _ = run([], [error], catch)
    assert (result.status == "SUCCEEDED") is caught


def test_first_matching_catcher_wins() -> None:
    fake = FakeTime()
    state = task(
        Catch=[
            {"ErrorEquals": ["KeyError"], "Next": "A"},
            {"ErrorEquals": ["ValueError"], "Next": "B"},
            {"ErrorEquals": ["States.ALL"], "Next": "A"},
        ]
    )
    states = {"T": state, "A": {"Type": "Fail", "Error": "A"}, "B": {"Type": "Succeed"}}
    result = AslExecutor(
        machine(states), Recorder(scripted(ValueError())), clock=fake.clock, sleep=fake.sleep
    ).run({})
    assert result.history[-1] == ("B", "ExecutionSucceeded")


def test_runtime_errors_are_not_retried_or_caught() -> None:
    state = task(
        Parameters={"x.$": "$.missing"},
        Retry=[{"ErrorEquals": ["States.ALL"]}],
        Catch=[{"ErrorEquals": ["States.ALL"], "Next": "H"}],
    )
    recorder = Recorder()
    result = AslExecutor(machine({"T": state, "H": {"Type": "Succeed"}}), recorder).run({})
    assert (result.status, result.error, recorder.calls) == ("FAILED", "States.Runtime", [])


def test_cancel_during_retry_backoff_aborts() -> None:
    cancel = threading.Event()
    fake = FakeTime(on_sleep=lambda now: cancel.set())
    state = task(Retry=[{"ErrorEquals": ["States.ALL"], "IntervalSeconds": 60}])
    executor = AslExecutor(
        machine({"T": state}), Recorder(scripted(Flaky(), "ok")), clock=fake.clock, sleep=fake.sleep
    )
    result = executor.run({}, cancel=cancel)
    assert result.status == "ABORTED"


def _big(n: int = 300 * 1024) -> str:
    return "x" * n


def test_a_task_result_over_256_kib_fails_the_execution_past_states_all() -> None:
    """States.DataLimitExceeded is terminal: a `States.ALL` Retry or Catch never handles it."""
    fake = FakeTime()
    recorder = Recorder(lambda target, payload: {"big": _big()})
    state = task(
        Retry=[{"ErrorEquals": ["States.ALL"], "MaxAttempts": 2}],
        Catch=[{"ErrorEquals": ["States.ALL"], "Next": "MarkFailed"}],
    )
    states: dict[str, Any] = {"T": state, "MarkFailed": {"Type": "Pass", "End": True}}
    result = AslExecutor(machine(states), recorder, clock=fake.clock, sleep=fake.sleep).run({"in": 1})
    assert (result.status, result.error) == ("FAILED", "States.DataLimitExceeded")
    assert "MarkFailed" not in [s for s, _ in result.history]
    assert len(recorder.calls) == 1 and fake.sleeps == []


def test_a_catch_naming_data_limit_exceeded_handles_it() -> None:
    recorder = Recorder(lambda target, payload: _big())
    state = task(Catch=[{"ErrorEquals": ["States.DataLimitExceeded"], "Next": "H", "ResultPath": None}])
    states: dict[str, Any] = {"T": state, "H": {"Type": "Pass", "End": True}}
    result = AslExecutor(machine(states), recorder).run({"in": 1})
    assert result.status == "SUCCEEDED"


THIRD = {"x": "x" * (100 * 1024)}


@pytest.mark.parametrize(
    ("states", "start"),
    [
        ({"P": {"Type": "Pass", "Result": {"big": _big()}, "End": True}}, {}),
        ({"P": {"Type": "Pass", "End": True}}, {"big": _big()}),
        ({"T": task(Parameters={"a.$": "$.x", "b.$": "$.x", "c.$": "$.x"})}, THIRD),
        (
            {"P": {"Type": "Pass", "Parameters": {"a.$": "$.x", "b.$": "$.x", "c.$": "$.x"}, "End": True}},
            THIRD,
        ),
    ],
    ids=["pass-output", "state-input", "task-parameters", "pass-parameters"],
)
def test_every_state_input_and_output_is_limited(states: dict[str, Any], start: dict[str, Any]) -> None:
    recorder = Recorder()
    result = AslExecutor(machine(states), recorder).run(start)
    assert (result.status, result.error) == ("FAILED", "States.DataLimitExceeded")
    assert recorder.calls == []


def test_256_kib_exactly_is_within_the_quota() -> None:
    payload = {"v": "x" * (256 * 1024 - len('{"v":""}'))}
    result = AslExecutor(machine({"P": {"Type": "Pass", "End": True}}), Recorder()).run(payload)
    assert result.status == "SUCCEEDED"
