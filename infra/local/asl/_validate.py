"""Static checks of a definition, so mistakes surface before a crawl runs rather than mid-execution.

Each problem is a string starting with `error:` or `warning:`. Errors cover what AWS would reject
(unknown types and fields, missing Next/End, dangling targets, bad paths, bad rules) plus what this
local executor cannot run (Map, Parallel, non-Lambda resources) and unreachable states; warnings
cover Tasks with neither Retry nor Catch.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator, Mapping
from typing import Any

from ._choice import OPERATORS, PATH_COMPARISONS, RULE_META, TYPE_TESTS, is_number
from ._definition import LAMBDA_INVOKE, load_definition, resource_kind, unresolved_substitutions
from ._errors import ALL, DefinitionError, PathSyntaxError
from ._intrinsics import parse_intrinsic
from ._paths import parse_path
from ._timestamps import parse_timestamp

_COMMON = frozenset({"Type", "Comment"})
_FLOW = frozenset({"Next", "End"})
_IO = frozenset({"InputPath", "OutputPath"})
FIELDS: dict[str, frozenset[str]] = {
    "Pass": _COMMON | _FLOW | _IO | {"Parameters", "Result", "ResultPath"},
    "Task": _COMMON
    | _FLOW
    | _IO
    | {
        "Resource",
        "Parameters",
        "ResultSelector",
        "ResultPath",
        "Retry",
        "Catch",
        "TimeoutSeconds",
        "TimeoutSecondsPath",
        "HeartbeatSeconds",
        "HeartbeatSecondsPath",
    },
    "Choice": _COMMON | _IO | {"Choices", "Default"},
    "Wait": _COMMON | _FLOW | _IO | {"Seconds", "SecondsPath", "Timestamp", "TimestampPath"},
    "Succeed": _COMMON | _IO,
    "Fail": _COMMON | {"Error", "ErrorPath", "Cause", "CausePath"},
}
SUPPORTED_TYPES = frozenset(FIELDS)
UNSUPPORTED_TYPES = frozenset({"Map", "Parallel"})
_TOP_FIELDS = frozenset({"StartAt", "States", "Comment", "Version", "TimeoutSeconds", "QueryLanguage"})
_RETRY_FIELDS = frozenset(
    {
        "ErrorEquals",
        "IntervalSeconds",
        "MaxAttempts",
        "BackoffRate",
        "MaxDelaySeconds",
        "JitterStrategy",
        "Comment",
    }
)
_CATCH_FIELDS = frozenset({"ErrorEquals", "Next", "ResultPath", "Comment"})


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


class _Checker:
    """Collects problems for one definition."""

    def __init__(self, definition: Mapping[str, Any]) -> None:
        self.definition = definition
        self.problems: list[str] = []
        names = definition.get("States")
        self.names: set[str] = set(names) if isinstance(names, dict) else set()

    def error(self, where: str, message: str) -> None:
        self.problems.append(f"error: {where}: {message}")

    def warning(self, where: str, message: str) -> None:
        self.problems.append(f"warning: {where}: {message}")

    def path(
        self, where: str, field: str, value: Any, *, nullable: bool = True, context: bool = True
    ) -> None:
        if value is None and nullable:
            return
        if not isinstance(value, str):
            self.error(where, f"{field} must be a path string")
            return
        try:
            parsed = parse_path(value)
        except PathSyntaxError as exc:
            self.error(where, f"{field}: {exc}")
            return
        if parsed.context and not context:
            self.error(where, f"{field} cannot refer to the context object ($$)")

    def expression(self, where: str, field: str, value: Any) -> None:
        """A `.$` field, ErrorPath or CausePath: a path or an intrinsic function call."""
        if isinstance(value, str) and value.startswith("States."):
            try:
                parse_intrinsic(value)
            except PathSyntaxError as exc:
                self.error(where, f"{field}: {exc}")
        else:
            self.path(where, field, value, nullable=False)

    def template(self, where: str, field: str, template: Any) -> None:
        if isinstance(template, dict):
            for key, value in template.items():
                if key.endswith(".$"):
                    self.expression(where, f"{field}.{key}", value)
                else:
                    self.template(where, f"{field}.{key}", value)
        elif isinstance(template, list):
            for index, item in enumerate(template):
                self.template(where, f"{field}[{index}]", item)

    def target(self, where: str, field: str, value: Any) -> None:
        if not isinstance(value, str):
            self.error(where, f"{field} must be a state name")
        elif value not in self.names:
            self.error(where, f"{field} refers to missing state {value!r}")

    def check(self) -> list[str]:
        definition = self.definition
        for key in definition:
            if key not in _TOP_FIELDS:
                self.error("definition", f"unknown field {key!r}")
        if definition.get("QueryLanguage", "JSONPath") != "JSONPath":
            self.error("definition", "only QueryLanguage JSONPath is supported by the local executor")
        timeout = definition.get("TimeoutSeconds")
        if timeout is not None and (not _is_int(timeout) or timeout <= 0):
            self.error("definition", "TimeoutSeconds must be a positive integer")
        states = definition.get("States")
        if not isinstance(states, dict) or not states:
            self.error("definition", "States must be a non-empty object")
            return self.problems
        start = definition.get("StartAt")
        if not isinstance(start, str) or start not in states:
            self.error("definition", f"StartAt {start!r} is not a state")
        for name, state in states.items():
            self.state(f"state {name!r}", state)
        if isinstance(start, str) and start in states:
            reachable = self.reachable(start, states)
            for name in states:
                if name not in reachable:
                    self.error(f"state {name!r}", "unreachable from StartAt (AWS rejects such definitions)")
        return self.problems

    def reachable(self, start: str, states: Mapping[str, Any]) -> set[str]:
        seen = {start}
        todo = deque([start])
        while todo:
            state = states.get(todo.popleft())
            for target in transitions(state) if isinstance(state, dict) else ():
                if target in states and target not in seen:
                    seen.add(target)
                    todo.append(target)
        return seen

    def state(self, where: str, state: Any) -> None:
        if not isinstance(state, dict):
            self.error(where, "must be an object")
            return
        kind = state.get("Type")
        if kind in UNSUPPORTED_TYPES:
            self.error(where, f"state type {kind!r} is not supported by the local executor")
            return
        if kind not in SUPPORTED_TYPES:
            self.error(where, f"unknown state type {kind!r}")
            return
        for key in state:
            if key not in FIELDS[kind]:
                self.error(where, f"unknown field {key!r} for a {kind} state")
        if FIELDS[kind] >= _FLOW:
            has_next, end = "Next" in state, state.get("End")
            if has_next and end is True:
                self.error(where, "has both Next and End")
            elif has_next:
                self.target(where, "Next", state["Next"])
            elif end is not True:
                self.error(where, 'needs Next or "End": true')
        for field in ("InputPath", "OutputPath"):
            if field in state:
                self.path(where, field, state[field])
        if "ResultPath" in state:
            self.path(where, "ResultPath", state["ResultPath"], context=False)
        for field in ("Parameters", "ResultSelector"):
            if field in state:
                if not isinstance(state[field], dict):
                    self.error(where, f"{field} must be an object")
                self.template(where, field, state[field])
        getattr(self, f"state_{kind.lower()}")(where, state)

    def state_pass(self, where: str, state: dict[str, Any]) -> None:
        pass

    def state_succeed(self, where: str, state: dict[str, Any]) -> None:
        pass

    def state_fail(self, where: str, state: dict[str, Any]) -> None:
        for field in ("Error", "Cause"):
            if field in state and f"{field}Path" in state:
                self.error(where, f"has both {field} and {field}Path")
            if field in state and not isinstance(state[field], str):
                self.error(where, f"{field} must be a string")
            if f"{field}Path" in state:
                self.expression(where, f"{field}Path", state[f"{field}Path"])

    def state_wait(self, where: str, state: dict[str, Any]) -> None:
        given = [f for f in ("Seconds", "SecondsPath", "Timestamp", "TimestampPath") if f in state]
        if len(given) != 1:
            self.error(where, "needs exactly one of Seconds, SecondsPath, Timestamp, TimestampPath")
            return
        field = given[0]
        value = state[field]
        if field == "Seconds" and (not _is_int(value) or value < 0):
            self.error(where, "Seconds must be a non-negative integer")
        elif field == "Timestamp" and parse_timestamp(value) is None:
            self.error(where, f"Timestamp {value!r} is not an RFC 3339 timestamp")
        elif field.endswith("Path"):
            self.path(where, field, value, nullable=False)

    def state_choice(self, where: str, state: dict[str, Any]) -> None:
        choices = state.get("Choices")
        if not isinstance(choices, list) or not choices:
            self.error(where, "Choices must be a non-empty array")
            choices = []
        for index, rule in enumerate(choices):
            rule_where = f"{where} Choices[{index}]"
            self.rule(rule_where, rule, top=True)
            if isinstance(rule, dict):
                if "Next" in rule:
                    self.target(rule_where, "Next", rule["Next"])
                else:
                    self.error(rule_where, "needs Next")
        if "Default" in state:
            self.target(where, "Default", state["Default"])

    def rule(self, where: str, rule: Any, *, top: bool = False) -> None:
        if not isinstance(rule, dict):
            self.error(where, "a choice rule must be an object")
            return
        if not top and "Next" in rule:
            self.error(where, "a nested choice rule cannot have Next")
        for combinator in ("And", "Or"):
            if combinator in rule:
                subs = rule[combinator]
                if not isinstance(subs, list) or not subs:
                    self.error(where, f"{combinator} must be a non-empty array")
                    return
                for index, sub in enumerate(subs):
                    self.rule(f"{where}.{combinator}[{index}]", sub)
                return
        if "Not" in rule:
            self.rule(f"{where}.Not", rule["Not"])
            return
        if "Variable" not in rule:
            self.error(where, "needs Variable (or And/Or/Not)")
        else:
            self.path(where, "Variable", rule["Variable"], nullable=False)
        operators = [key for key in rule if key not in RULE_META]
        unknown = [key for key in operators if key not in OPERATORS]
        if unknown:
            self.error(where, f"unknown choice operator(s) {unknown}")
        elif len(operators) != 1:
            self.error(where, f"needs exactly one comparison operator, found {operators}")
        else:
            self.operand(where, operators[0], rule[operators[0]])

    def operand(self, where: str, operator: str, value: Any) -> None:
        if operator in PATH_COMPARISONS:
            self.path(where, operator, value, nullable=False)
            return
        valid = {
            "String": isinstance(value, str),
            "Numeric": is_number(value),
            "Boolean": isinstance(value, bool),
            "Timestamp": parse_timestamp(value) is not None,
        }
        if operator in TYPE_TESTS:
            ok = isinstance(value, bool)
        else:
            ok = next(valid[kind] for kind in valid if operator.startswith(kind))
        if not ok:
            self.error(where, f"{operator} has an operand of the wrong type: {value!r}")

    def state_task(self, where: str, state: dict[str, Any]) -> None:
        resource = state.get("Resource")
        if isinstance(resource, str) and unresolved_substitutions(resource):
            self.error(where, f"Resource has unresolved substitutions {unresolved_substitutions(resource)}")
        elif resource_kind(resource) is None:
            self.error(
                where,
                f"Resource {resource!r} is not run by the local executor "
                f"(a Lambda function ARN or {LAMBDA_INVOKE!r} is)",
            )
        elif resource == LAMBDA_INVOKE:
            params = state.get("Parameters")
            if not isinstance(params, dict) or not ({"FunctionName", "FunctionName.$"} & params.keys()):
                self.error(where, f"{LAMBDA_INVOKE} needs Parameters.FunctionName")
            elif unresolved_substitutions(str(params.get("FunctionName", ""))):
                names = unresolved_substitutions(str(params["FunctionName"]))
                self.error(where, f"Parameters.FunctionName has unresolved substitutions {names}")
        for field in ("TimeoutSeconds", "HeartbeatSeconds"):
            value = state.get(field)
            if value is not None and (not _is_int(value) or value <= 0):
                self.error(where, f"{field} must be a positive integer")
            if value is not None and f"{field[:-7]}SecondsPath" in state:
                self.error(where, f"has both {field} and {field}Path")
        for field in ("TimeoutSecondsPath", "HeartbeatSecondsPath"):
            if field in state:
                self.path(where, field, state[field], nullable=False)
        retry = state.get("Retry", [])
        catch = state.get("Catch", [])
        if not retry and not catch:
            self.warning(where, "Task has no Retry or Catch")
        self.handlers(where, "Retry", retry, _RETRY_FIELDS)
        self.handlers(where, "Catch", catch, _CATCH_FIELDS)

    def handlers(self, where: str, field: str, handlers: Any, allowed: frozenset[str]) -> None:
        if not isinstance(handlers, list):
            self.error(where, f"{field} must be an array")
            return
        for index, handler in enumerate(handlers):
            at = f"{where} {field}[{index}]"
            if not isinstance(handler, dict):
                self.error(at, "must be an object")
                continue
            for key in handler:
                if key not in allowed:
                    self.error(at, f"unknown field {key!r}")
            errors = handler.get("ErrorEquals")
            if not isinstance(errors, list) or not errors or not all(isinstance(e, str) for e in errors):
                self.error(at, "ErrorEquals must be a non-empty array of strings")
            elif ALL in errors and (len(errors) > 1 or index != len(handlers) - 1):
                self.error(at, f"{ALL} must appear alone in the last {field}")
            if field == "Catch":
                self.target(at, "Next", handler.get("Next"))
                if "ResultPath" in handler:
                    self.path(at, "ResultPath", handler["ResultPath"], context=False)
            else:
                self.retrier(at, handler)

    def retrier(self, at: str, retrier: dict[str, Any]) -> None:
        checks = (
            ("IntervalSeconds", lambda v: _is_int(v) and v >= 1, "a positive integer"),
            ("MaxAttempts", lambda v: _is_int(v) and v >= 0, "a non-negative integer"),
            ("BackoffRate", lambda v: is_number(v) and v >= 1.0, "a number >= 1.0"),
            ("MaxDelaySeconds", lambda v: _is_int(v) and v >= 1, "a positive integer"),
            ("JitterStrategy", lambda v: v in ("FULL", "NONE"), "FULL or NONE"),
        )
        for key, ok, expected in checks:
            if key in retrier and not ok(retrier[key]):
                self.error(at, f"{key} must be {expected}")


def transitions(state: Mapping[str, Any]) -> Iterator[str]:
    """Every state name a state can move to (Next, Choices[].Next, Default, Catch[].Next)."""
    candidates: list[Any] = [state.get("Next"), state.get("Default")]
    for key in ("Choices", "Catch"):
        items = state.get(key)
        if isinstance(items, list):
            candidates.extend(item.get("Next") for item in items if isinstance(item, dict))
    yield from (c for c in candidates if isinstance(c, str))


def validate_definition(definition: Mapping[str, Any] | str) -> list[str]:
    """All problems found in a definition (dict or JSON text); `error:` ones stop the executor."""
    try:
        loaded = load_definition(definition)
    except DefinitionError as exc:
        return list(exc.problems)
    return _Checker(loaded).check()


def errors_only(problems: list[str]) -> list[str]:
    """The problems that make a definition unusable."""
    return [p for p in problems if p.startswith("error:")]
