"""ASL intrinsic functions (`States.Format(...)` and friends): a parser and an evaluator.

Supported: Format, StringToJson, JsonToString, Array, ArrayLength, ArrayGetItem, ArrayContains,
ArrayRange, ArrayUnique, StringSplit, JsonMerge (shallow), MathAdd, MathRandom, UUID, Base64Encode,
Base64Decode, Hash. Failures raise StatesError('States.IntrinsicFailure').
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import random
import re
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ._errors import INTRINSIC_FAILURE, PathSyntaxError, StatesError
from ._paths import Path, parse_path, read

_NUMBER = re.compile(r"-?\d+(\.\d+)?([eE][+-]?\d+)?")
_NAME = re.compile(r"States\.[A-Za-z0-9]+")


@dataclass(frozen=True, slots=True)
class Literal:
    """A literal argument; for strings, `pieces` is the text split at unescaped `{}` placeholders."""

    value: Any
    pieces: tuple[str, ...] | None = None


@dataclass(frozen=True, slots=True)
class PathArg:
    """A JSONPath argument, resolved against the state's data or the context object."""

    path: Path


@dataclass(frozen=True, slots=True)
class Call:
    """A call of a States.* function."""

    name: str
    args: tuple[Literal | PathArg | Call, ...]


Node = Literal | PathArg | Call


class _Parser:
    """Recursive descent over one intrinsic expression."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.i = 0

    def fail(self, message: str) -> PathSyntaxError:
        return PathSyntaxError(f"intrinsic {self.text!r}: {message} at offset {self.i}")

    def skip_ws(self) -> None:
        while self.i < len(self.text) and self.text[self.i].isspace():
            self.i += 1

    def call(self) -> Call:
        self.skip_ws()
        match = _NAME.match(self.text, self.i)
        if not match:
            raise self.fail("expected a States.* function name")
        name = match.group(0)
        if name not in FUNCTIONS:
            raise self.fail(f"unsupported intrinsic function {name}")
        self.i = match.end()
        self.skip_ws()
        if self.text[self.i : self.i + 1] != "(":
            raise self.fail("expected '('")
        self.i += 1
        args: list[Node] = []
        self.skip_ws()
        if self.text[self.i : self.i + 1] == ")":
            self.i += 1
            return Call(name, ())
        while True:
            args.append(self.arg())
            self.skip_ws()
            char = self.text[self.i : self.i + 1]
            self.i += 1
            if char == ")":
                return Call(name, tuple(args))
            if char != ",":
                self.i -= 1
                raise self.fail("expected ',' or ')'")

    def arg(self) -> Node:
        self.skip_ws()
        rest = self.text[self.i :]
        if rest.startswith("'"):
            return self.string()
        if rest.startswith("$"):
            return self.path()
        if rest.startswith("States."):
            return self.call()
        for word, value in (("null", None), ("true", True), ("false", False)):
            if rest.startswith(word):
                self.i += len(word)
                return Literal(value)
        match = _NUMBER.match(self.text, self.i)
        if match:
            self.i = match.end()
            number = json.loads(match.group(0))
            return Literal(number)
        raise self.fail("expected an argument")

    def string(self) -> Literal:
        self.i += 1  # opening quote
        pieces: list[str] = []
        current: list[str] = []
        value: list[str] = []
        while self.i < len(self.text):
            char = self.text[self.i]
            if char == "\\" and self.i + 1 < len(self.text):
                nxt = self.text[self.i + 1]
                text = nxt if nxt in "'{}\\" else char + nxt
                current.append(text)
                value.append(text)
                self.i += 2
                continue
            if char == "'":
                self.i += 1
                pieces.append("".join(current))
                return Literal("".join(value), tuple(pieces))
            if char == "{" and self.text[self.i + 1 : self.i + 2] == "}":
                pieces.append("".join(current))
                current = []
                value.append("{}")
                self.i += 2
                continue
            current.append(char)
            value.append(char)
            self.i += 1
        raise self.fail("unterminated string")

    def path(self) -> PathArg:
        start = self.i
        depth = 0
        quote = ""
        while self.i < len(self.text):
            char = self.text[self.i]
            if quote:
                if char == quote:
                    quote = ""
            elif char in "'\"" and depth:
                quote = char
            elif char == "[":
                depth += 1
            elif char == "]":
                depth -= 1
            elif depth == 0 and (char in ",)" or char.isspace()):
                break
            self.i += 1
        return PathArg(parse_path(self.text[start : self.i]))


@lru_cache(maxsize=1024)
def parse_intrinsic(text: str) -> Call:
    """Parse `States.Fn(args...)`, raising PathSyntaxError on bad syntax or an unsupported function."""
    parser = _Parser(text)
    call = parser.call()
    parser.skip_ws()
    if parser.i != len(text):
        raise parser.fail("unexpected trailing text")
    return call


def evaluate(node: Node, data: Any, context: Any, rng: random.Random) -> Any:
    """The value of an intrinsic expression; a missing path raises PathNotFound."""
    if isinstance(node, Literal):
        return node.value
    if isinstance(node, PathArg):
        return read(node.path, data, context)
    args = [evaluate(arg, data, context, rng) for arg in node.args]
    if node.name == "States.Format":
        first = node.args[0] if node.args else None
        template = first.pieces if isinstance(first, Literal) and first.pieces is not None else None
        return _format(template, args)
    return FUNCTIONS[node.name](args, rng)


def _fail(message: str) -> StatesError:
    return StatesError(INTRINSIC_FAILURE, message)


def _arity(name: str, args: list[Any], low: int, high: int | None = None) -> None:
    high = low if high is None else high
    if not low <= len(args) <= high:
        raise _fail(f"{name} takes {low}..{high} arguments, got {len(args)}")


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_int(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and float(value).is_integer()


def _render(value: Any) -> str:
    if isinstance(value, str):
        return value
    if value is None or isinstance(value, bool | int | float):
        return json.dumps(value)
    raise _fail(f"States.Format cannot insert a {type(value).__name__}")


def _format(template: tuple[str, ...] | None, args: list[Any]) -> str:
    if not args:
        raise _fail("States.Format needs a template")
    if template is None:
        if not isinstance(args[0], str):
            raise _fail("States.Format template must be a string")
        template = tuple(args[0].split("{}"))
    values = args[1:]
    if len(template) - 1 != len(values):
        raise _fail(f"States.Format has {len(template) - 1} placeholders but {len(values)} arguments")
    out = [template[0]]
    for value, piece in zip(values, template[1:], strict=True):
        out.append(_render(value))
        out.append(piece)
    return "".join(out)


def _string_to_json(args: list[Any], _: random.Random) -> Any:
    _arity("States.StringToJson", args, 1)
    if not isinstance(args[0], str):
        raise _fail("States.StringToJson needs a string")
    try:
        return json.loads(args[0])
    except ValueError as exc:
        raise _fail(f"States.StringToJson: {exc}") from None


def _json_to_string(args: list[Any], _: random.Random) -> Any:
    _arity("States.JsonToString", args, 1)
    return json.dumps(args[0], separators=(",", ":"), ensure_ascii=False)


def _array(args: list[Any], _: random.Random) -> Any:
    return list(args)


def _list_arg(name: str, value: Any) -> list[Any]:
    if not isinstance(value, list):
        raise _fail(f"{name} needs an array")
    return value


def _array_length(args: list[Any], _: random.Random) -> Any:
    _arity("States.ArrayLength", args, 1)
    return len(_list_arg("States.ArrayLength", args[0]))


def _array_get_item(args: list[Any], _: random.Random) -> Any:
    _arity("States.ArrayGetItem", args, 2)
    items = _list_arg("States.ArrayGetItem", args[0])
    index = args[1]
    if not _is_int(index) or not 0 <= int(index) < len(items):
        raise _fail(f"States.ArrayGetItem index {index!r} out of range")
    return items[int(index)]


def _array_contains(args: list[Any], _: random.Random) -> Any:
    _arity("States.ArrayContains", args, 2)
    return args[1] in _list_arg("States.ArrayContains", args[0])


def _array_range(args: list[Any], _: random.Random) -> Any:
    _arity("States.ArrayRange", args, 3)
    if not all(_is_int(a) for a in args) or int(args[2]) == 0:
        raise _fail("States.ArrayRange needs integers and a non-zero step")
    start, end, step = (int(a) for a in args)
    return list(range(start, end + (1 if step > 0 else -1), step))


def _array_unique(args: list[Any], _: random.Random) -> Any:
    _arity("States.ArrayUnique", args, 1)
    out: list[Any] = []
    for item in _list_arg("States.ArrayUnique", args[0]):
        if item not in out:
            out.append(item)
    return out


def _string_split(args: list[Any], _: random.Random) -> Any:
    _arity("States.StringSplit", args, 2)
    text, delimiters = args
    if not isinstance(text, str) or not isinstance(delimiters, str) or not delimiters:
        raise _fail("States.StringSplit needs two strings")
    pattern = "[" + re.escape(delimiters) + "]"
    return [part for part in re.split(pattern, text) if part]


def _json_merge(args: list[Any], _: random.Random) -> Any:
    _arity("States.JsonMerge", args, 3)
    left, right, deep = args
    if not isinstance(left, dict) or not isinstance(right, dict):
        raise _fail("States.JsonMerge needs two objects")
    if deep is not False:
        raise _fail("States.JsonMerge supports only a shallow merge (third argument false)")
    return {**left, **right}


def _math_add(args: list[Any], _: random.Random) -> Any:
    _arity("States.MathAdd", args, 2)
    if not all(_is_number(a) for a in args):
        raise _fail("States.MathAdd needs two numbers")
    total = args[0] + args[1]
    return int(total) if all(_is_int(a) for a in args) else total


def _math_random(args: list[Any], rng: random.Random) -> Any:
    _arity("States.MathRandom", args, 2, 3)
    if not all(_is_int(a) for a in args[:2]) or int(args[0]) >= int(args[1]):
        raise _fail("States.MathRandom needs integers start < end")
    return rng.randrange(int(args[0]), int(args[1]))


def _uuid(args: list[Any], rng: random.Random) -> Any:
    _arity("States.UUID", args, 0)
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


def _base64_encode(args: list[Any], _: random.Random) -> Any:
    _arity("States.Base64Encode", args, 1)
    if not isinstance(args[0], str):
        raise _fail("States.Base64Encode needs a string")
    return base64.b64encode(args[0].encode()).decode("ascii")


def _base64_decode(args: list[Any], _: random.Random) -> Any:
    _arity("States.Base64Decode", args, 1)
    if not isinstance(args[0], str):
        raise _fail("States.Base64Decode needs a string")
    try:
        return base64.b64decode(args[0], validate=True).decode()
    except (binascii.Error, UnicodeDecodeError) as exc:
        raise _fail(f"States.Base64Decode: {exc}") from None


_HASHES = {"MD5": "md5", "SHA-1": "sha1", "SHA-256": "sha256", "SHA-384": "sha384", "SHA-512": "sha512"}


def _hash(args: list[Any], _: random.Random) -> Any:
    _arity("States.Hash", args, 2)
    data, algorithm = args
    if not isinstance(data, str) or algorithm not in _HASHES:
        raise _fail(f"States.Hash needs a string and one of {sorted(_HASHES)}")
    return hashlib.new(_HASHES[algorithm], data.encode()).hexdigest()


def _format_placeholder(args: list[Any], _: random.Random) -> Any:
    raise AssertionError("States.Format is evaluated by evaluate()")  # pragma: no cover


FUNCTIONS: dict[str, Callable[[list[Any], random.Random], Any]] = {
    "States.Format": _format_placeholder,
    "States.StringToJson": _string_to_json,
    "States.JsonToString": _json_to_string,
    "States.Array": _array,
    "States.ArrayLength": _array_length,
    "States.ArrayGetItem": _array_get_item,
    "States.ArrayContains": _array_contains,
    "States.ArrayRange": _array_range,
    "States.ArrayUnique": _array_unique,
    "States.StringSplit": _string_split,
    "States.JsonMerge": _json_merge,
    "States.MathAdd": _math_add,
    "States.MathRandom": _math_random,
    "States.UUID": _uuid,
    "States.Base64Encode": _base64_encode,
    "States.Base64Decode": _base64_decode,
    "States.Hash": _hash,
}
