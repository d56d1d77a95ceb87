"""Pass, Succeed, Fail, Wait and Task states; cancellation; the max_transitions guard."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest

from infra.local.asl import LAMBDA_INVOKE, MAX_TRANSITIONS_EXCEEDED, AslExecutor, StatesError

from .conftest import FN, START, FakeTime, Recorder, machine, run_one, task


def test_pass_result_and_result_path() -> None:
    state = {"Type": "Pass", "Result": {"x": 1}, "ResultPath": "$.res", "End": True}
    assert run_one(state, {"a": 1}).output == {"a": 1, "res": {"x": 1}}


def test_pass_parameters_with_intrinsics() -> None:
    state = {
        "Type": "Pass",
        "Parameters": {"greeting.$": "States.Format('hi {}', $.who)", "list.$": "States.Array($.who, 2)"},
        "End": True,
    }
    assert run_one(state, {"who": "bob"}).output == {"greeting": "hi bob", "list": ["bob", 2]}


def test_pass_without_result_passes_input_through() -> None:
    assert run_one({"Type": "Pass", "End": True}, {"a": [1, 2]}).output == {"a": [1, 2]}


def test_succeed_applies_paths() -> None:
    state = {"Type": "Succeed", "InputPath": "$.a", "OutputPath": "$.b"}
    result = run_one(state, {"a": {"b": 7}})
    assert (result.status, result.output, result.error) == ("SUCCEEDED", 7, None)
    assert result.history == (("Only", "Entered"), ("Only", "Exited"), ("Only", "ExecutionSucceeded"))


@pytest.mark.parametrize(
    ("state", "error", "cause"),
    [
        ({"Type": "Fail", "Error": "E", "Cause": "C"}, "E", "C"),
        ({"Type": "Fail"}, None, None),
        ({"Type": "Fail", "ErrorPath": "$.err", "CausePath": "$.why"}, "Boom", "because"),
        ({"Type": "Fail", "Error": "E", "CausePath": "States.Format('code {}', $.code)"}, "E", "code 7"),
    ],
)
def test_fail(state: dict[str, Any], error: str | None, cause: str | None) -> None:
    result = run_one(state, {"err": "Boom", "why": "because", "code": 7})
    assert (result.status, result.error, result.cause, result.output) == ("FAILED", error, cause, None)
    assert result.history[-1] == ("Only", "ExecutionFailed")


def test_fail_error_path_must_be_a_string() -> None:
    result = run_one({"Type": "Fail", "ErrorPath": "$.code"}, {"code": 7})
    assert result.error == "States.Runtime"


@pytest.mark.parametrize(
    ("fields", "input", "waited"),
    [
        ({"Seconds": 10}, {}, 10),
        ({"Seconds": 0}, {}, 0),
        ({"SecondsPath": "$.s"}, {"s": 3}, 3),
        ({"Timestamp": "2023-11-14T22:14:20Z"}, {}, 60),
        ({"TimestampPath": "$.at"}, {"at": "2023-11-14T22:13:25.500Z"}, 5.5),
        ({"Timestamp": "2020-01-01T00:00:00Z"}, {}, 0),
    ],
)
def test_wait_uses_the_injected_clock(fields: dict[str, Any], input: Any, waited: float) -> None:
    fake = FakeTime()
    result = run_one({"Type": "Wait", "End": True, **fields}, input, fake=fake)
    assert result.status == "SUCCEEDED"
    assert result.output == input
    assert fake.now - START == pytest.approx(waited)
    assert fake.sleeps == ([waited] if waited else [])


@pytest.mark.parametrize("value", [-1, "3", True, None])
def test_wait_seconds_path_must_be_a_non_negative_number(value: Any) -> None:
    result = run_one({"Type": "Wait", "SecondsPath": "$.s", "End": True}, {"s": value})
    assert result.error == "States.Runtime"


def test_cancel_during_wait_aborts() -> None:
    cancel = threading.Event()
    fake = FakeTime(on_sleep=lambda now: cancel.set() if now - START >= 30 else None)
    definition = machine({"W": {"Type": "Wait", "Seconds": 3600, "Next": "T"}, "T": task()})
    recorder = Recorder()
    executor = AslExecutor(definition, recorder, clock=fake.clock, sleep=fake.sleep, cancel_poll_seconds=5)
    result = executor.run({}, cancel=cancel)
    assert result.status == "ABORTED"
    assert fake.now - START == pytest.approx(30)
    assert recorder.calls == []
    assert result.history[-1] == ("W", "ExecutionAborted")


def test_cancel_before_start_aborts_without_entering_a_state() -> None:
    cancel = threading.Event()
    cancel.set()
    result = AslExecutor(machine({"P": {"Type": "Pass", "End": True}}), Recorder()).run({}, cancel=cancel)
    assert (result.status, result.transitions) == ("ABORTED", 0)


def test_real_sleep_wakes_up_on_cancel() -> None:
    cancel = threading.Event()
    executor = AslExecutor(machine({"W": {"Type": "Wait", "Seconds": 60, "End": True}}), Recorder())
    threading.Timer(0.05, cancel.set).start()
    started = time.monotonic()
    result = executor.run({}, cancel=cancel)
    assert result.status == "ABORTED"
    assert time.monotonic() - started < 5


def test_max_transitions_stops_an_infinite_loop() -> None:
    definition = machine({"A": {"Type": "Pass", "Next": "B"}, "B": {"Type": "Pass", "Next": "A"}})
    result = AslExecutor(definition, Recorder(), max_transitions=7).run({})
    assert (result.status, result.error, result.transitions) == ("FAILED", MAX_TRANSITIONS_EXCEEDED, 7)


def test_execution_timeout_fails_with_states_timeout() -> None:
    fake = FakeTime()
    definition = machine({"W": {"Type": "Wait", "Seconds": 100, "End": True}}, TimeoutSeconds=30)
    result = AslExecutor(definition, Recorder(), clock=fake.clock, sleep=fake.sleep).run({})
    assert (result.status, result.error) == ("FAILED", "States.Timeout")
    assert fake.now - START == pytest.approx(30)


# -- Task --------------------------------------------------------------------------------------


def test_task_with_function_arn_sends_effective_input_and_returns_raw_result() -> None:
    recorder = Recorder(lambda target, payload: {"got": payload})
    result = run_one(task(), {"a": 1}, recorder)
    assert recorder.calls == [(FN, {"a": 1})]
    assert result.output == {"got": {"a": 1}}


def test_lambda_invoke_wraps_the_result_like_aws() -> None:
    recorder = Recorder(lambda target, payload: {"sum": payload["x"] + 1})
    state = {
        "Type": "Task",
        "Resource": LAMBDA_INVOKE,
        "Parameters": {
            "FunctionName": "arn:aws:lambda:us-east-1:123456789012:function:add",
            "Payload.$": "$",
        },
        "ResultPath": "$.raw",
        "End": True,
    }
    result = run_one(state, {"x": 1}, recorder)
    assert recorder.calls == [("arn:aws:lambda:us-east-1:123456789012:function:add", {"x": 1})]
    raw = result.output["raw"]
    assert raw["Payload"] == {"sum": 2}
    assert raw["StatusCode"] == 200


def test_lambda_invoke_with_result_selector_payload() -> None:
    state = {
        "Type": "Task",
        "Resource": LAMBDA_INVOKE,
        "Parameters": {"FunctionName": "fn", "Payload": {"id.$": "$.id", "fixed": True}},
        "ResultSelector": {"Payload.$": "$.Payload"},
        "End": True,
    }
    recorder = Recorder()
    result = run_one(state, {"id": "c1"}, recorder)
    assert recorder.calls == [("fn", {"id": "c1", "fixed": True})]
    assert result.output == {"Payload": {"id": "c1", "fixed": True}}


def test_invoke_gets_a_json_copy() -> None:
    def mutate(target: str, payload: Any) -> Any:
        payload["x"].append(99)
        return None

    result = run_one(task(ResultPath="$.r"), {"x": [1]}, Recorder(mutate))
    assert result.output == {"x": [1], "r": None}


def test_python_exception_becomes_a_lambda_style_error() -> None:
    def boom(target: str, payload: Any) -> Any:
        raise ValueError("bad input")

    result = run_one(task(), {}, Recorder(boom))
    assert (result.status, result.error) == ("FAILED", "ValueError")
    cause = json.loads(result.cause or "")
    assert (cause["errorType"], cause["errorMessage"]) == ("ValueError", "bad input")
    assert any("boom" in frame for frame in cause["stackTrace"])


def test_states_error_from_invoke_keeps_its_name() -> None:
    def throttled(target: str, payload: Any) -> Any:
        raise StatesError("Lambda.TooManyRequestsException", "Rate exceeded")

    result = run_one(task(), {}, Recorder(throttled))
    assert (result.error, result.cause) == ("Lambda.TooManyRequestsException", "Rate exceeded")


def test_non_json_result_is_a_marshal_error() -> None:
    result = run_one(task(), {}, Recorder(lambda t, p: {"when": object()}))
    assert result.error == "Runtime.MarshalError"


def test_task_timeout_in_a_worker_thread() -> None:
    release = threading.Event()

    def slow(target: str, payload: Any) -> Any:
        release.wait(10)
        return "late"

    started = time.monotonic()
    try:
        result = run_one(task(TimeoutSeconds=1), {}, Recorder(slow))
    finally:
        release.set()
    assert (result.status, result.error) == ("FAILED", "States.Timeout")
    assert ("Only", "TaskTimedOut") in result.history
    assert 0.9 < time.monotonic() - started < 5


def test_task_timeout_not_reached_returns_the_result() -> None:
    result = run_one(task(TimeoutSeconds=5), {}, Recorder(lambda t, p: 1))
    assert (result.status, result.output) == ("SUCCEEDED", 1)


def test_timeout_seconds_path() -> None:
    result = run_one(task(TimeoutSecondsPath="$.t"), {"t": 0}, Recorder())
    assert result.error == "States.Runtime"


def test_cancel_while_a_timed_task_runs_aborts() -> None:
    cancel = threading.Event()
    release = threading.Event()

    def slow(target: str, payload: Any) -> Any:
        cancel.set()
        release.wait(10)
        return None

    executor = AslExecutor(machine({"T": task(TimeoutSeconds=60)}), Recorder(slow), cancel_poll_seconds=0.01)
    try:
        result = executor.run({}, cancel=cancel)
    finally:
        release.set()
    assert result.status == "ABORTED"


def test_on_transition_sees_every_event_with_data() -> None:
    seen: list[tuple[str, str, Any]] = []
    definition = machine({"P": {"Type": "Pass", "Result": 1, "Next": "S"}, "S": {"Type": "Succeed"}})
    result = AslExecutor(definition, Recorder(), on_transition=lambda *e: seen.append(e)).run({"a": 0})
    assert [(s, e) for s, e, _ in seen] == list(result.history)
    assert seen[0] == ("P", "Entered", {"a": 0})
    assert seen[1] == ("P", "Exited", 1)
    assert result.transitions == 2


def test_executor_runs_concurrently() -> None:
    definition = machine({"T": task(ResultSelector={"v.$": "$.v"})})
    executor = AslExecutor(definition, Recorder(lambda t, p: {"v": p["i"] * 2}))
    results: dict[int, Any] = {}

    def go(i: int) -> None:
        results[i] = executor.run({"i": i}).output

    threads = [threading.Thread(target=go, args=(i,)) for i in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results == {i: {"v": i * 2} for i in range(8)}


def test_non_json_input_fails() -> None:
    result = AslExecutor(machine({"P": {"Type": "Pass", "End": True}}), Recorder()).run({"x": {1, 2}})
    assert (result.status, result.error) == ("FAILED", "States.Runtime")
