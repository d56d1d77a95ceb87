"""Runs an ASL definition in-process, calling Lambda Tasks through an `invoke` callable.

moto's Step Functions cannot run local Python handlers (see the shared notes on local AWS emulation),
so the local runtime runs the state machine here. Input and output processing follow the AWS order:
InputPath -> Parameters -> task -> ResultSelector -> ResultPath -> OutputPath.

Time: `clock` and `sleep` are injected together (tests advance a fake clock from a fake sleep).
Task `TimeoutSeconds` is the exception: the invoke runs in real time, so it is measured with
`time.monotonic` on a worker thread, and a timed-out worker is abandoned (Python threads cannot be
killed), which matches AWS where the Lambda keeps running after the state times out.

Payload size: every state's input and output, a task's parameters and its raw result are limited to 256 KiB
of UTF-8 JSON, as on AWS; over it the execution fails with `States.DataLimitExceeded`, which no `States.ALL`
Retry or Catch handles (only a rule naming it does), so a `MarkFailed` behind `States.ALL` never runs.

Simplifications: HeartbeatSeconds is accepted and ignored; a Task without TimeoutSeconds runs on the
caller's thread, so neither cancellation nor the execution's TimeoutSeconds interrupts it (both are
seen as soon as it returns); lambda:invoke without Parameters.Payload sends `{}`.
"""

from __future__ import annotations

import json
import random
import threading
import time
import traceback
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ._choice import matches
from ._definition import LAMBDA_INVOKE, load_definition, resource_kind
from ._errors import (
    ALL,
    DATA_LIMIT_EXCEEDED,
    NO_CHOICE_MATCHED,
    RESULT_PATH_MATCH_FAILURE,
    RUNTIME,
    TASK_FAILED,
    TIMEOUT,
    DefinitionError,
    PathNotFound,
    StatesError,
)
from ._paths import parse_path, read, write
from ._template import render, resolve
from ._timestamps import format_timestamp, parse_timestamp
from ._validate import errors_only, validate_definition

Invoke = Callable[[str, Any], Any]
"""`invoke(function_arn_or_name, payload) -> result`: how a Task calls a Lambda function."""
OnTransition = Callable[[str, str, Any], None]
"""`on_transition(state_name, event, data)`, called for every history event (for logging)."""
Status = Literal["SUCCEEDED", "FAILED", "ABORTED"]

MAX_TRANSITIONS_EXCEEDED = "Local.MaxTransitionsExceeded"
MAX_PAYLOAD_BYTES = 256 * 1024
"""Step Functions' quota for a state's input or output and a task's payload or result (UTF-8 JSON)."""
_ACCOUNT = "123456789012"
_REGION = "us-east-1"


@dataclass(frozen=True, slots=True)
class Execution:
    """The end of one execution. `history` holds (state name, event) pairs in order.

    Events: Entered, Exited, TaskFailed, TaskTimedOut, Retrying, Caught, ExecutionSucceeded,
    ExecutionFailed, ExecutionAborted.
    """

    status: Status
    output: Any
    error: str | None
    cause: str | None
    history: tuple[tuple[str, str], ...]
    name: str
    transitions: int


@dataclass(frozen=True, slots=True)
class _Step:
    """What a state produced: its output and the next state (None ends the execution successfully)."""

    output: Any
    next: str | None


class _Aborted(Exception):
    """The cancel event was set."""


def _error_object(error: StatesError) -> dict[str, Any]:
    return {"Error": error.error, "Cause": error.cause}


def _lambda_cause(exc: Exception) -> str:
    """The Cause AWS reports for an unhandled Lambda error: the Python runtime's JSON error document."""
    frames = traceback.format_tb(exc.__traceback__)[1:]
    return json.dumps(
        {"errorMessage": str(exc), "errorType": type(exc).__name__, "requestId": "", "stackTrace": frames}
    )


def _json_copy(value: Any, *, what: str, error: str) -> Any:
    try:
        return json.loads(json.dumps(value, allow_nan=False))
    except (TypeError, ValueError) as exc:
        raise StatesError(error, f"{what} is not JSON: {exc}") from None


def _limit_payload(value: Any, what: str) -> None:
    size = len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
    if size > MAX_PAYLOAD_BYTES:
        raise StatesError(
            DATA_LIMIT_EXCEEDED, f"{what} is {size} bytes, more than the {MAX_PAYLOAD_BYTES} bytes quota"
        )


def _matches_error(error_equals: list[str], error: str) -> bool:
    if error in error_equals:
        return True
    if error == DATA_LIMIT_EXCEEDED:
        return False  # terminal: only a rule that names it
    if ALL in error_equals:
        return True
    return TASK_FAILED in error_equals and error != TIMEOUT


class AslExecutor:
    """Runs one state machine definition; `run()` may be called many times, from several threads."""

    def __init__(
        self,
        definition: Mapping[str, Any] | str,
        invoke: Invoke,
        *,
        clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] | None = None,
        rng: random.Random | None = None,
        max_transitions: int = 100_000,
        on_transition: OnTransition | None = None,
        state_machine_name: str = "local",
        cancel_poll_seconds: float = 0.25,
        enforce_task_timeouts: bool = True,
    ) -> None:
        """Validate `definition` (dict or JSON text); raise DefinitionError listing every `error:` problem.

        `sleep=None` means real sleeping (and an immediate wake-up on cancel); pass a fake `sleep`
        together with a fake `clock`. Waits with a fake sleep are split into `cancel_poll_seconds`
        chunks when a cancel event is given, so cancellation is seen during a Wait.
        `enforce_task_timeouts=False` calls every Task inline on the caller's thread (handy under a debugger).
        """
        self.definition = load_definition(definition)
        problems = validate_definition(self.definition)
        errors = errors_only(problems)
        if errors:
            raise DefinitionError(errors)
        self.warnings = tuple(p for p in problems if p not in errors)
        if max_transitions < 1:
            raise ValueError("max_transitions must be at least 1")
        self._invoke = invoke
        self._clock = clock
        self._sleep = sleep
        self._rng = rng if rng is not None else random.Random()
        self._rng_lock = threading.Lock()
        self._max_transitions = max_transitions
        self._on_transition = on_transition
        self._name = state_machine_name
        self._poll = cancel_poll_seconds
        self._enforce_timeouts = enforce_task_timeouts

    @property
    def state_machine_arn(self) -> str:
        """A fake ARN for the context object (`$$.StateMachine.Id`)."""
        return f"arn:aws:states:{_REGION}:{_ACCOUNT}:stateMachine:{self._name}"

    def run(self, input: Any, *, cancel: threading.Event | None = None, name: str | None = None) -> Execution:
        """Run one execution to its end; `cancel` is checked between states, in waits and in timed tasks."""
        if name is None:
            with self._rng_lock:
                name = str(uuid.UUID(int=self._rng.getrandbits(128), version=4))
        return _Run(self, name, cancel).execute(input)


class _Run:
    """The mutable state of one execution."""

    def __init__(self, executor: AslExecutor, name: str, cancel: threading.Event | None) -> None:
        self.ex = executor
        self.name = name
        self.cancel = cancel
        self.history: list[tuple[str, str]] = []
        self.transitions = 0
        self.context: dict[str, Any] = {}
        self.deadline: float | None = None
        with executor._rng_lock:
            self.rng = random.Random(executor._rng.getrandbits(64))

    # -- bookkeeping -------------------------------------------------------------------------

    def record(self, state: str, event: str, data: Any = None) -> None:
        self.history.append((state, event))
        if self.ex._on_transition is not None:
            self.ex._on_transition(state, event, data)

    def end(self, status: Status, output: Any, error: StatesError | None) -> Execution:
        return Execution(
            status=status,
            output=output,
            error=(error.error or None) if error else None,
            cause=error.cause if error else None,
            history=tuple(self.history),
            name=self.name,
            transitions=self.transitions,
        )

    def check(self) -> None:
        """Raise on cancellation or when the execution's own TimeoutSeconds has passed."""
        if self.cancel is not None and self.cancel.is_set():
            raise _Aborted
        if self.deadline is not None and self.ex._clock() >= self.deadline:
            raise StatesError(TIMEOUT, "the execution exceeded its TimeoutSeconds")

    def pause_until(self, until: float) -> None:
        """Sleep until `until` on the executor's clock, waking for cancellation and the execution timeout."""
        if self.deadline is not None:
            until = min(until, self.deadline)
        while True:
            self.check()
            remaining = until - self.ex._clock()
            if remaining <= 1e-9:
                break
            if self.ex._sleep is None:
                if self.cancel is not None:
                    self.cancel.wait(remaining)
                else:
                    time.sleep(remaining)
            else:
                self.ex._sleep(min(remaining, self.ex._poll) if self.cancel is not None else remaining)
        self.check()

    # -- the execution loop ------------------------------------------------------------------

    def execute(self, input: Any) -> Execution:
        definition = self.ex.definition
        start = self.ex._clock()
        timeout = definition.get("TimeoutSeconds")
        self.deadline = start + timeout if timeout is not None else None
        state_name: str = definition["StartAt"]
        try:
            data = _json_copy(input, what="execution input", error=RUNTIME)
        except StatesError as exc:
            return self.end("FAILED", None, exc)
        self.context = {
            "Execution": {
                "Id": f"arn:aws:states:{_REGION}:{_ACCOUNT}:execution:{self.ex._name}:{self.name}",
                "Input": data,
                "Name": self.name,
                "RoleArn": f"arn:aws:iam::{_ACCOUNT}:role/local",
                "StartTime": format_timestamp(start),
            },
            "StateMachine": {"Id": self.ex.state_machine_arn, "Name": self.ex._name},
            "State": {},
        }
        try:
            while True:
                self.check()
                if self.transitions >= self.ex._max_transitions:
                    raise StatesError(
                        MAX_TRANSITIONS_EXCEEDED, f"more than {self.ex._max_transitions} state transitions"
                    )
                self.transitions += 1
                state = definition["States"][state_name]
                self.context["State"] = {
                    "Name": state_name,
                    "EnteredTime": format_timestamp(self.ex._clock()),
                    "RetryCount": 0,
                }
                self.record(state_name, "Entered", data)
                _limit_payload(data, f"the input of state {state_name!r}")
                step = getattr(self, f"state_{state['Type'].lower()}")(state_name, state, data)
                _limit_payload(step.output, f"the output of state {state_name!r}")
                self.record(state_name, "Exited", step.output)
                if step.next is None:
                    self.record(state_name, "ExecutionSucceeded", step.output)
                    return self.end("SUCCEEDED", step.output, None)
                state_name, data = step.next, step.output
        except _Aborted:
            self.record(state_name, "ExecutionAborted")
            return self.end("ABORTED", None, None)
        except StatesError as exc:
            self.record(state_name, "ExecutionFailed", _error_object(exc))
            return self.end("FAILED", None, exc)

    # -- path processing ---------------------------------------------------------------------

    def input_path(self, state: Mapping[str, Any], data: Any) -> Any:
        return self.select(state, "InputPath", data)

    def output_path(self, state: Mapping[str, Any], data: Any) -> Any:
        return self.select(state, "OutputPath", data)

    def select(self, state: Mapping[str, Any], field: str, data: Any) -> Any:
        path = state.get(field, "$")
        if path is None:
            return {}
        try:
            return read(parse_path(path), data, self.context)
        except PathNotFound:
            raise StatesError(
                RUNTIME, f"Invalid path {path!r} in {field}: the path does not exist in the state's data"
            ) from None

    def result_path(self, state: Mapping[str, Any], raw_input: Any, result: Any) -> Any:
        path = state.get("ResultPath", "$")
        if path is None:
            return raw_input
        try:
            return write(parse_path(path), raw_input, result)
        except PathNotFound:
            raise StatesError(
                RESULT_PATH_MATCH_FAILURE,
                f"Cannot apply ResultPath {path!r} to the state input: a value on its way is not an object",
            ) from None

    def parameters(self, state: Mapping[str, Any], data: Any) -> Any:
        if "Parameters" not in state:
            return data
        return render(state["Parameters"], data, self.context, self.rng)

    # -- state types -------------------------------------------------------------------------

    def state_pass(self, name: str, state: Mapping[str, Any], data: Any) -> _Step:
        effective = self.parameters(state, self.input_path(state, data))
        result = state.get("Result", effective)
        output = self.output_path(state, self.result_path(state, data, result))
        return _Step(output, state.get("Next"))

    def state_succeed(self, name: str, state: Mapping[str, Any], data: Any) -> _Step:
        return _Step(self.output_path(state, self.input_path(state, data)), None)

    def state_fail(self, name: str, state: Mapping[str, Any], data: Any) -> _Step:
        fields: dict[str, str | None] = {}
        for field in ("Error", "Cause"):
            value: Any = state.get(field)
            if f"{field}Path" in state:
                value = resolve(state[f"{field}Path"], data, self.context, self.rng, field=f"{field}Path")
                if not isinstance(value, str):
                    raise StatesError(RUNTIME, f"{field}Path must resolve to a string, got {value!r}")
            fields[field] = value
        raise StatesError(fields["Error"] or "", fields["Cause"])

    def state_choice(self, name: str, state: Mapping[str, Any], data: Any) -> _Step:
        effective = self.input_path(state, data)
        for rule in state["Choices"]:
            if matches(rule, effective, self.context):
                return _Step(self.output_path(state, effective), rule["Next"])
        if "Default" in state:
            return _Step(self.output_path(state, effective), state["Default"])
        raise StatesError(NO_CHOICE_MATCHED, f"No Choice rule matched and there is no Default in {name!r}")

    def state_wait(self, name: str, state: Mapping[str, Any], data: Any) -> _Step:
        effective = self.input_path(state, data)
        now = self.ex._clock()
        if "Seconds" in state:
            until = now + state["Seconds"]
        elif "Timestamp" in state:
            stamp = parse_timestamp(state["Timestamp"])
            until = now if stamp is None else stamp
        elif "SecondsPath" in state:
            seconds = resolve(state["SecondsPath"], effective, self.context, self.rng, field="SecondsPath")
            if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds < 0:
                raise StatesError(
                    RUNTIME, f"SecondsPath must resolve to a non-negative number, got {seconds!r}"
                )
            until = now + seconds
        else:
            stamp = resolve(state["TimestampPath"], effective, self.context, self.rng, field="TimestampPath")
            parsed = parse_timestamp(stamp)
            if parsed is None:
                raise StatesError(
                    RUNTIME, f"TimestampPath must resolve to an RFC 3339 timestamp, got {stamp!r}"
                )
            until = parsed
        self.pause_until(until)
        return _Step(self.output_path(state, effective), state.get("Next"))

    def state_task(self, name: str, state: Mapping[str, Any], data: Any) -> _Step:
        retriers: list[dict[str, Any]] = state.get("Retry", [])
        attempts = [0] * len(retriers)
        while True:
            try:
                return _Step(self.task_attempt(name, state, data), state.get("Next"))
            except StatesError as exc:
                if exc.error == RUNTIME:
                    raise
                self.record(
                    name, "TaskTimedOut" if exc.error == TIMEOUT else "TaskFailed", _error_object(exc)
                )
                index = next(
                    (i for i, r in enumerate(retriers) if _matches_error(r["ErrorEquals"], exc.error)), None
                )
                if index is not None and attempts[index] < retriers[index].get("MaxAttempts", 3):
                    delay = self.retry_delay(retriers[index], attempts[index])
                    attempts[index] += 1
                    self.context["State"]["RetryCount"] += 1
                    self.record(name, "Retrying", {"delay": delay, **_error_object(exc)})
                    self.pause_until(self.ex._clock() + delay)
                    continue
                for catcher in state.get("Catch", []):
                    if _matches_error(catcher["ErrorEquals"], exc.error):
                        output = self.result_path(catcher, data, _error_object(exc))
                        self.record(name, "Caught", output)
                        return _Step(output, catcher["Next"])
                raise

    def retry_delay(self, retrier: Mapping[str, Any], attempt: int) -> float:
        """IntervalSeconds * BackoffRate ** attempt, capped by MaxDelaySeconds, with optional FULL jitter."""
        delay = float(retrier.get("IntervalSeconds", 1)) * float(retrier.get("BackoffRate", 2.0)) ** attempt
        if "MaxDelaySeconds" in retrier:
            delay = min(delay, float(retrier["MaxDelaySeconds"]))
        if retrier.get("JitterStrategy", "NONE") == "FULL":
            delay *= self.rng.random()
        return delay

    def task_attempt(self, name: str, state: Mapping[str, Any], data: Any) -> Any:
        effective = self.input_path(state, data)
        params = self.parameters(state, effective)
        timeout: Any = state.get("TimeoutSeconds")
        if "TimeoutSecondsPath" in state:
            timeout = resolve(
                state["TimeoutSecondsPath"], effective, self.context, self.rng, field="TimeoutSecondsPath"
            )
            if isinstance(timeout, bool) or not isinstance(timeout, int) or timeout <= 0:
                raise StatesError(
                    RUNTIME, f"TimeoutSecondsPath must resolve to a positive integer, got {timeout!r}"
                )
        resource: str = state["Resource"]
        _limit_payload(params, f"the parameters of task {name!r}")
        if resource_kind(resource) == "lambda_invoke":
            if not isinstance(params, dict) or not isinstance(params.get("FunctionName"), str):
                raise StatesError(RUNTIME, f"{LAMBDA_INVOKE} needs Parameters.FunctionName to be a string")
            payload = self.call(name, params["FunctionName"], params.get("Payload", {}), timeout)
            result: Any = {
                "ExecutedVersion": "$LATEST",
                "Payload": payload,
                "SdkHttpMetadata": {"HttpStatusCode": 200},
                "SdkResponseMetadata": {"RequestId": self.context["Execution"]["Name"]},
                "StatusCode": 200,
            }
        else:
            result = self.call(name, resource, params, timeout)
        _limit_payload(result, f"the result of task {name!r}")
        if "ResultSelector" in state:
            result = render(state["ResultSelector"], result, self.context, self.rng)
        return self.output_path(state, self.result_path(state, data, result))

    def call(self, name: str, target: str, payload: Any, timeout: float | None) -> Any:
        """Invoke with JSON in and out, mapping Python exceptions to Lambda-style States errors."""
        payload = _json_copy(payload, what="task payload", error=RUNTIME)
        if timeout is None or not self.ex._enforce_timeouts:
            result = self.guarded(target, payload)
        else:
            result = self.call_with_timeout(name, target, payload, timeout)
        return _json_copy(result, what="the function's result", error="Runtime.MarshalError")

    def guarded(self, target: str, payload: Any) -> Any:
        try:
            return self.ex._invoke(target, payload)
        except StatesError:
            raise
        except Exception as exc:
            raise StatesError(type(exc).__name__, _lambda_cause(exc)) from exc

    def call_with_timeout(self, name: str, target: str, payload: Any, timeout: float) -> Any:
        box: dict[str, Any] = {}
        done = threading.Event()

        def work() -> None:
            try:
                box["result"] = self.guarded(target, payload)
            except BaseException as exc:
                box["error"] = exc
            finally:
                done.set()

        threading.Thread(target=work, name=f"asl-task-{name}", daemon=True).start()
        give_up = time.monotonic() + timeout
        while not done.wait(max(0.0, min(self.ex._poll, give_up - time.monotonic()))):
            if self.cancel is not None and self.cancel.is_set():
                raise _Aborted
            if time.monotonic() >= give_up:
                raise StatesError(TIMEOUT, f"Task {name!r} timed out after {timeout} seconds")
        if "error" in box:
            raise box["error"]
        return box["result"]
