"""validate_definition and the executor's refusal of definitions it cannot run."""

from __future__ import annotations

from typing import Any

import pytest

from infra.local.asl import LAMBDA_INVOKE, AslExecutor, DefinitionError, substitute, validate_definition

from .conftest import FN, Recorder, machine, task

CATCH_ALL = [{"ErrorEquals": ["States.ALL"], "Next": "End"}]
END = {"Type": "Succeed"}


def good_task(**fields: Any) -> dict[str, Any]:
    return task(Catch=CATCH_ALL, **fields)


def test_a_clean_definition_has_no_problems() -> None:
    definition = machine(
        {
            "P": {"Type": "Pass", "Parameters": {"x.$": "States.Format('{}', $.a)"}, "Next": "T"},
            "T": good_task(Retry=[{"ErrorEquals": ["States.ALL"], "JitterStrategy": "FULL"}], Next="C"),
            "C": {
                "Type": "Choice",
                "Choices": [{"Variable": "$.x", "IsString": True, "Next": "W"}],
                "Default": "F",
            },
            "W": {"Type": "Wait", "SecondsPath": "$.s", "Next": "End"},
            "F": {"Type": "Fail", "Error": "E"},
            "End": END,
        }
    )
    assert validate_definition(definition) == []


@pytest.mark.parametrize(
    ("states", "fragment"),
    [
        ({"A": {"Type": "Tsk", "End": True}}, "unknown state type 'Tsk'"),
        ({"A": {"Type": "Map", "End": True}}, "'Map' is not supported"),
        ({"A": {"Type": "Parallel", "End": True}}, "'Parallel' is not supported"),
        ({"A": {"Type": "Pass"}}, 'needs Next or "End": true'),
        ({"A": {"Type": "Pass", "Next": "A", "End": True}}, "both Next and End"),
        ({"A": {"Type": "Pass", "Next": "Nowhere"}}, "missing state 'Nowhere'"),
        ({"A": {"Type": "Pass", "Nxt": "B", "End": True}}, "unknown field 'Nxt'"),
        ({"A": {"Type": "Pass", "InputPath": "$.a[*]", "End": True}}, "InputPath"),
        ({"A": {"Type": "Pass", "ResultPath": "$$.x", "End": True}}, "context object"),
        (
            {"A": {"Type": "Pass", "Parameters": {"x.$": "States.Nope()"}, "End": True}},
            "unsupported intrinsic",
        ),
        ({"A": {"Type": "Pass", "Parameters": {"x.$": "no-dollar"}, "End": True}}, "Parameters.x.$"),
        ({"A": {"Type": "Choice", "Choices": []}}, "Choices must be a non-empty array"),
        ({"A": {"Type": "Choice", "Choices": [{"Variable": "$.a", "StringEquals": "x"}]}}, "needs Next"),
        (
            {"A": {"Type": "Choice", "Choices": [{"Variable": "$.a", "StringEqual": "x", "Next": "A"}]}},
            "unknown choice",
        ),
        (
            {"A": {"Type": "Choice", "Choices": [{"Variable": "$.a", "NumericEquals": "1", "Next": "A"}]}},
            "wrong type",
        ),
        (
            {
                "A": {
                    "Type": "Choice",
                    "Choices": [{"Variable": "$.a", "IsNull": True, "IsString": True, "Next": "A"}],
                }
            },
            "exactly one",
        ),
        (
            {
                "A": {
                    "Type": "Choice",
                    "Choices": [{"Not": {"Variable": "$.a", "IsNull": True, "Next": "A"}, "Next": "A"}],
                }
            },
            "nested choice rule cannot have Next",
        ),
        ({"A": {"Type": "Choice", "Choices": [{"And": [], "Next": "A"}]}}, "And must be a non-empty array"),
        ({"A": {"Type": "Wait", "End": True}}, "exactly one of Seconds"),
        ({"A": {"Type": "Wait", "Seconds": -1, "End": True}}, "non-negative integer"),
        ({"A": {"Type": "Wait", "Timestamp": "tomorrow", "End": True}}, "RFC 3339"),
        ({"A": {"Type": "Fail", "Error": "E", "ErrorPath": "$.e"}}, "both Error and ErrorPath"),
        ({"A": {"Type": "Fail", "Next": "A"}}, "unknown field 'Next'"),
        ({"A": good_task(Resource="arn:aws:states:::sqs:sendMessage")}, "not run by the local executor"),
        ({"A": good_task(Resource="${SeedFunctionArn}")}, "unresolved substitutions ['SeedFunctionArn']"),
        (
            {"A": good_task(Resource=LAMBDA_INVOKE, Parameters={"Payload": {}})},
            "needs Parameters.FunctionName",
        ),
        ({"A": good_task(TimeoutSeconds=0)}, "TimeoutSeconds must be a positive integer"),
        ({"A": good_task(Retry=[{"ErrorEquals": ["States.ALL", "X"]}])}, "must appear alone"),
        (
            {"A": good_task(Retry=[{"ErrorEquals": ["States.ALL"]}, {"ErrorEquals": ["X"]}])},
            "must appear alone",
        ),
        ({"A": good_task(Retry=[{"ErrorEquals": []}])}, "ErrorEquals must be a non-empty array"),
        ({"A": good_task(Retry=[{"ErrorEquals": ["X"], "MaxAttempts": -1}])}, "MaxAttempts"),
        ({"A": good_task(Retry=[{"ErrorEquals": ["X"], "BackoffRate": 0.5}])}, "BackoffRate"),
        ({"A": good_task(Retry=[{"ErrorEquals": ["X"], "JitterStrategy": "HALF"}])}, "JitterStrategy"),
        ({"A": task(Catch=[{"ErrorEquals": ["X"], "Next": "Gone"}])}, "missing state 'Gone'"),
    ],
)
def test_errors(states: dict[str, Any], fragment: str) -> None:
    problems = validate_definition(machine(states))
    errors = [p for p in problems if p.startswith("error:")]
    assert any(fragment in p for p in errors), problems
    with pytest.raises(DefinitionError) as info:
        AslExecutor(machine(states), Recorder())
    assert any(fragment in p for p in info.value.problems)


@pytest.mark.parametrize(
    ("definition", "fragment"),
    [
        ({"States": {"A": END}}, "StartAt None is not a state"),
        ({"StartAt": "B", "States": {"A": END}}, "StartAt 'B' is not a state"),
        ({"StartAt": "A", "States": {}}, "States must be a non-empty object"),
        ({"StartAt": "A", "States": {"A": END}, "QueryLanguage": "JSONata"}, "JSONPath"),
        ({"StartAt": "A", "States": {"A": END}, "Extra": 1}, "unknown field 'Extra'"),
        ("{not json", "not JSON"),
    ],
)
def test_top_level_errors(definition: Any, fragment: str) -> None:
    assert any(fragment in p for p in validate_definition(definition))


def test_warnings_do_not_stop_the_executor() -> None:
    definition = machine({"A": task()})
    problems = validate_definition(definition)
    assert problems == ["warning: state 'A': Task has no Retry or Catch"]
    executor = AslExecutor(definition, Recorder())
    assert executor.warnings == tuple(problems)


def test_unreachable_states_are_errors() -> None:
    definition = machine({"A": END, "Orphan": END, "Island": {"Type": "Pass", "Next": "Orphan"}})
    problems = validate_definition(definition)
    assert sorted(problems) == [
        "error: state 'Island': unreachable from StartAt (AWS rejects such definitions)",
        "error: state 'Orphan': unreachable from StartAt (AWS rejects such definitions)",
    ]


def test_end_false_with_next_is_accepted() -> None:
    assert validate_definition(machine({"A": {"Type": "Pass", "Next": "B", "End": False}, "B": END})) == []


def test_definition_text_and_substitutions() -> None:
    text = '{"StartAt": "T", "States": {"T": {"Type": "Task", "Resource": "${Fn}", "End": true}}}'
    assert any("unresolved" in p for p in validate_definition(text))
    resolved = substitute(text, {"Fn": FN, "Unused": "x"})
    assert FN in resolved
    assert AslExecutor(resolved, Recorder(lambda t, p: "ran")).run({}).output == "ran"
