"""JSONPath subset and the InputPath -> Parameters -> ResultSelector -> ResultPath -> OutputPath order.

Examples come from the AWS Step Functions developer guide ("Processing input and output").
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from infra.local.asl import PathSyntaxError
from infra.local.asl._errors import PathNotFound
from infra.local.asl._paths import parse_path, read, write

from .conftest import FN, Recorder, run_one, task

DATA = {"a": {"b": [10, {"c": "deep"}], "x y": 1}, "n": None}
CONTEXT = {"Execution": {"Name": "e1"}}


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("$", DATA),
        ("$.a.b", [10, {"c": "deep"}]),
        ("$.a.b[0]", 10),
        ("$.a.b[-1].c", "deep"),
        ("$.a['x y']", 1),
        ('$["a"]["b"][1]["c"]', "deep"),
        ("$.n", None),
        ("$$.Execution.Name", "e1"),
        ("$$", CONTEXT),
    ],
)
def test_read(path: str, expected: Any) -> None:
    assert read(parse_path(path), DATA, CONTEXT) == expected


@pytest.mark.parametrize("path", ["$.missing", "$.a.b[2]", "$.a.b.c", "$.n.x", "$$.Execution.Input"])
def test_read_missing_raises(path: str) -> None:
    with pytest.raises(PathNotFound):
        read(parse_path(path), DATA, CONTEXT)


@pytest.mark.parametrize("path", ["a.b", "$.a[*]", "$..a", "$.a[?(@.b)]", "$.a[0:2]", "$.", "$.a[", "$a"])
def test_unsupported_syntax_is_rejected(path: str) -> None:
    with pytest.raises(PathSyntaxError):
        parse_path(path)


def test_write_creates_objects_and_leaves_input_untouched() -> None:
    data = {"a": {"keep": 1}}
    out = write(parse_path("$.a.b.c"), data, {"v": 1})
    assert out == {"a": {"keep": 1, "b": {"c": {"v": 1}}}}
    assert data == {"a": {"keep": 1}}
    assert write(parse_path("$"), data, 5) == 5


@pytest.mark.parametrize(("data", "path"), [({"a": "str"}, "$.a.b"), ("text", "$.a"), ({"l": []}, "$.l[0]")])
def test_write_into_non_object_fails(data: Any, path: str) -> None:
    with pytest.raises(PathNotFound):
        write(parse_path(path), data, 1)


# -- AWS documentation examples, run through a Task ------------------------------------------------

HELLO_INPUT = {
    "comment": "This is a test of the input and output of a Task state.",
    "details": "Default example",
    "who": "AWS Step Functions",
}


def hello(target: str, payload: Any) -> str:
    return f"Hello, {payload['who']}!"


@pytest.mark.parametrize(
    ("result_path", "expected"),
    [
        ("$", "Hello, AWS Step Functions!"),
        ("$.taskresult", {**HELLO_INPUT, "taskresult": "Hello, AWS Step Functions!"}),
        (None, HELLO_INPUT),
        ("$.who", {**HELLO_INPUT, "who": "Hello, AWS Step Functions!"}),
    ],
)
def test_result_path_examples(result_path: str | None, expected: Any) -> None:
    result = run_one(task(ResultPath=result_path), HELLO_INPUT, Recorder(hello))
    assert result.status == "SUCCEEDED"
    assert result.output == expected


def test_input_result_output_path_example() -> None:
    docs_input = {
        "comment": "An input comment.",
        "data": {"val1": 23, "val2": 17},
        "extra": "foo",
        "lambda": {"who": "AWS Step Functions"},
    }
    recorder = Recorder(hello)
    state = task(InputPath="$.lambda", ResultPath="$.data.lambdaresult", OutputPath="$.data")
    result = run_one(state, docs_input, recorder)
    assert recorder.calls == [(FN, {"who": "AWS Step Functions"})]
    assert result.output == {"val1": 23, "val2": 17, "lambdaresult": "Hello, AWS Step Functions!"}


def test_input_path_example() -> None:
    docs_input = {
        "comment": "Example for InputPath.",
        "dataset1": {"val1": 1, "val2": 2, "val3": 3},
        "dataset2": {"val1": "a", "val2": "b", "val3": "c"},
    }
    result = run_one({"Type": "Pass", "InputPath": "$.dataset2", "End": True}, docs_input)
    assert result.output == {"val1": "a", "val2": "b", "val3": "c"}


def test_parameters_example() -> None:
    docs_input = {
        "comment": "Example for Parameters.",
        "product": {
            "details": {"color": "blue", "size": "small", "material": "cotton"},
            "availability": "in stock",
            "sku": "2317",
            "cost": "$23",
        },
    }
    parameters = {
        "comment": "Selecting what I care about.",
        "MyDetails": {
            "size.$": "$.product.details.size",
            "exists.$": "$.product.availability",
            "StaticValue": "foo",
        },
    }
    recorder = Recorder()
    result = run_one(task(Parameters=parameters), docs_input, recorder)
    expected = {
        "comment": "Selecting what I care about.",
        "MyDetails": {"size": "small", "exists": "in stock", "StaticValue": "foo"},
    }
    assert recorder.calls == [(FN, expected)]
    assert result.output == expected


def test_result_selector_example() -> None:
    task_result = {
        "resourceType": "elasticmapreduce",
        "resource": "createCluster.sync",
        "output": {"SdkHttpMetadata": {"HttpStatusCode": 200}, "ClusterId": "AKIAIOSFODNN7EXAMPLE"},
    }
    state = task(
        ResultSelector={"ClusterId.$": "$.output.ClusterId", "ResourceType.$": "$.resourceType"},
        ResultPath="$.EMROutput",
    )
    result = run_one(state, {"in": 1}, Recorder(lambda t, p: task_result))
    assert result.output == {
        "in": 1,
        "EMROutput": {"ClusterId": "AKIAIOSFODNN7EXAMPLE", "ResourceType": "elasticmapreduce"},
    }


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [("InputPath", None, {}), ("OutputPath", None, {})],
)
def test_null_input_and_output_path_give_empty_object(field: str, value: None, expected: Any) -> None:
    recorder = Recorder()
    result = run_one(task(**{field: value}), {"a": 1}, recorder)
    assert result.output == expected
    assert recorder.calls[0][1] == ({} if field == "InputPath" else {"a": 1})


def test_context_object_in_parameters() -> None:
    params = {
        "input.$": "$$.Execution.Input",
        "name.$": "$$.Execution.Name",
        "state.$": "$$.State.Name",
        "entered.$": "$$.State.EnteredTime",
        "retries.$": "$$.State.RetryCount",
    }
    result = run_one({"Type": "Pass", "Parameters": params, "End": True}, {"k": "v"})
    assert result.output == {
        "input": {"k": "v"},
        "name": "test",
        "state": "Only",
        "entered": "2023-11-14T22:13:20.000Z",
        "retries": 0,
    }


@pytest.mark.parametrize(
    ("state", "error"),
    [
        ({"Type": "Pass", "InputPath": "$.nope", "End": True}, "States.Runtime"),
        ({"Type": "Pass", "OutputPath": "$.nope", "End": True}, "States.Runtime"),
        ({"Type": "Pass", "Parameters": {"x.$": "$.nope"}, "End": True}, "States.Runtime"),
        ({"Type": "Pass", "Result": 1, "ResultPath": "$.a.b", "End": True}, "States.ResultPathMatchFailure"),
    ],
)
def test_path_failures(state: dict[str, Any], error: str) -> None:
    result = run_one(state, {"a": "scalar"})
    assert (result.status, result.error) == ("FAILED", error)
    assert result.cause


_names = st.text(alphabet="abcxyz_-0123456789", min_size=1, max_size=6)
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_names, inner, max_size=3),
    max_leaves=8,
)


@given(
    data=st.dictionaries(_names, _json, max_size=4),
    names=st.lists(_names, min_size=1, max_size=4),
    value=_json,
)
def test_write_then_read_returns_the_value(data: dict[str, Any], names: list[str], value: Any) -> None:
    path = parse_path("$." + ".".join(names))
    try:
        out = write(path, data, value)
    except PathNotFound:
        return  # a scalar on the way: ResultPathMatchFailure territory
    assert read(path, out, {}) == value
