"""IamAudit: calls mapped to the IAM actions and resources AWS authorises, checked against a role."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

from infra.local.deploy import DeployedStack
from infra.local.iam_audit import IamAudit
from infra.local.lambda_host import CURRENT_FUNCTION

STACK = cast(
    DeployedStack,
    SimpleNamespace(
        table_names={"UrlsTable": "urls-1", "CrawlsTable": "crawls-1"},
        queue_urls={"Queue": "http://q/1"},
        bucket_names={"Bucket": "bucket-1"},
        state_machine_arns={"Machine": "arn:aws:states:us-east-1:1:stateMachine:m-1"},
        kms_keys={"Key": "key-1"},
    ),
)


def _template(*statements: dict[str, Any]) -> dict[str, Any]:
    return {
        "Resources": {
            "Fn": {"Properties": {"Role": {"Fn::GetAtt": ["FnRole", "Arn"]}}},
            "FnRole": {"Properties": {"Policies": [{"PolicyDocument": {"Statement": list(statements)}}]}},
        }
    }


def _allow(actions: list[str], *resources: Any) -> dict[str, Any]:
    return {"Effect": "Allow", "Action": actions, "Resource": list(resources)}


def _record(audit: IamAudit, service: str, operation: str, params: dict[str, Any]) -> None:
    token = CURRENT_FUNCTION.set("Fn")
    try:
        audit._on_call(service, operation, params)
    finally:
        CURRENT_FUNCTION.reset(token)


def test_a_transaction_needs_each_items_action_on_its_table() -> None:
    audit = IamAudit(STACK)
    _record(
        audit,
        "dynamodb",
        "TransactWriteItems",
        {
            "TransactItems": [
                {"Delete": {"TableName": "urls-1", "Key": {}}},
                {"Update": {"TableName": "crawls-1", "Key": {}}},
            ]
        },
    )
    only_update = _template(_allow(["dynamodb:UpdateItem"], {"Fn::GetAtt": ["CrawlsTable", "Arn"]}))
    assert audit.violations(only_update) == ["Fn (FnRole): dynamodb:DeleteItem on UrlsTable"]
    both = _template(
        _allow(["dynamodb:UpdateItem"], {"Fn::GetAtt": ["CrawlsTable", "Arn"]}),
        _allow(["dynamodb:DeleteItem"], {"Fn::GetAtt": ["UrlsTable", "Arn"]}),
    )
    assert audit.violations(both) == []


def test_an_index_query_needs_the_index_resource() -> None:
    audit = IamAudit(STACK)
    _record(audit, "dynamodb", "Query", {"TableName": "urls-1", "IndexName": "pending"})
    table_only = _template(_allow(["dynamodb:Query"], {"Fn::GetAtt": ["UrlsTable", "Arn"]}))
    assert audit.violations(table_only) == ["Fn (FnRole): dynamodb:Query on UrlsTable/index/pending"]
    with_index = _template(_allow(["dynamodb:Query"], {"Fn::Sub": "${UrlsTable.Arn}/index/pending"}))
    assert audit.violations(with_index) == []


def test_s3_keys_sqs_batches_and_executions_map_to_their_iam_names() -> None:
    audit = IamAudit(STACK)
    _record(
        audit,
        "s3",
        "UploadPartCopy",
        {"Bucket": "bucket-1", "Key": "crawls/c/x", "CopySource": "bucket-1/crawls/c/y"},
    )
    _record(audit, "s3", "ListObjectsV2", {"Bucket": "bucket-1", "Prefix": "crawls/c/"})
    _record(audit, "sqs", "SendMessageBatch", {"QueueUrl": "http://q/1", "Entries": []})
    _record(
        audit,
        "stepfunctions",
        "DescribeExecution",
        {"executionArn": "arn:aws:states:us-east-1:1:execution:m-1:e"},
    )
    nothing = _template()
    assert audit.violations(nothing) == [
        "Fn (FnRole): s3:GetObject on Bucket/crawls/c/y",
        "Fn (FnRole): s3:ListBucket on Bucket",
        "Fn (FnRole): s3:PutObject on Bucket/crawls/c/x",
        "Fn (FnRole): sqs:SendMessage on Queue",
        "Fn (FnRole): states:DescribeExecution on Machine/execution",
    ]
    granted = _template(
        _allow(["s3:PutObject", "s3:GetObject"], {"Fn::Sub": "${Bucket.Arn}/crawls/*"}),
        _allow(["s3:ListBucket"], {"Fn::GetAtt": ["Bucket", "Arn"]}),
        _allow(["sqs:SendMessage"], {"Fn::GetAtt": ["Queue", "Arn"]}),
        _allow(
            ["states:DescribeExecution"],
            {
                "Fn::Sub": "arn:${AWS::Partition}:states:${AWS::Region}:${AWS::AccountId}:execution:${Machine.Name}:*"
            },
        ),
    )
    assert audit.violations(granted) == []


def test_calls_outside_a_handler_and_unknown_resources_are_reported_apart() -> None:
    audit = IamAudit(STACK)
    audit._on_call("sqs", "ReceiveMessage", {"QueueUrl": "http://q/1"})  # the emulator's own poller
    assert audit.accesses == set()
    _record(audit, "dynamodb", "GetItem", {"TableName": "someone-elses"})
    assert audit.unresolved == {"someone-elses"}


def test_a_partiql_batch_needs_each_statements_partiql_action_on_its_table() -> None:
    audit = IamAudit(STACK)
    _record(
        audit,
        "dynamodb",
        "BatchExecuteStatement",
        {
            "Statements": [
                {"Statement": "INSERT INTO \"urls-1\" VALUE {'k': ?}"},
                {"Statement": 'UPDATE "urls-1" SET a = ? WHERE k = ?'},
                {"Statement": "update crawls-1 SET a = ? WHERE k = ?"},
            ]
        },
    )
    inserts_only = _template(_allow(["dynamodb:PartiQLInsert"], {"Fn::GetAtt": ["UrlsTable", "Arn"]}))
    assert audit.violations(inserts_only) == [
        "Fn (FnRole): dynamodb:PartiQLUpdate on CrawlsTable",
        "Fn (FnRole): dynamodb:PartiQLUpdate on UrlsTable",
    ]
    all_of_them = _template(
        _allow(["dynamodb:PartiQLInsert", "dynamodb:PartiQLUpdate"], {"Fn::GetAtt": ["UrlsTable", "Arn"]}),
        _allow(["dynamodb:PartiQLUpdate"], {"Fn::GetAtt": ["CrawlsTable", "Arn"]}),
    )
    assert audit.violations(all_of_them) == []
