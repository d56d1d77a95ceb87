"""JSON for what the crawl stores and reads back (result rows, batch journals, inlink files): orjson, with the
standard library where orjson refuses a value.

Rows, journals and the report's scratch files are written once per page and read again by the report: with the standard library they were
a tenth of the crawler's own CPU (py-spy, 3,000 pages); orjson does the same work several times faster.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Collection, Iterable, Iterator
from functools import cache
from typing import Any

import orjson


def dumps(value: Any, default: Callable[[Any], Any] | None = None) -> bytes:
    """Compact UTF-8 JSON (`default` turns other objects into JSON values). A value orjson refuses (an integer
    beyond 64 bits, a key that is not a string) is written by the standard library, in the same form."""
    try:
        return orjson.dumps(value, default=default)
    except TypeError:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=default).encode("utf-8")


def loads(data: bytes | str) -> Any:
    """One JSON document. Text the standard library wrote with `NaN`/`Infinity` (not JSON; orjson refuses it)
    is still read, so parts written before orjson stay readable."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return json.loads(data)


def dump_lines(rows: Iterable[Any]) -> bytes:
    """JSON lines: one row per line, each line ending with "\\n"."""
    return b"".join(dumps(row) + b"\n" for row in rows)


def load_lines(data: bytes) -> list[Any]:
    """The rows of a JSON-lines body, split on "\\n" only: a row may hold U+2028 or U+0085 (written unescaped),
    which `str.splitlines` would cut the row at."""
    return [loads(line) for line in data.split(b"\n") if line.strip()]


_FIND_AT_MOST = 32
"""Values looked for one at a time (a C substring search each); with more, one scan of every member."""
_STRING = re.compile(rb'((?:[^"\\]|\\.)*)"')  # a JSON string's content, from after its opening quote


def lines_where(data: bytes, key: str, values: Collection[bytes]) -> Iterator[bytes]:
    """The lines of JSON lines `data` whose string member `key` is one of `values` (each as JSON writes it
    between its quotes: `dumps(value)[1:-1]`), in order, found in the bytes: a reader that needs a few rows
    of many decodes only those. Rows hold `key` once, at the top level, and are written without spaces (as
    `dumps` and its fallback both do); inside a JSON string every quote is escaped, so `"key":"` is only ever
    a member name, and `"key":"value"` only ever that member with that value."""
    if not values:
        return
    name = b'"' + key.encode() + b'":"'
    if len(values) <= _FIND_AT_MOST:
        found = sorted(at for value in values for at in _occurrences(data, name + value + b'"'))
    else:
        found = [match.start() for match in _members(data, key, values)]
    for at in found:
        start = data.rfind(b"\n", 0, at) + 1
        end = data.find(b"\n", at)
        yield data[start : len(data) if end < 0 else end]


def _occurrences(data: bytes, needle: bytes) -> Iterator[int]:
    at = data.find(needle)
    while at >= 0:
        yield at
        at = data.find(needle, at + len(needle))


def _members(data: bytes, key: str, values: Collection[bytes]) -> Iterator[re.Match[bytes]]:
    """Every `"key":"` member whose value is one of `values`: a value without an escape is read by a plain
    character class (fast), one with an escape by the full string pattern."""
    for match in _member_pattern(key).finditer(data):
        value = match.group(1)
        if match.group(2) == b"\\":
            whole = _STRING.match(data, match.start(1))
            value = whole.group(1) if whole else b""
        if value in values:
            yield match


@cache
def _member_pattern(key: str) -> re.Pattern[bytes]:
    return re.compile(b'"' + re.escape(key.encode()) + rb'":"([^"\\]*)(["\\])')
