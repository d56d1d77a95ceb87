"""template.yaml: lint (SAM and translated), the contract's resources, least-privilege IAM."""

from __future__ import annotations

import json
import tomllib
from collections.abc import Iterator, Mapping
from typing import Any

import pytest
from cfnlint.api import ManualArgs, lint, lint_file
from moto.cloudformation.parsing import get_model_map

from infra.local.template import MOTO_UNSUPPORTED_TYPES, referenced_ids
from tests.infra.conftest import REGION, ROOT, TEMPLATE

LINT = ManualArgs(regions=[REGION])

# CONTRACTS.md, "AWS resources": the handler string of every function.
HANDLERS = {
    "FetchWorkerFunction": "functions.fetch_worker.handler",
    "SeedFunction": "functions.seed.handler",
    "ProgressFunction": "functions.progress.handler",
    "ReportFunction": "functions.report.handler",
    "ApiFunction": "functions.api.handler",
    "ScheduledAuditFunction": "functions.scheduled_audit.handler",
    "DeadLetterFunction": "functions.dead_letter.handler",
}
COMMON_ENV = {
    "CRAWLS_TABLE",
    "URLS_TABLE",
    "HOSTS_TABLE",
    "FRONTIER_QUEUE_URL",
    "DEAD_LETTER_QUEUE_URL",
    "RESULTS_BUCKET",
    "POWERTOOLS_SERVICE_NAME",
    "USER_AGENT",
}
STARTS_CRAWLS = {"ApiFunction", "ScheduledAuditFunction"}
# The least-privilege spec: what each role may name (its own log group included).
ALLOWED_RESOURCES = {
    "DeadLetterFunction": {
        "DeadLetterLogGroup",
        "FrontierDeadLetterQueue",
        "FrontierQueue",  # redrive
        "UrlsTable",
        "CrawlsTable",
        "ResultsBucket",
    },
    "FetchWorkerFunction": {
        "FetchWorkerLogGroup",
        "FrontierQueue",
        "UrlsTable",
        "HostsTable",
        "CrawlsTable",
        "ResultsBucket",
        "SecretsKey",  # kms:Decrypt: the crawl's secrets, for its fetcher
    },
    "SeedFunction": {
        "SeedLogGroup",
        "FrontierQueue",
        "UrlsTable",
        "HostsTable",
        "CrawlsTable",
        "ResultsBucket",
        "SecretsKey",  # kms:Decrypt: sitemaps are fetched with the crawl's secrets too
    },
    "ProgressFunction": {
        "ProgressLogGroup",
        "FrontierQueue",
        "FrontierDeadLetterQueue",
        "UrlsTable",
        "HostsTable",  # suspended hosts: their pending URLs are reported, not waited for
        "CrawlsTable",
        "ResultsBucket",  # an orphaned batch journal's rows, published by the progress check
    },
    "ReportFunction": {
        "ReportLogGroup",
        "FrontierQueue",
        "FrontierDeadLetterQueue",
        "UrlsTable",
        "HostsTable",
        "CrawlsTable",
        "ResultsBucket",
    },
    "ApiFunction": {"ApiLogGroup", "CrawlsTable", "CrawlStateMachine", "ResultsBucket", "SecretsKey"},
    "ScheduledAuditFunction": {
        "ScheduledAuditLogGroup",
        "CrawlsTable",
        "CrawlStateMachine",
        "ScheduledAuditFailureQueue",  # its async invoke's OnFailure destination
    },
}
# Actions AWS does not scope to resources: the only ones allowed on Resource "*".
STAR_RESOURCE_ACTIONS = {
    "xray:PutTraceSegments",
    "xray:PutTelemetryRecords",
    "xray:GetSamplingRules",
    "xray:GetSamplingTargets",
    "logs:CreateLogDelivery",
    "logs:GetLogDelivery",
    "logs:UpdateLogDelivery",
    "logs:DeleteLogDelivery",
    "logs:ListLogDeliveries",
    "logs:PutResourcePolicy",
    "logs:DescribeResourcePolicies",
    "logs:DescribeLogGroups",
}
CONDITIONED_STAR_ACTIONS = {"cloudwatch:PutMetricData": "cloudwatch:namespace"}


def _errors(matches: list[Any]) -> list[str]:
    return [
        f"{m.rule.id} {m.message} at {'/'.join(map(str, m.path))}"
        for m in matches
        if m.rule.id.startswith("E")
    ]


def _resources(template: Mapping[str, Any], type_: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in template["Resources"].items() if v["Type"] == type_}


def _listify(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def test_sam_template_passes_cfn_lint() -> None:
    assert _errors(lint_file(TEMPLATE, config=LINT)) == []


def test_translated_template_passes_cfn_lint(translated: dict[str, Any]) -> None:
    assert _errors(lint(json.dumps(translated), config=LINT)) == []


def test_translation_yields_plain_cloudformation(translated: dict[str, Any]) -> None:
    types = {r["Type"] for r in translated["Resources"].values()}
    assert not any(t.startswith("AWS::Serverless::") for t in types)
    assert {"AWS::Lambda::EventSourceMapping", "AWS::Events::Rule", "AWS::ApiGatewayV2::Api"} <= types
    machine = translated["Resources"]["CrawlStateMachine"]["Properties"]
    text, substitutions = machine["DefinitionString"]["Fn::Sub"]
    assert set(substitutions) == {"SeedFunctionArn", "ProgressFunctionArn", "ReportFunctionArn"}
    assert json.loads(text)["StartAt"]


def test_functions_have_contract_handlers_and_runtime(sam_template: dict[str, Any]) -> None:
    functions = _resources(sam_template, "AWS::Serverless::Function")
    assert {k: v["Properties"]["Handler"] for k, v in functions.items()} == HANDLERS
    function_globals = sam_template["Globals"]["Function"]
    assert function_globals["Runtime"] == "python3.12"
    assert function_globals["Architectures"] == ["arm64"]
    assert function_globals["Tracing"] == "Active"
    assert function_globals["CodeUri"] == "."


def test_environment_is_the_contract_and_avoids_the_cycle(translated: dict[str, Any]) -> None:
    for logical_id in HANDLERS:
        variables = translated["Resources"][logical_id]["Properties"]["Environment"]["Variables"]
        assert set(variables) >= COMMON_ENV, logical_id
        assert variables["POWERTOOLS_SERVICE_NAME"] == "seolens"
        assert ("STATE_MACHINE_ARN" in variables) == (logical_id in STARTS_CRAWLS), logical_id
        if logical_id in STARTS_CRAWLS:
            assert variables["STATE_MACHINE_ARN"] == {"Ref": "CrawlStateMachine"}


def test_frontier_queue_redrive_and_visibility(sam_template: dict[str, Any]) -> None:
    queue = sam_template["Resources"]["FrontierQueue"]["Properties"]
    worker = sam_template["Resources"]["FetchWorkerFunction"]["Properties"]
    assert queue["VisibilityTimeout"] >= 6 * worker["Timeout"]
    assert queue["RedrivePolicy"] == {
        "deadLetterTargetArn": {"Fn::GetAtt": ["FrontierDeadLetterQueue", "Arn"]},
        "maxReceiveCount": 5,
    }
    dead_letters = sam_template["Resources"]["FrontierDeadLetterQueue"]["Properties"]
    # Dead-lettered messages keep their first enqueue time: the DLQ must keep them longer than the frontier.
    assert 10 * 24 * 3600 <= queue["MessageRetentionPeriod"] < dead_letters["MessageRetentionPeriod"]


def test_worker_sqs_event_source(sam_template: dict[str, Any]) -> None:
    (event,) = sam_template["Resources"]["FetchWorkerFunction"]["Properties"]["Events"].values()
    assert event["Type"] == "SQS"
    props = event["Properties"]
    assert props["Queue"] == {"Fn::GetAtt": ["FrontierQueue", "Arn"]}
    assert props["BatchSize"] == {"Ref": "BatchSize"}
    assert sam_template["Parameters"]["BatchSize"]["Default"] == 100
    assert props["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    assert props["ScalingConfig"] == {"MaximumConcurrency": {"Ref": "WorkerConcurrency"}}
    # Lambda takes a BatchSize over 10 on a standard queue only with a batching window of at least 1 s.
    assert props["MaximumBatchingWindowInSeconds"] >= 1


@pytest.mark.parametrize(
    ("table", "keys", "indexes", "ttl"),
    [
        (
            "CrawlsTable",
            [("crawl_id", "HASH")],
            {
                "by_site": [("site", "HASH"), ("created_at", "RANGE")],
                "by_owner": [("owner", "HASH"), ("created_at", "RANGE")],
            },
            None,
        ),
        (
            "UrlsTable",
            [("crawl_id", "HASH"), ("url_key", "RANGE")],
            {},
            "expires_at",
        ),
        ("HostsTable", [("host", "HASH"), ("kind", "RANGE")], {}, "expires_at"),
    ],
)
def test_tables_match_the_contract(
    sam_template: dict[str, Any],
    table: str,
    keys: list[tuple[str, str]],
    indexes: dict[str, list[tuple[str, str]]],
    ttl: str | None,
) -> None:
    props = sam_template["Resources"][table]["Properties"]
    assert props["BillingMode"] == "PAY_PER_REQUEST"
    assert props["SSESpecification"] == {"SSEEnabled": True}
    assert [(k["AttributeName"], k["KeyType"]) for k in props["KeySchema"]] == keys
    found = {
        g["IndexName"]: [(k["AttributeName"], k["KeyType"]) for k in g["KeySchema"]]
        for g in props.get("GlobalSecondaryIndexes", [])
    }
    assert found == indexes
    assert {a["AttributeName"]: a["AttributeType"] for a in props["AttributeDefinitions"]} == {
        name: "S" for name, _ in keys + [k for ks in indexes.values() for k in ks]
    }
    spec = props.get("TimeToLiveSpecification")
    assert (spec["AttributeName"] if spec else None) == ttl
    if table == "CrawlsTable":
        assert props["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}


def test_results_bucket_is_private_encrypted_and_expires(sam_template: dict[str, Any]) -> None:
    props = sam_template["Resources"]["ResultsBucket"]["Properties"]
    assert all(props["PublicAccessBlockConfiguration"].values())
    assert props["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    rules = {r["Id"]: r for r in props["LifecycleConfiguration"]["Rules"]}
    assert rules["ExpireCrawlResults"]["ExpirationInDays"] == {"Ref": "ResultsRetentionDays"}


def test_http_api_routes_and_iam_auth(sam_template: dict[str, Any]) -> None:
    api = sam_template["Resources"]["CrawlApi"]
    assert api["Type"] == "AWS::Serverless::HttpApi"
    assert api["Properties"]["Auth"]["DefaultAuthorizer"] == "AWS_IAM"
    events = sam_template["Resources"]["ApiFunction"]["Properties"]["Events"].values()
    routes = {(e["Properties"]["Method"], e["Properties"]["Path"]) for e in events if e["Type"] == "HttpApi"}
    assert routes == {
        ("POST", "/crawls"),
        ("GET", "/crawls"),
        ("GET", "/crawls/{id}"),
        ("POST", "/crawls/{id}/pause"),
        ("POST", "/crawls/{id}/resume"),
        ("POST", "/crawls/{id}/cancel"),
        ("GET", "/crawls/{id}/report"),
        ("GET", "/frontier"),
        ("POST", "/frontier/pause"),
        ("POST", "/frontier/resume"),
    }


def test_schedule_and_outputs(sam_template: dict[str, Any]) -> None:
    events = sam_template["Resources"]["ScheduledAuditFunction"]["Properties"]["Events"].values()
    assert [e["Properties"]["Schedule"] for e in events if e["Type"] == "Schedule"] == [
        {"Ref": "ScheduleExpression"}
    ]
    assert sam_template["Parameters"]["ScheduleExpression"]["Default"] == "rate(7 days)"
    assert sam_template["Parameters"]["UserAgent"]["Default"] == "SEOLens"
    assert {"ApiUrl", "ResultsBucketName", "FrontierQueueUrl", "StateMachineArn"} <= set(
        sam_template["Outputs"]
    )


def test_moto_unsupported_types_are_still_unsupported(translated: dict[str, Any]) -> None:
    """Fails when a moto upgrade learns a type we prune (or stops supporting one we keep)."""
    types = {r["Type"] for r in translated["Resources"].values()}
    unsupported = {t for t in types if t not in get_model_map()}
    assert unsupported == set(MOTO_UNSUPPORTED_TYPES)


# ---------------------------------------------------------------- IAM scan


def _statements(role: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
    for policy in role["Properties"].get("Policies", []):
        yield from _listify(policy["PolicyDocument"]["Statement"])


def iam_violations(template: Mapping[str, Any]) -> list[str]:
    """Every least-privilege rule the roles break, as readable lines (empty means clean)."""
    found: list[str] = []
    for name, role in _resources(template, "AWS::IAM::Role").items():
        if role["Properties"].get("ManagedPolicyArns"):
            found.append(f"{name}: managed policies {role['Properties']['ManagedPolicyArns']}")
        for statement in _statements(role):
            actions = set(_listify(statement.get("Action", [])))
            if statement.get("Effect") != "Allow" or "NotAction" in statement or "NotResource" in statement:
                found.append(f"{name}: only plain Allow statements expected: {statement}")
            for action in actions:
                if "*" in action:
                    found.append(f"{name}: wildcard action {action}")
            for resource in _listify(statement.get("Resource", [])):
                if resource == "*":
                    for action in actions - STAR_RESOURCE_ACTIONS:
                        key = CONDITIONED_STAR_ACTIONS.get(action)
                        if key is None or key not in json.dumps(statement.get("Condition", {})):
                            found.append(f"{name}: {action} on Resource '*'")
                elif isinstance(resource, str):
                    found.append(f"{name}: hard-coded resource {resource}")
    return found


def test_roles_are_least_privilege(translated: dict[str, Any]) -> None:
    assert iam_violations(translated) == []


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        ({"Effect": "Allow", "Action": "s3:*", "Resource": {"Fn::GetAtt": ["B", "Arn"]}}, "wildcard action"),
        ({"Effect": "Allow", "Action": "*", "Resource": {"Fn::GetAtt": ["B", "Arn"]}}, "wildcard action"),
        ({"Effect": "Allow", "Action": "sqs:SendMessage", "Resource": "*"}, "on Resource '*'"),
        ({"Effect": "Allow", "Action": "cloudwatch:PutMetricData", "Resource": "*"}, "on Resource '*'"),
        ({"Effect": "Allow", "Action": "s3:GetObject", "Resource": "arn:aws:s3:::other/*"}, "hard-coded"),
        ({"Effect": "Allow", "NotAction": "s3:GetObject", "Resource": {"Ref": "B"}}, "plain Allow"),
    ],
)
def test_iam_scan_catches_violations(statement: dict[str, Any], expected: str) -> None:
    role = {
        "Type": "AWS::IAM::Role",
        "Properties": {"Policies": [{"PolicyName": "p", "PolicyDocument": {"Statement": [statement]}}]},
    }
    (violation,) = iam_violations({"Resources": {"R": role}})
    assert expected in violation


def test_iam_scan_allows_metrics_with_namespace_condition() -> None:
    statement = {
        "Effect": "Allow",
        "Action": "cloudwatch:PutMetricData",
        "Resource": "*",
        "Condition": {"StringEquals": {"cloudwatch:namespace": "SEOLens"}},
    }
    role = {
        "Type": "AWS::IAM::Role",
        "Properties": {"Policies": [{"PolicyName": "p", "PolicyDocument": {"Statement": [statement]}}]},
    }
    assert iam_violations({"Resources": {"R": role}}) == []


def test_each_function_has_its_own_role_naming_only_its_resources(translated: dict[str, Any]) -> None:
    roles: dict[str, str] = {}
    for logical_id in HANDLERS:
        role_ref = translated["Resources"][logical_id]["Properties"]["Role"]
        roles[logical_id] = role_ref["Fn::GetAtt"][0]
    assert len(set(roles.values())) == len(roles), "functions must not share roles"
    for logical_id, role_id in roles.items():
        role = translated["Resources"][role_id]
        assert role["Properties"]["AssumeRolePolicyDocument"]["Statement"][0]["Principal"] == {
            "Service": "lambda.amazonaws.com"
        }
        named: set[str] = set()
        for statement in _statements(role):
            named |= referenced_ids(statement.get("Resource", []))
        assert named == ALLOWED_RESOURCES[logical_id], logical_id


def test_state_machine_invokes_exactly_its_three_functions(translated: dict[str, Any]) -> None:
    machine = translated["Resources"]["CrawlStateMachine"]["Properties"]
    role = translated["Resources"][machine["RoleArn"]["Fn::GetAtt"][0]]
    invoke = [s for s in _statements(role) if "lambda:InvokeFunction" in _listify(s["Action"])]
    named = set().union(*(referenced_ids(s["Resource"]) for s in invoke))
    assert named == {"SeedFunction", "ProgressFunction", "ReportFunction"}
    other = [s for s in _statements(role) if s not in invoke]
    assert all(set(_listify(s["Action"])) <= STAR_RESOURCE_ACTIONS for s in other)


def test_only_crawl_starters_may_start_executions(translated: dict[str, Any]) -> None:
    starters = set()
    for logical_id in HANDLERS:
        role = translated["Resources"][
            translated["Resources"][logical_id]["Properties"]["Role"]["Fn::GetAtt"][0]
        ]
        for statement in _statements(role):
            if "states:StartExecution" in _listify(statement["Action"]):
                assert statement["Resource"] == {"Ref": "CrawlStateMachine"}
                starters.add(logical_id)
    assert starters == STARTS_CRAWLS


def test_samconfig_deploys_with_iam_capability() -> None:
    import tomllib

    config = tomllib.loads((TEMPLATE.parent / "samconfig.toml").read_text(encoding="utf-8"))
    deploy = config["default"]["deploy"]["parameters"]
    assert "CAPABILITY_IAM" in deploy["capabilities"]
    assert deploy["resolve_s3"] is True


def test_requirements_txt_is_what_the_package_depends_on() -> None:
    """`sam build` installs requirements.txt beside CodeUri (it does not read pyproject.toml): a dependency
    missing there deploys functions that fail at import."""
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    lines = (ROOT / "requirements.txt").read_text(encoding="utf-8").splitlines()
    assert [ln for ln in lines if ln.strip() and not ln.startswith("#")] == declared


def test_data_is_retained_and_expired_as_documented(sam_template: dict[str, Any]) -> None:
    """The crawl history and the results survive a stack deletion or replacement; dead-letter objects expire
    like crawl results; a scheduled audit whose invocation failed lands in a queue, not only in the logs."""
    resources = sam_template["Resources"]
    for name in ("CrawlsTable", "ResultsBucket"):
        assert resources[name].get("DeletionPolicy") == "Retain", name
        assert resources[name].get("UpdateReplacePolicy") == "Retain", name
    rules = resources["ResultsBucket"]["Properties"]["LifecycleConfiguration"]["Rules"]
    expiring = {r.get("Prefix") for r in rules if r.get("Status") == "Enabled" and "ExpirationInDays" in r}
    assert {"crawls/", "dead-letters/"} <= expiring
    invoke = resources["ScheduledAuditFunction"]["Properties"]["EventInvokeConfig"]
    assert invoke["DestinationConfig"]["OnFailure"] == {
        "Type": "SQS",
        "Destination": {"Fn::GetAtt": ["ScheduledAuditFailureQueue", "Arn"]},
    }
