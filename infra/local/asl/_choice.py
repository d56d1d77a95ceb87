"""Choice rule evaluation: And/Or/Not, comparison operators (and their `...Path` forms), type tests.

As in AWS, a comparison between values of the wrong type is simply false, while a `Variable` (or a
`...Path` operand) that does not exist is a States.Runtime error, except for `IsPresent`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from ._errors import RUNTIME, PathNotFound, StatesError
from ._paths import parse_path, read
from ._timestamps import parse_timestamp

_ORDER: dict[str, Callable[[Any, Any], bool]] = {
    "Equals": lambda a, b: bool(a == b),
    "LessThan": lambda a, b: bool(a < b),
    "GreaterThan": lambda a, b: bool(a > b),
    "LessThanEquals": lambda a, b: bool(a <= b),
    "GreaterThanEquals": lambda a, b: bool(a >= b),
}
KINDS = ("String", "Numeric", "Timestamp")
COMPARISONS: frozenset[str] = frozenset(
    {kind + op for kind in KINDS for op in _ORDER} | {"BooleanEquals", "StringMatches"}
)
PATH_COMPARISONS: frozenset[str] = frozenset(name + "Path" for name in COMPARISONS if name != "StringMatches")
TYPE_TESTS: frozenset[str] = frozenset(
    {"IsNull", "IsPresent", "IsNumeric", "IsString", "IsBoolean", "IsTimestamp"}
)
OPERATORS: frozenset[str] = COMPARISONS | PATH_COMPARISONS | TYPE_TESTS
RULE_META: frozenset[str] = frozenset({"Variable", "Next", "Comment"})


def is_number(value: object) -> bool:
    """JSON numbers only: Python's bool is an int, but `true` is not a number in ASL."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def _type_test(operator: str, value: Any) -> bool:
    if operator == "IsNull":
        return value is None
    if operator == "IsNumeric":
        return is_number(value)
    if operator == "IsString":
        return isinstance(value, str)
    if operator == "IsBoolean":
        return isinstance(value, bool)
    return parse_timestamp(value) is not None  # IsTimestamp


@lru_cache(maxsize=512)
def _wildcard(pattern: str) -> re.Pattern[str]:
    """StringMatches: `*` matches any run of characters; `\\*` and `\\\\` are literal."""
    out: list[str] = []
    i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "\\" and i + 1 < len(pattern):
            out.append(re.escape(pattern[i + 1]))
            i += 2
            continue
        out.append(".*" if char == "*" else re.escape(char))
        i += 1
    return re.compile("".join(out), re.DOTALL)


def compare(operator: str, value: Any, expected: Any) -> bool:
    """Apply a comparison operator (without the Path suffix); False when either side has the wrong type."""
    if operator == "StringMatches":
        return (
            isinstance(value, str)
            and isinstance(expected, str)
            and bool(_wildcard(expected).fullmatch(value))
        )
    if operator == "BooleanEquals":
        return isinstance(value, bool) and isinstance(expected, bool) and value == expected
    for kind in KINDS:
        if operator.startswith(kind):
            order = _ORDER[operator[len(kind) :]]
            if kind == "String":
                return isinstance(value, str) and isinstance(expected, str) and order(value, expected)
            if kind == "Numeric":
                return is_number(value) and is_number(expected) and order(value, expected)
            left, right = parse_timestamp(value), parse_timestamp(expected)
            return left is not None and right is not None and order(left, right)
    raise StatesError(RUNTIME, f"unknown choice operator {operator!r}")


def rule_operator(rule: dict[str, Any]) -> str:
    """The single operator key of a leaf rule (validation guarantees there is exactly one)."""
    return next(key for key in rule if key not in RULE_META)


def _invalid(path: str) -> StatesError:
    return StatesError(
        RUNTIME, f"Invalid path {path!r}: The choice state's condition path references an invalid value."
    )


def matches(rule: dict[str, Any], data: Any, context: Any) -> bool:
    """Whether a (possibly compound) choice rule is true for `data`."""
    if "And" in rule:
        return all(matches(sub, data, context) for sub in rule["And"])
    if "Or" in rule:
        return any(matches(sub, data, context) for sub in rule["Or"])
    if "Not" in rule:
        return not matches(rule["Not"], data, context)
    variable = rule["Variable"]
    operator = rule_operator(rule)
    try:
        value = read(parse_path(variable), data, context)
        present = True
    except PathNotFound:
        value, present = None, False
    if operator == "IsPresent":
        return present is bool(rule[operator])
    if not present:
        raise _invalid(variable)
    if operator in TYPE_TESTS:
        return _type_test(operator, value) is bool(rule[operator])
    expected = rule[operator]
    if operator in PATH_COMPARISONS:
        try:
            expected = read(parse_path(expected), data, context)
        except PathNotFound:
            raise _invalid(expected) from None
        operator = operator.removesuffix("Path")
    return compare(operator, value, expected)
