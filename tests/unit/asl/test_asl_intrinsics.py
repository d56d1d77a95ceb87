"""Intrinsic functions, with the examples of the AWS developer guide ("Intrinsic functions")."""

from __future__ import annotations

import hashlib
import random
import uuid
from typing import Any

import pytest

from infra.local.asl import PathSyntaxError, StatesError
from infra.local.asl._intrinsics import evaluate, parse_intrinsic

DATA = {
    "name": "Arnav",
    "someString": '{"number": 20}',
    "someJson": {"name": "Foo", "year": 2020},
    "random": {"random": "abcdefghijklmnopqrstuvwxyz"},
    "value1": 111,
    "step": -1,
    "inputString": "This.is+a,test=string",
    "splitter": ".+,=",
    "inputArray": [1, 2, 3, 4, 5, 6, 7, 8, 9],
    "dupes": [1, 2, 3, 3, 3, 3, 3, 3, 4],
    "json1": {"a": {"a1": 1, "a2": 2}, "b": 2},
    "json2": {"a": {"a3": 1, "a4": 2}, "c": 3},
    "n": 3,
}


def ev(expression: str, rng: random.Random | None = None) -> Any:
    return evaluate(parse_intrinsic(expression), DATA, {"Execution": {"Name": "x"}}, rng or random.Random(1))


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("States.Format('Hello, my name is {}.', $.name)", "Hello, my name is Arnav."),
        ("States.Format('{} and {}', $.n, true)", "3 and true"),
        ("States.Format('literal \\{\\} and {}', null)", "literal {} and null"),
        ("States.Format('it\\'s {}', $$.Execution.Name)", "it's x"),
        ("States.StringToJson($.someString)", {"number": 20}),
        ("States.StringToJson('{}')", {}),
        ("States.JsonToString($.someJson)", '{"name":"Foo","year":2020}'),
        (
            "States.Array('Foo', 2020, $.random, null)",
            ["Foo", 2020, {"random": "abcdefghijklmnopqrstuvwxyz"}, None],
        ),
        ("States.Array()", []),
        ("States.MathAdd($.value1, $.step)", 110),
        ("States.MathAdd(1.5, 1)", 2.5),
        ("States.ArrayRange(1, 9, 2)", [1, 3, 5, 7, 9]),
        ("States.ArrayLength($.inputArray)", 9),
        ("States.ArrayGetItem($.inputArray, 5)", 6),
        ("States.ArrayContains($.inputArray, 5)", True),
        ("States.ArrayUnique($.dupes)", [1, 2, 3, 4]),
        ("States.StringSplit($.inputString, $.splitter)", ["This", "is", "a", "test", "string"]),
        ("States.StringSplit('1,2,3,4,5', ',')", ["1", "2", "3", "4", "5"]),
        ("States.JsonMerge($.json1, $.json2, false)", {"a": {"a3": 1, "a4": 2}, "b": 2, "c": 3}),
        ("States.Base64Encode('Data to encode')", "RGF0YSB0byBlbmNvZGU="),
        ("States.Base64Decode('RGF0YSB0byBlbmNvZGU=')", "Data to encode"),
        ("States.Hash('Input data', 'SHA-1')", hashlib.sha1(b"Input data").hexdigest()),
        ("States.JsonToString(States.Array(1, States.MathAdd(1, 1)))", "[1,2]"),
        ("  States.Array( 1 ,  'a' )  ", [1, "a"]),
    ],
)
def test_examples(expression: str, expected: Any) -> None:
    assert ev(expression) == expected


def test_uuid_is_v4_and_comes_from_the_injected_random() -> None:
    first = ev("States.UUID()", random.Random(7))
    assert uuid.UUID(first).version == 4
    assert first == ev("States.UUID()", random.Random(7))
    assert first != ev("States.UUID()", random.Random(8))


def test_math_random_is_in_range_and_seeded() -> None:
    values = {ev("States.MathRandom(1, 4)", random.Random(seed)) for seed in range(50)}
    assert values == {1, 2, 3}


@pytest.mark.parametrize(
    "expression",
    [
        "States.Format('{} {}', 1)",
        "States.Format('{}', $.someJson)",
        "States.StringToJson('not json')",
        "States.MathAdd('a', 1)",
        "States.MathAdd(true, 1)",
        "States.ArrayGetItem($.inputArray, 99)",
        "States.JsonMerge($.json1, $.json2, true)",
        "States.Base64Decode('***')",
        "States.Hash('x', 'CRC32')",
        "States.ArrayLength($.name)",
    ],
)
def test_failures_are_intrinsic_failure(expression: str) -> None:
    with pytest.raises(StatesError) as info:
        ev(expression)
    assert info.value.error == "States.IntrinsicFailure"


@pytest.mark.parametrize(
    "expression",
    [
        "States.Nope(1)",
        "States.Format('x'",
        "States.Format('x') trailing",
        "States.Format('unterminated)",
        "Format('x')",
        "States.Array($.a[*])",
        "States.Array(1 2)",
    ],
)
def test_bad_syntax_is_rejected(expression: str) -> None:
    with pytest.raises(PathSyntaxError):
        parse_intrinsic(expression)
