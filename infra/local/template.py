"""Offline SAM handling for the local runtime: parse, translate to CloudFormation, prune, resolve.

Everything here works on template dicts (no AWS calls), so `deploy.py` and the tests share one reading
of `template.yaml`. Only `load_template` and `read_definition` touch the file system.
"""

from __future__ import annotations

import copy
import json
import logging
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from samtranslator.translator.transform import transform
from samtranslator.yaml_helper import yaml_parse

__all__ = [
    "MOTO_UNSUPPORTED_TYPES",
    "TemplateError",
    "function_logical_ids",
    "load_template",
    "prune_resources",
    "read_definition",
    "referenced_ids",
    "resolve_intrinsic",
    "state_machine_sources",
    "substitute_definition",
    "translate",
]

# Types in our translated template that moto's CloudFormation cannot create (it skips them with a
# warning, leaving dangling references). Discovered by deploying; tests/infra compares this set with
# moto's own registry so a moto upgrade that adds support shows up as a failing test.
MOTO_UNSUPPORTED_TYPES: frozenset[str] = frozenset(
    {
        "AWS::ApiGatewayV2::Api",
        "AWS::ApiGatewayV2::Stage",
        "AWS::Lambda::EventInvokeConfig",  # the scheduled audit's OnFailure destination (no schedule runs here)
        "AWS::S3::BucketPolicy",
    }
)

_SUB_VARIABLE = re.compile(r"\$\{([A-Za-z0-9_:]+)(?:\.[A-Za-z0-9_.]+)?\}")
_PSEUDO_PREFIX = "AWS::"


class TemplateError(ValueError):
    """The template uses something the local runtime cannot translate or resolve."""


class _NoManagedPolicies:
    """SAM's managed-policy loader, offline: the template attaches no AWS managed policies by name."""

    def load(self) -> dict[str, str]:
        return {}


def load_template(path: Path) -> dict[str, Any]:
    """Parse a SAM/CloudFormation YAML or JSON template, short-form intrinsics (`!Ref`) included."""
    parsed = yaml_parse(path.read_text(encoding="utf-8"))
    if not isinstance(parsed, dict) or not isinstance(parsed.get("Resources"), dict):
        raise TemplateError(f"{path}: not a CloudFormation template (no Resources mapping)")
    return parsed


def function_logical_ids(template: Mapping[str, Any]) -> tuple[str, ...]:
    """Logical ids of the Lambda functions, SAM or plain CloudFormation."""
    types = {"AWS::Serverless::Function", "AWS::Lambda::Function"}
    return tuple(sorted(k for k, v in template["Resources"].items() if v.get("Type") in types))


def state_machine_sources(template: Mapping[str, Any], base_dir: Path) -> dict[str, Path]:
    """Definition file of every SAM state machine with a local `DefinitionUri`, by logical id."""
    found: dict[str, Path] = {}
    for logical_id, resource in template["Resources"].items():
        if resource.get("Type") != "AWS::Serverless::StateMachine":
            continue
        uri = resource.get("Properties", {}).get("DefinitionUri")
        if isinstance(uri, str) and not uri.startswith("s3://"):
            found[logical_id] = base_dir / uri
    return found


def read_definition(path: Path) -> dict[str, Any]:
    """Load an ASL definition (JSON)."""
    loaded = json.loads(path.read_text(encoding="utf-8"))
    if not isinstance(loaded, dict):
        raise TemplateError(f"{path}: an ASL definition must be a JSON object")
    return loaded


def translate(
    template: Mapping[str, Any],
    *,
    code_uri: str,
    definitions: Mapping[str, Mapping[str, Any]],
    region: str,
) -> dict[str, Any]:
    """SAM -> plain CloudFormation, offline.

    Local `CodeUri`s become `code_uri` (an s3:// object the caller uploaded). Each state machine in
    `definitions` gets its definition inline as `Fn::Sub` over its `DefinitionSubstitutions`, because
    moto ignores `DefinitionSubstitutions`; real CloudFormation resolves both forms the same way.
    """
    sam = copy.deepcopy(dict(template))
    function_globals = sam.get("Globals", {}).get("Function", {})
    if isinstance(function_globals.get("CodeUri"), str):
        function_globals["CodeUri"] = code_uri
    for resource in sam["Resources"].values():
        props = resource.get("Properties", {})
        if resource.get("Type") == "AWS::Serverless::Function" and isinstance(props.get("CodeUri"), str):
            props["CodeUri"] = code_uri
    for logical_id, definition in definitions.items():
        props = sam["Resources"][logical_id]["Properties"]
        props.pop("DefinitionUri", None)
        props["Definition"] = copy.deepcopy(dict(definition))
    # samtranslator records usage metrics nobody publishes offline and warns about them when collected.
    logging.getLogger("samtranslator.metrics.metrics").setLevel(logging.ERROR)
    translated: dict[str, Any] = transform(sam, {"AWS::Region": region}, _NoManagedPolicies())
    for logical_id, definition in definitions.items():
        props = translated["Resources"][logical_id]["Properties"]
        substitutions = props.pop("DefinitionSubstitutions", {})
        props.pop("DefinitionString", None)
        props.pop("Definition", None)
        props["DefinitionString"] = {"Fn::Sub": [json.dumps(definition, indent=2), substitutions]}
    return translated


def referenced_ids(node: Any) -> set[str]:
    """Logical ids (and parameters) a template fragment refers to via Ref, GetAtt, Sub or Condition."""
    found: set[str] = set()
    if isinstance(node, list):
        for item in node:
            found |= referenced_ids(item)
    elif isinstance(node, dict):
        for key, value in node.items():
            if key == "Ref" and isinstance(value, str):
                found.add(value)
            elif key == "Fn::GetAtt":
                target = value[0] if isinstance(value, list) else str(value).split(".", 1)[0]
                found.add(str(target))
            elif key == "Fn::Sub":
                text, variables = (value[0], value[1]) if isinstance(value, list) else (value, {})
                found |= {m.group(1) for m in _SUB_VARIABLE.finditer(str(text))} - set(variables)
                found |= referenced_ids(variables)
            else:
                found |= referenced_ids(value)
    return {name for name in found if not name.startswith(_PSEUDO_PREFIX)}


def prune_resources(
    template: Mapping[str, Any], types: Iterable[str]
) -> tuple[dict[str, Any], tuple[str, ...]]:
    """Remove resources of `types`, then everything that refers to a removed one (resources, outputs).

    Returns the pruned copy and the removed logical ids (sorted), so callers can say what is missing.
    """
    pruned = copy.deepcopy(dict(template))
    resources: dict[str, Any] = pruned["Resources"]
    doomed = {k for k, v in resources.items() if v.get("Type") in set(types)}
    removed: set[str] = set()
    while doomed:
        removed |= doomed
        for logical_id in doomed:
            del resources[logical_id]
        doomed = set()
        for logical_id, resource in resources.items():
            depends = resource.get("DependsOn", [])
            depends = [depends] if isinstance(depends, str) else depends
            if referenced_ids(resource.get("Properties", {})) & removed or set(depends) & removed:
                doomed.add(logical_id)
    outputs: dict[str, Any] = pruned.get("Outputs", {})
    for name in [n for n, o in outputs.items() if referenced_ids(o) & removed]:
        del outputs[name]
    return pruned, tuple(sorted(removed))


def resolve_intrinsic(value: Any, physical_ids: Mapping[str, str], arns: Mapping[str, str]) -> str:
    """Resolve a plain string, `Ref` or `Fn::GetAtt [X, Arn]` against a deployed stack."""
    if isinstance(value, str):
        return value
    if isinstance(value, dict) and len(value) == 1:
        ((key, arg),) = value.items()
        if key == "Ref" and arg in physical_ids:
            return physical_ids[arg]
        if key == "Fn::GetAtt":
            target, attribute = arg if isinstance(arg, list) else str(arg).split(".", 1)
            if attribute == "Arn" and target in arns:
                return arns[target]
    raise TemplateError(f"cannot resolve {value!r} locally (only Ref and GetAtt .Arn are supported)")


def substitute_definition(definition: Mapping[str, Any], values: Mapping[str, str]) -> dict[str, Any]:
    """Apply `DefinitionSubstitutions` (`${Name}` placeholders) to an ASL definition."""
    text = json.dumps(definition)

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in values:
            raise TemplateError(f"definition placeholder ${{{name}}} has no substitution")
        return json.dumps(values[name])[1:-1]

    result: dict[str, Any] = json.loads(re.sub(r"\$\{([A-Za-z0-9_]+)\}", replace, text))
    return result
