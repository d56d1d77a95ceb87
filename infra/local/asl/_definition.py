"""Loading a definition: JSON text or dict, `${Name}` DefinitionSubstitutions, Task resource forms."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, Literal

from ._errors import DefinitionError

LAMBDA_INVOKE = "arn:aws:states:::lambda:invoke"
_LAMBDA_ARN = re.compile(r"arn:aws[a-z-]*:lambda:[a-z0-9-]*:\d*:function:[A-Za-z0-9_-]+(:[A-Za-z0-9$_-]+)?")
_SUBSTITUTION = re.compile(r"\$\{([A-Za-z0-9_.-]+)\}")

ResourceKind = Literal["lambda_arn", "lambda_invoke"]


def resource_kind(resource: object) -> ResourceKind | None:
    """How a Task resource is run locally, or None when the local executor cannot run it."""
    if resource == LAMBDA_INVOKE:
        return "lambda_invoke"
    if isinstance(resource, str) and _LAMBDA_ARN.fullmatch(resource):
        return "lambda_arn"
    return None


def substitute(text: str, substitutions: Mapping[str, str]) -> str:
    """Replace `${Name}` placeholders as CloudFormation DefinitionSubstitutions do; unknown names stay."""
    return _SUBSTITUTION.sub(lambda m: substitutions.get(m.group(1), m.group(0)), text)


def unresolved_substitutions(text: str) -> list[str]:
    """Names of `${Name}` placeholders left in a string."""
    return _SUBSTITUTION.findall(text)


def load_definition(definition: Mapping[str, Any] | str) -> dict[str, Any]:
    """A definition as a fresh dict (parsed from JSON text when given a string)."""
    if isinstance(definition, str):
        try:
            loaded = json.loads(definition)
        except ValueError as exc:
            raise DefinitionError([f"error: definition is not JSON: {exc}"]) from None
    else:
        loaded = json.loads(json.dumps(definition))
    if not isinstance(loaded, dict):
        raise DefinitionError(["error: definition must be a JSON object"])
    return loaded
