"""infra.local.template: reference discovery, pruning and local resolution, table-driven."""

from __future__ import annotations

from typing import Any

import pytest

from infra.local.template import (
    TemplateError,
    prune_resources,
    referenced_ids,
    resolve_intrinsic,
    substitute_definition,
)


@pytest.mark.parametrize(
    ("fragment", "expected"),
    [
        ({"Ref": "Queue"}, {"Queue"}),
        ({"Ref": "AWS::Region"}, set()),
        ({"Fn::GetAtt": ["Table", "Arn"]}, {"Table"}),
        ({"Fn::GetAtt": "Table.StreamArn"}, {"Table"}),
        ({"Fn::Sub": "${Bucket.Arn}/crawls/* in ${AWS::Region}"}, {"Bucket"}),
        ({"Fn::Sub": ["${Api}/${Stage}", {"Stage": {"Ref": "StageRes"}}]}, {"Api", "StageRes"}),
        ({"Fn::Sub": "${!Literal} costs $5"}, set()),
        ([{"Ref": "A"}, {"Nested": {"Fn::GetAtt": ["B", "Arn"]}}], {"A", "B"}),
        ("plain", set()),
    ],
)
def test_referenced_ids(fragment: Any, expected: set[str]) -> None:
    assert referenced_ids(fragment) == expected


def _template() -> dict[str, Any]:
    return {
        "Resources": {
            "Api": {
                "Type": "AWS::ApiGatewayV2::Api",
                "Properties": {"Target": {"Fn::GetAtt": ["Fn", "Arn"]}},
            },
            "Stage": {"Type": "AWS::ApiGatewayV2::Stage", "Properties": {"ApiId": {"Ref": "Api"}}},
            "Permission": {
                "Type": "AWS::Lambda::Permission",
                "Properties": {"SourceArn": {"Fn::Sub": "arn:execute-api:${Api}/*"}},
            },
            "Waits": {"Type": "AWS::SQS::Queue", "DependsOn": "Permission", "Properties": {}},
            "Fn": {"Type": "AWS::Lambda::Function", "Properties": {"Role": {"Ref": "Role"}}},
            "Role": {"Type": "AWS::IAM::Role", "Properties": {}},
        },
        "Outputs": {
            "ApiUrl": {"Value": {"Fn::Sub": "https://${Api}.example"}},
            "FnArn": {"Value": {"Fn::GetAtt": ["Fn", "Arn"]}},
        },
    }


def test_prune_removes_types_and_everything_that_refers_to_them() -> None:
    original = _template()
    pruned, removed = prune_resources(original, {"AWS::ApiGatewayV2::Api"})
    assert removed == ("Api", "Permission", "Stage", "Waits")
    assert set(pruned["Resources"]) == {"Fn", "Role"}
    assert set(pruned["Outputs"]) == {"FnArn"}
    assert set(original["Resources"]) == {"Api", "Stage", "Permission", "Waits", "Fn", "Role"}, (
        "input untouched"
    )


def test_prune_nothing() -> None:
    pruned, removed = prune_resources(_template(), set())
    assert removed == () and pruned == _template()


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("arn:literal", "arn:literal"),
        ({"Ref": "Queue"}, "https://queue"),
        ({"Fn::GetAtt": ["Fn", "Arn"]}, "arn:aws:lambda:fn"),
        ({"Fn::GetAtt": "Fn.Arn"}, "arn:aws:lambda:fn"),
    ],
)
def test_resolve_intrinsic(value: Any, expected: str) -> None:
    assert resolve_intrinsic(value, {"Queue": "https://queue"}, {"Fn": "arn:aws:lambda:fn"}) == expected


@pytest.mark.parametrize(
    "value", [{"Ref": "Missing"}, {"Fn::GetAtt": ["Fn", "Name"]}, {"Fn::Sub": "${Fn.Arn}"}, 42]
)
def test_resolve_intrinsic_refuses_what_it_cannot_know(value: Any) -> None:
    with pytest.raises(TemplateError):
        resolve_intrinsic(value, {}, {"Fn": "arn"})


def test_substitute_definition_replaces_placeholders_only() -> None:
    definition = {"States": {"A": {"Parameters": {"FunctionName": "${SeedArn}", "Payload.$": "$"}}}}
    result = substitute_definition(definition, {"SeedArn": 'arn:"q"'})
    assert result == {"States": {"A": {"Parameters": {"FunctionName": 'arn:"q"', "Payload.$": "$"}}}}
    with pytest.raises(TemplateError, match="SeedArn"):
        substitute_definition(definition, {})
