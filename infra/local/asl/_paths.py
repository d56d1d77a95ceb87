"""The JSONPath subset of ASL reference paths: `$`, `$.a.b`, `$.a[0]`, `$['a b']`, and `$$` for the context.

Wildcards, filters, slices and recursive descent are rejected at parse time, so a definition that
needs them fails validation instead of behaving differently from AWS.
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from ._errors import PathNotFound, PathSyntaxError

_INDEX = re.compile(r"-?\d+")
_NAME_STOP = frozenset(".[]'\"*?()@, \t\r\n")


@dataclass(frozen=True, slots=True)
class Path:
    """A parsed reference path; `context` is True for `$$` paths into the context object."""

    text: str
    context: bool
    steps: tuple[str | int, ...]


@lru_cache(maxsize=2048)
def parse_path(text: str) -> Path:
    """Parse a reference path, raising PathSyntaxError for anything outside the subset."""
    if text.startswith("$$"):
        context, i = True, 2
    elif text.startswith("$"):
        context, i = False, 1
    else:
        raise PathSyntaxError(f"path {text!r} must start with '$' or '$$'")
    steps: list[str | int] = []
    n = len(text)
    while i < n:
        char = text[i]
        if char == ".":
            j = i + 1
            while j < n and text[j] not in _NAME_STOP:
                j += 1
            name = text[i + 1 : j]
            if not name:
                raise PathSyntaxError(f"path {text!r}: empty or unsupported field name at offset {i}")
            steps.append(name)
            i = j
        elif char == "[":
            if i + 1 < n and text[i + 1] in "'\"":
                quote = text[i + 1]
                end = text.find(quote, i + 2)
                if end < 0 or end + 1 >= n or text[end + 1] != "]":
                    raise PathSyntaxError(f"path {text!r}: unterminated bracket at offset {i}")
                steps.append(text[i + 2 : end])
                i = end + 2
            else:
                end = text.find("]", i)
                inner = text[i + 1 : end] if end > 0 else ""
                if not _INDEX.fullmatch(inner):
                    raise PathSyntaxError(f"path {text!r}: only integer indexes are supported, got [{inner}]")
                steps.append(int(inner))
                i = end + 1
        else:
            raise PathSyntaxError(f"path {text!r}: unexpected {char!r} at offset {i}")
    return Path(text, context, tuple(steps))


def read(path: Path, data: Any, context: Any) -> Any:
    """The value `path` selects; raises PathNotFound when a step does not exist."""
    current = context if path.context else data
    for step in path.steps:
        if isinstance(step, int):
            if not isinstance(current, list) or not -len(current) <= step < len(current):
                raise PathNotFound(path.text)
            current = current[step]
        else:
            if not isinstance(current, dict) or step not in current:
                raise PathNotFound(path.text)
            current = current[step]
    return current


def write(path: Path, data: Any, value: Any) -> Any:
    """A copy of `data` with `value` placed at `path` (ResultPath), creating missing objects on the way.

    Raises PathNotFound when an existing value on the way is not an object (or an index is out of range).
    """
    if path.context:
        raise PathSyntaxError(f"ResultPath {path.text!r} cannot write into the context object")
    value = copy.deepcopy(value)
    if not path.steps:
        return value
    root = copy.deepcopy(data)
    current = root
    for position, step in enumerate(path.steps):
        last = position == len(path.steps) - 1
        if isinstance(step, int):
            if not isinstance(current, list) or not -len(current) <= step < len(current):
                raise PathNotFound(path.text)
        elif not isinstance(current, dict):
            raise PathNotFound(path.text)
        elif step not in current and not last:
            current[step] = {}
        if last:
            current[step] = value
        else:
            current = current[step]
    return root
