"""Payload templates (Parameters, ResultSelector): `"key.$"` fields take a path or an intrinsic function."""

from __future__ import annotations

import json
import random
from typing import Any

from ._errors import RUNTIME, PathNotFound, PathSyntaxError, StatesError
from ._intrinsics import evaluate as evaluate_intrinsic
from ._intrinsics import parse_intrinsic
from ._paths import parse_path, read


def _excerpt(data: Any) -> str:
    text = json.dumps(data, default=str)
    return text if len(text) <= 200 else text[:200] + "..."


def resolve(expression: Any, data: Any, context: Any, rng: random.Random, *, field: str) -> Any:
    """The value of one dynamic field: a JSONPath (`$...`, `$$...`) or an intrinsic (`States.Fn(...)`)."""
    if not isinstance(expression, str):
        raise StatesError(RUNTIME, f"the value of {field!r} must be a path or intrinsic function")
    try:
        if expression.startswith("$"):
            return read(parse_path(expression), data, context)
        return evaluate_intrinsic(parse_intrinsic(expression), data, context, rng)
    except PathNotFound as exc:
        raise StatesError(
            RUNTIME,
            f"The JSONPath {exc.path!r} specified for the field {field!r} could not be found in the input "
            f"{_excerpt(data)}",
        ) from None
    except PathSyntaxError as exc:
        raise StatesError(RUNTIME, str(exc)) from None


def render(template: Any, data: Any, context: Any, rng: random.Random) -> Any:
    """A fresh value built from `template`, resolving every `"key.$"` field against `data`/`context`."""
    if isinstance(template, dict):
        out: dict[str, Any] = {}
        for key, value in template.items():
            if key.endswith(".$"):
                out[key[:-2]] = resolve(value, data, context, rng, field=key)
            else:
                out[key] = render(value, data, context, rng)
        return out
    if isinstance(template, list):
        return [render(item, data, context, rng) for item in template]
    return template
