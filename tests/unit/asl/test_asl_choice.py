"""Choice rules: each operator and its Path form, type mismatches, missing variables, Default."""

from __future__ import annotations

from typing import Any

import pytest

from infra.local.asl import AslExecutor, StatesError
from infra.local.asl._choice import matches

from .conftest import Recorder, machine

DATA = {
    "s": "beta",
    "n": 20,
    "f": 2.5,
    "b": True,
    "t": "2024-05-01T12:00:00Z",
    "t2": "2024-05-01T14:00:00+02:00",
    "z": None,
    "other": {"s": "beta", "n": 20, "b": True, "t": "2024-05-02T00:00:00Z"},
    "file": "report-2024.csv",
}


def leaf(op: str, operand: Any, variable: str = "$.s") -> dict[str, Any]:
    return {"Variable": variable, op: operand}


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        (leaf("StringEquals", "beta"), True),
        (leaf("StringEquals", "Beta"), False),
        (leaf("StringLessThan", "gamma"), True),
        (leaf("StringGreaterThan", "alpha"), True),
        (leaf("StringLessThanEquals", "beta"), True),
        (leaf("StringGreaterThanEquals", "gamma"), False),
        (leaf("StringEqualsPath", "$.other.s"), True),
        (leaf("StringLessThanPath", "$.other.s"), False),
        (leaf("StringMatches", "report-*.csv", "$.file"), True),
        (leaf("StringMatches", "*.txt", "$.file"), False),
        (leaf("StringMatches", "report\\*", "$.file"), False),
        (leaf("StringMatches", "a\\*b", "$.s"), False),
        (leaf("NumericEquals", 20, "$.n"), True),
        (leaf("NumericEquals", 20.0, "$.n"), True),
        (leaf("NumericLessThan", 30, "$.n"), True),
        (leaf("NumericGreaterThan", 30, "$.n"), False),
        (leaf("NumericLessThanEquals", 20, "$.n"), True),
        (leaf("NumericGreaterThanEquals", 2.5, "$.f"), True),
        (leaf("NumericEqualsPath", "$.other.n", "$.n"), True),
        (leaf("NumericGreaterThanPath", "$.f", "$.n"), True),
        (leaf("BooleanEquals", True, "$.b"), True),
        (leaf("BooleanEquals", False, "$.b"), False),
        (leaf("BooleanEqualsPath", "$.other.b", "$.b"), True),
        (leaf("TimestampEquals", "2024-05-01T12:00:00Z", "$.t"), True),
        (leaf("TimestampEqualsPath", "$.t2", "$.t"), True),
        (leaf("TimestampLessThan", "2024-05-01T12:00:01Z", "$.t"), True),
        (leaf("TimestampGreaterThan", "2024-05-01T12:00:01Z", "$.t"), False),
        (leaf("TimestampLessThanEquals", "2024-05-01T12:00:00Z", "$.t"), True),
        (leaf("TimestampGreaterThanEquals", "2024-04-30T00:00:00Z", "$.t"), True),
        (leaf("TimestampLessThanPath", "$.other.t", "$.t"), True),
        (leaf("IsPresent", True), True),
        (leaf("IsPresent", False, "$.missing"), True),
        (leaf("IsPresent", True, "$.missing"), False),
        (leaf("IsNull", True, "$.z"), True),
        (leaf("IsNull", False, "$.s"), True),
        (leaf("IsString", True), True),
        (leaf("IsNumeric", True, "$.f"), True),
        (leaf("IsNumeric", True, "$.b"), False),
        (leaf("IsBoolean", True, "$.b"), True),
        (leaf("IsTimestamp", True, "$.t"), True),
        (leaf("IsTimestamp", True, "$.s"), False),
        # a type mismatch is a false comparison, not an error
        (leaf("StringEquals", "20", "$.n"), False),
        (leaf("NumericEquals", 1, "$.b"), False),
        (leaf("BooleanEquals", True, "$.n"), False),
        (leaf("TimestampEquals", "2024-05-01T12:00:00Z", "$.s"), False),
        ({"And": [leaf("IsString", True), leaf("NumericGreaterThan", 10, "$.n")]}, True),
        ({"And": [leaf("IsString", True), leaf("NumericGreaterThan", 99, "$.n")]}, False),
        ({"Or": [leaf("IsString", False), leaf("NumericGreaterThan", 10, "$.n")]}, True),
        ({"Not": leaf("StringEquals", "beta")}, False),
        ({"Variable": "$$.Execution.Name", "StringEquals": "ctx"}, True),
    ],
)
def test_rules(rule: dict[str, Any], expected: bool) -> None:
    assert matches(rule, DATA, {"Execution": {"Name": "ctx"}}) is expected


@pytest.mark.parametrize(
    "rule",
    [
        leaf("StringEquals", "x", "$.missing"),
        leaf("IsNull", True, "$.missing"),
        leaf("StringEqualsPath", "$.missing"),
    ],
)
def test_missing_variable_is_a_runtime_error(rule: dict[str, Any]) -> None:
    with pytest.raises(StatesError) as info:
        matches(rule, DATA, {})
    assert info.value.error == "States.Runtime"


# The AWS developer guide's Choice state example.
DOCS_CHOICE = machine(
    {
        "ChoiceStateX": {
            "Type": "Choice",
            "Choices": [
                {"Not": {"Variable": "$.type", "StringEquals": "Private"}, "Next": "Public"},
                {"Variable": "$.value", "NumericEquals": 0, "Next": "ValueIsZero"},
                {
                    "And": [
                        {"Variable": "$.value", "NumericGreaterThanEquals": 20},
                        {"Variable": "$.value", "NumericLessThan": 30},
                    ],
                    "Next": "ValueInTwenties",
                },
            ],
            "Default": "DefaultState",
        },
        "Public": {"Type": "Succeed"},
        "ValueIsZero": {"Type": "Succeed"},
        "ValueInTwenties": {"Type": "Succeed"},
        "DefaultState": {"Type": "Fail", "Error": "DefaultStateError", "Cause": "No Matches!"},
    }
)


@pytest.mark.parametrize(
    ("input", "last_state", "status"),
    [
        ({"type": "Public", "value": 0}, "Public", "SUCCEEDED"),
        ({"type": "Private", "value": 0}, "ValueIsZero", "SUCCEEDED"),
        ({"type": "Private", "value": 25}, "ValueInTwenties", "SUCCEEDED"),
        ({"type": "Private", "value": 35}, "DefaultState", "FAILED"),
    ],
)
def test_docs_choice_example(input: dict[str, Any], last_state: str, status: str) -> None:
    result = AslExecutor(DOCS_CHOICE, Recorder()).run(input)
    assert result.status == status
    assert result.history[-1][0] == last_state
    if status == "SUCCEEDED":
        assert result.output == input
    else:
        assert (result.error, result.cause) == ("DefaultStateError", "No Matches!")


def test_no_match_without_default_fails_with_no_choice_matched() -> None:
    definition = machine(
        {
            "C": {"Type": "Choice", "Choices": [{"Variable": "$.x", "IsPresent": True, "Next": "S"}]},
            "S": {"Type": "Succeed"},
        }
    )
    result = AslExecutor(definition, Recorder()).run({})
    assert (result.status, result.error) == ("FAILED", "States.NoChoiceMatched")


def test_choice_applies_input_and_output_path() -> None:
    definition = machine(
        {
            "C": {
                "Type": "Choice",
                "InputPath": "$.inner",
                "OutputPath": "$.keep",
                "Choices": [{"Variable": "$.go", "BooleanEquals": True, "Next": "S"}],
            },
            "S": {"Type": "Succeed"},
        }
    )
    result = AslExecutor(definition, Recorder()).run({"inner": {"go": True, "keep": [1]}})
    assert (result.status, result.output) == ("SUCCEEDED", [1])
