"""infra/statemachine/crawl.asl.json: a walk of the graph and the contract with the three functions."""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from cfnlint.api import ManualArgs, lint

SUPPORTED_TYPES = {"Task", "Choice", "Wait", "Pass", "Succeed", "Fail"}
REQUIRED_RETRY_ERRORS = {
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
    "States.Timeout",
}
PROGRESS_STATES = {"RUNNING", "PAUSED", "DRAINED", "BUDGET_REACHED", "CANCELLED"}
TERMINAL = {"Succeed", "Fail"}


def _definition(definitions: Mapping[str, Mapping[str, Any]]) -> Mapping[str, Any]:
    return definitions["CrawlStateMachine"]


def _choice_rules(rule: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    yield rule
    for nested in rule.get("Or", []) + rule.get("And", []) + ([rule["Not"]] if "Not" in rule else []):
        yield from _choice_rules(nested)


def successors(state: Mapping[str, Any]) -> set[str]:
    """Every state a state can hand over to (Next, Choices, Default, Catch)."""
    found = {state["Next"]} if "Next" in state else set()
    found |= {c["Next"] for c in state.get("Choices", [])}
    found |= {state["Default"]} if "Default" in state else set()
    found |= {c["Next"] for c in state.get("Catch", [])}
    return found


def graph_problems(definition: Mapping[str, Any]) -> list[str]:
    """Structural problems of an ASL definition (empty means clean)."""
    states: Mapping[str, Mapping[str, Any]] = definition["States"]
    problems: list[str] = []
    if definition["StartAt"] not in states:
        problems.append(f"StartAt {definition['StartAt']} is not a state")
    for name, state in states.items():
        kind = state.get("Type")
        if kind not in SUPPORTED_TYPES:
            problems.append(f"{name}: unsupported type {kind}")
        for target in successors(state):
            if target not in states:
                problems.append(f"{name}: target {target} does not exist")
        ends = kind in TERMINAL or state.get("End") is True
        if kind not in TERMINAL | {"Choice"} and ends == ("Next" in state):
            problems.append(f"{name}: needs exactly one of Next or End")
        if kind == "Task":
            retried = {e for r in state.get("Retry", []) for e in r["ErrorEquals"]}
            if missing := REQUIRED_RETRY_ERRORS - retried:
                problems.append(f"{name}: Retry misses {sorted(missing)}")
            if not any("States.ALL" in c["ErrorEquals"] for c in state.get("Catch", [])):
                problems.append(f"{name}: no Catch for States.ALL")
            for rule in state.get("Retry", []):
                if rule.get("BackoffRate", 1.0) <= 1.0 or rule.get("MaxAttempts", 3) < 1:
                    problems.append(f"{name}: Retry without backoff: {rule}")
    reachable: set[str] = set()
    pending = [definition["StartAt"]]
    while pending:
        name = pending.pop()
        if name in reachable or name not in states:
            continue
        reachable.add(name)
        pending.extend(successors(states[name]))
    problems += [f"{name}: unreachable from StartAt" for name in states.keys() - reachable]
    # Every state must be able to finish: walk backwards from the terminal states.
    finishing = {n for n, s in states.items() if s.get("Type") in TERMINAL or s.get("End") is True}
    changed = True
    while changed:
        changed = False
        for name, state in states.items():
            if name not in finishing and successors(state) & finishing:
                finishing.add(name)
                changed = True
    problems += [f"{name}: can never reach a terminal state" for name in states.keys() - finishing]
    return problems


def test_definition_graph_is_sound(definitions: dict[str, dict[str, Any]]) -> None:
    assert graph_problems(_definition(definitions)) == []


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (lambda s: s["Seed"].update(Next="Nowhere"), "does not exist"),
        (lambda s: s["Seed"].pop("Catch"), "no Catch"),
        (lambda s: s["Seed"].update(Retry=[]), "Retry misses"),
        (lambda s: s["Done"].update(Type="Map"), "unsupported type"),
        (lambda s: s.update(Orphan={"Type": "Succeed"}), "unreachable"),
        (
            lambda s: s.update(Spin={"Type": "Pass", "Next": "Spin"}) or s["Init"].update(Next="Spin"),
            "never reach",
        ),
        (
            lambda s: (
                s.update(Extra={"Type": "Pass", "Next": "Report"})
                or s["OrphansDone?"].update(Default="Extra")
            ),
            None,
        ),
    ],
)
def test_walk_catches_broken_definitions(
    definitions: dict[str, dict[str, Any]], mutate: Any, expected: str | None
) -> None:
    broken = copy.deepcopy(_definition(definitions))
    mutate(broken["States"])
    problems = graph_problems(broken)
    if expected is None:  # a well-formed edit: the walk must not flag it
        assert problems == []
    else:
        assert any(expected in p for p in problems), problems


def test_tasks_call_substituted_functions_with_contract_payloads(
    definitions: dict[str, dict[str, Any]], sam_template: dict[str, Any]
) -> None:
    substitutions = sam_template["Resources"]["CrawlStateMachine"]["Properties"]["DefinitionSubstitutions"]
    states = _definition(definitions)["States"]
    actions: dict[str, str] = {}
    for name, state in states.items():
        if state["Type"] != "Task":
            continue
        assert state["Resource"] == "arn:aws:states:::lambda:invoke", name
        function = re.fullmatch(r"\$\{(\w+)\}", state["Parameters"]["FunctionName"])
        assert function and function.group(1) in substitutions, name
        payload = state["Parameters"]["Payload"]
        assert payload["crawl_id.$"] == "$.crawl_id", name
        assert state["ResultPath"].startswith("$.") and state["ResultPath"] != "$.crawl_id", name
        if function.group(1) == "ReportFunctionArn":
            actions[name] = payload["action"]
            assert {key.removesuffix(".$") for key in payload} == {"crawl_id", "action", "error"}, name
    assert sorted(actions.values()) == ["fail", "orphans", "report"]
    placeholders = set(re.findall(r"\$\{(\w+)\}", str(_definition(definitions))))
    assert placeholders == set(substitutions)


def test_progress_choice_covers_every_contract_state(definitions: dict[str, dict[str, Any]]) -> None:
    states = _definition(definitions)["States"]
    (choice_name,) = [
        n
        for n, s in states.items()
        if s["Type"] == "Choice"
        and any(r.get("Variable") == "$.progress.state" for c in s["Choices"] for r in _choice_rules(c))
    ]
    routes: dict[str, str] = {}
    for choice in states[choice_name]["Choices"]:
        for rule in _choice_rules(choice):
            if "StringEquals" in rule:
                routes[rule["StringEquals"]] = choice["Next"]
    assert set(routes) == PROGRESS_STATES
    wait = routes["RUNNING"]
    assert routes["PAUSED"] == wait and states[wait]["Type"] == "Wait"
    assert states[wait]["SecondsPath"] == "$.progress.wait_seconds"
    assert routes["DRAINED"] == routes["BUDGET_REACHED"]
    assert states[routes["DRAINED"]]["Parameters"]["Payload"]["action"] == "orphans"
    assert states[routes["CANCELLED"]]["Parameters"]["Payload"]["action"] == "report"
    assert states[states[choice_name]["Default"]]["Type"] != "Wait", "unknown states must not loop"


def test_failures_write_a_partial_report_then_fail(definitions: dict[str, dict[str, Any]]) -> None:
    states = _definition(definitions)["States"]
    catch_targets = {c["Next"] for s in states.values() for c in s.get("Catch", [])}
    assert catch_targets <= {"MarkFailed", "CrawlFailed"}
    mark = states["MarkFailed"]
    assert mark["Parameters"]["Payload"] == {
        "crawl_id.$": "$.crawl_id",
        "action": "fail",
        "error.$": "$.error",
    }
    assert states[mark["Next"]]["Type"] == "Fail"
    assert states[mark["Next"]]["Error"] and states[mark["Next"]]["Cause"]
    assert all(
        c["ResultPath"] == "$.error"
        for n, s in states.items()
        if n != "MarkFailed"
        for c in s.get("Catch", [])
    )


def test_seed_loops_until_done(definitions: dict[str, dict[str, Any]]) -> None:
    states = _definition(definitions)["States"]
    seed = states["Seed"]
    assert seed["Parameters"]["Payload"] == {"crawl_id.$": "$.crawl_id", "cursor.$": "$.seed.cursor"}
    after = states[seed["Next"]]
    assert after["Type"] == "Choice" and after["Default"] == "Seed"
    done, held = after["Choices"]
    assert done == {"Variable": "$.seed.seed_done", "BooleanEquals": True, "Next": "CheckProgress"}
    # A round that held sitemap URLs back (page budget) waits the seconds it asked for, then seeds again.
    assert held == {"Variable": "$.seed.wait_seconds", "NumericGreaterThan": 0, "Next": "WaitForSeed"}
    assert states["WaitForSeed"] == {
        "Type": "Wait",
        "Comment": states["WaitForSeed"]["Comment"],
        "SecondsPath": "$.seed.wait_seconds",
        "Next": "Seed",
    }
    assert seed["ResultSelector"]["wait_seconds.$"] == "$.Payload.wait_seconds"
    init = states[_definition(definitions)["StartAt"]]
    assert init["Parameters"]["seed"] == {"cursor": None, "seed_done": False, "wait_seconds": 0}


def _asl_lint_errors(definition: Mapping[str, Any]) -> list[str]:
    """cfn-lint's ASL schema check (E3601) on the definition with placeholder ARNs filled in."""
    text = re.sub(
        r"\$\{(\w+)\}", r"arn:aws:lambda:us-east-1:123456789012:function:\1", json.dumps(definition)
    )
    template = {
        "Resources": {
            "Machine": {
                "Type": "AWS::StepFunctions::StateMachine",
                "Properties": {
                    "RoleArn": "arn:aws:iam::123456789012:role/machine",
                    "Definition": json.loads(text),
                },
            }
        }
    }
    matches = lint(json.dumps(template), config=ManualArgs(regions=["us-east-1"]))
    return [f"{m.rule.id} {m.message}" for m in matches if m.rule.id.startswith("E")]


def test_definition_passes_the_asl_schema(definitions: dict[str, dict[str, Any]]) -> None:
    assert _asl_lint_errors(_definition(definitions)) == []


def test_asl_schema_check_can_fail(definitions: dict[str, dict[str, Any]]) -> None:
    broken = copy.deepcopy(_definition(definitions))
    broken["States"]["Seed"]["Type"] = "Tsk"
    assert any("Tsk" in error for error in _asl_lint_errors(broken))
