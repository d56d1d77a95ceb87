"""deploy_template on the embedded moto server: the resources exist as template.yaml declares them."""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError

from infra.local.deploy import DeployedStack, deploy_template
from infra.local.moto_server import EMULATOR_NICENESS, EmbeddedMoto
from tests.infra.conftest import REGION, ROOT, TEMPLATE


def _client(server: EmbeddedMoto, service: str) -> Any:
    return boto3.client(service, endpoint_url=server.endpoint_url, region_name=REGION)


@pytest.fixture(scope="module")
def stack(moto_server: EmbeddedMoto) -> Iterator[DeployedStack]:
    yield deploy_template(moto_server.endpoint_url, TEMPLATE, f"seolens-infra-{uuid.uuid4().hex[:8]}")


def test_deploy_is_fast_and_prunes_only_the_api_and_bucket_policy(stack: DeployedStack) -> None:
    assert stack.seconds < 20
    assert not stack.reused
    assert set(stack.removed_resources) == {
        "CrawlApi",
        "CrawlApiApiGatewayDefaultStage",
        "CrawlApiCallerPolicy",  # they name the API's routes
        "CrawlApiOperatorPolicy",
        "ResultsBucketPolicy",
        "ScheduledAuditFunctionEventInvokeConfig",
        *(f"ApiFunction{route}Permission" for route in ("StartCrawl", "ListCrawls", "GetCrawl")),
        *(
            f"ApiFunction{route}Permission"
            for route in (
                "PauseCrawl",
                "ResumeCrawl",
                "CancelCrawl",
                "GetReport",
                "GetFrontier",
                "PauseFrontier",
                "ResumeFrontier",
            )
        ),
    }
    assert "ApiUrl" not in stack.outputs and "CrawlApiOperatorPolicyArn" not in stack.outputs
    assert stack.outputs["FrontierQueueUrl"] == stack.queue_urls["FrontierQueue"]
    assert stack.outputs["ResultsBucketName"] == stack.bucket_name
    assert stack.outputs["StateMachineArn"] == stack.state_machine_arn


def test_tables_exist_with_template_keys(
    stack: DeployedStack, sam_template: dict[str, Any], moto_server: EmbeddedMoto
) -> None:
    dynamodb = _client(moto_server, "dynamodb")
    assert set(stack.table_names) == {"CrawlsTable", "UrlsTable", "HostsTable"}
    for logical_id, name in stack.table_names.items():
        declared = sam_template["Resources"][logical_id]["Properties"]
        table = dynamodb.describe_table(TableName=name)["Table"]
        assert table["KeySchema"] == declared["KeySchema"]
        assert table["BillingModeSummary"]["BillingMode"] == "PAY_PER_REQUEST"
        indexes = {
            g["IndexName"]: (g["KeySchema"], g["Projection"]) for g in table.get("GlobalSecondaryIndexes", [])
        }
        assert indexes == {
            g["IndexName"]: (g["KeySchema"], g["Projection"])
            for g in declared.get("GlobalSecondaryIndexes", [])
        }
        ttl = dynamodb.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
        if "TimeToLiveSpecification" in declared:
            assert ttl["AttributeName"] == declared["TimeToLiveSpecification"]["AttributeName"]
            assert ttl["TimeToLiveStatus"] == "ENABLED"
        else:
            assert ttl["TimeToLiveStatus"] == "DISABLED"
        backups = dynamodb.describe_continuous_backups(TableName=name)["ContinuousBackupsDescription"]
        pitr = backups["PointInTimeRecoveryDescription"]["PointInTimeRecoveryStatus"]
        assert (pitr == "ENABLED") == ("PointInTimeRecoverySpecification" in declared)


def test_queues_exist_with_template_attributes(
    stack: DeployedStack, sam_template: dict[str, Any], moto_server: EmbeddedMoto
) -> None:
    sqs = _client(moto_server, "sqs")
    declared = sam_template["Resources"]["FrontierQueue"]["Properties"]
    attributes = sqs.get_queue_attributes(QueueUrl=stack.queue_urls["FrontierQueue"], AttributeNames=["All"])[
        "Attributes"
    ]
    assert int(attributes["VisibilityTimeout"]) == declared["VisibilityTimeout"]
    assert int(attributes["MessageRetentionPeriod"]) == declared["MessageRetentionPeriod"]
    redrive = json.loads(attributes["RedrivePolicy"])
    assert redrive["deadLetterTargetArn"] == stack.queue_arns["FrontierDeadLetterQueue"]
    assert int(redrive["maxReceiveCount"]) == 5


def test_functions_read_back_with_resolved_environment(
    stack: DeployedStack, moto_server: EmbeddedMoto
) -> None:
    assert {k: f.handler for k, f in stack.functions.items()} == {
        "DeadLetterFunction": "functions.dead_letter.handler",
        "FetchWorkerFunction": "functions.fetch_worker.handler",
        "SeedFunction": "functions.seed.handler",
        "ProgressFunction": "functions.progress.handler",
        "ReportFunction": "functions.report.handler",
        "ApiFunction": "functions.api.handler",
        "ScheduledAuditFunction": "functions.scheduled_audit.handler",
    }
    env = stack.functions["FetchWorkerFunction"].environment
    assert env["CRAWLS_TABLE"] == stack.table_names["CrawlsTable"]
    assert env["URLS_TABLE"] == stack.table_names["UrlsTable"]
    assert env["HOSTS_TABLE"] == stack.table_names["HostsTable"]
    assert env["FRONTIER_QUEUE_URL"] == stack.queue_urls["FrontierQueue"]
    assert env["DEAD_LETTER_QUEUE_URL"] == stack.queue_urls["FrontierDeadLetterQueue"]
    assert env["RESULTS_BUCKET"] == stack.bucket_name
    assert env["USER_AGENT"] == "SEOLens"
    assert env["MAX_PAGES"] == "10000"  # Lambda environment values are strings
    assert "STATE_MACHINE_ARN" not in env
    assert stack.functions["ApiFunction"].environment["STATE_MACHINE_ARN"] == stack.state_machine_arn
    # The URLs in the environment work against the endpoint as they are.
    sqs = _client(moto_server, "sqs")
    sqs.send_message(QueueUrl=env["FRONTIER_QUEUE_URL"], MessageBody="{}")
    (message,) = sqs.receive_message(QueueUrl=env["FRONTIER_QUEUE_URL"])["Messages"]
    sqs.delete_message(QueueUrl=env["FRONTIER_QUEUE_URL"], ReceiptHandle=message["ReceiptHandle"])


def test_event_source_mapping_read_back(stack: DeployedStack) -> None:
    drain, mapping = stack.event_source_mappings  # sorted by function
    assert mapping.function_logical_id == "FetchWorkerFunction"
    assert mapping.queue_logical_id == "FrontierQueue"
    assert mapping.batch_size == 100
    assert mapping.report_batch_item_failures
    assert mapping.maximum_concurrency == 10
    assert drain.function_logical_id == "DeadLetterFunction"
    assert drain.queue_logical_id == "FrontierDeadLetterQueue"
    assert drain.report_batch_item_failures


def test_state_machine_definition_has_function_arns(stack: DeployedStack, moto_server: EmbeddedMoto) -> None:
    states = stack.state_machine_definition["States"]
    arns = {s["Parameters"]["FunctionName"] for s in states.values() if s["Type"] == "Task"}
    assert arns == {stack.functions[k].arn for k in ("SeedFunction", "ProgressFunction", "ReportFunction")}
    assert "${" not in json.dumps(stack.state_machine_definition)
    try:
        described = _client(moto_server, "stepfunctions").describe_state_machine(
            stateMachineArn=stack.state_machine_arn
        )
    except ClientError as error:  # moto's execution mode keeps stack-created machines out of sight
        pytest.skip(f"moto does not show the stack's state machine: {error}")
    assert json.loads(described["definition"]) == stack.state_machine_definition


def test_redeploy_with_same_template_reuses_the_stack(
    stack: DeployedStack, moto_server: EmbeddedMoto
) -> None:
    again = deploy_template(moto_server.endpoint_url, TEMPLATE, stack.stack_name)
    assert again.reused
    assert again.stack_id == stack.stack_id
    assert again.queue_urls == stack.queue_urls
    assert again.table_names == stack.table_names


def test_parameters_reach_the_deployed_resources_and_changes_update_the_stack(
    moto_server: EmbeddedMoto,
) -> None:
    name = f"seolens-params-{uuid.uuid4().hex[:8]}"
    params = {"BatchSize": "4", "UserAgent": "AuditBot/2.0", "WorkerConcurrency": "3"}
    deployed = deploy_template(moto_server.endpoint_url, TEMPLATE, name, params)
    _, mapping = deployed.event_source_mappings
    assert (mapping.batch_size, mapping.maximum_concurrency) == (4, 3)
    assert {f.environment["USER_AGENT"] for f in deployed.functions.values()} == {"AuditBot/2.0"}

    updated = deploy_template(moto_server.endpoint_url, TEMPLATE, name, {**params, "BatchSize": "7"})
    assert not updated.reused
    assert updated.stack_id == deployed.stack_id
    assert updated.template_sha256 != deployed.template_sha256
    assert [m.batch_size for m in updated.event_source_mappings] == [10, 7]
    assert updated.queue_urls == deployed.queue_urls


def test_local_runtime_creates_resources_from_the_template(
    stack: DeployedStack, moto_server: EmbeddedMoto, tmp_path: Path
) -> None:
    """THE proof: edit a copy of template.yaml, deploy it, and moto shows the edited values."""
    text = TEMPLATE.read_text(encoding="utf-8")
    edited = text.replace("      VisibilityTimeout: 360\n", "      VisibilityTimeout: 421\n")
    edited = edited.replace("        maxReceiveCount: 5\n", "        maxReceiveCount: 3\n")
    assert edited.count("421") == 1 and "maxReceiveCount: 3" in edited
    (tmp_path / "template.yaml").write_text(edited, encoding="utf-8")
    shutil.copytree(ROOT / "infra" / "statemachine", tmp_path / "infra" / "statemachine")

    copy = deploy_template(
        moto_server.endpoint_url, tmp_path / "template.yaml", f"seolens-copy-{uuid.uuid4().hex[:8]}"
    )

    sqs = _client(moto_server, "sqs")
    for deployed, (timeout, receives) in ((copy, ("421", 3)), (stack, ("360", 5))):
        attributes = sqs.get_queue_attributes(
            QueueUrl=deployed.queue_urls["FrontierQueue"],
            AttributeNames=["VisibilityTimeout", "RedrivePolicy"],
        )["Attributes"]
        assert attributes["VisibilityTimeout"] == timeout
        assert int(json.loads(attributes["RedrivePolicy"])["maxReceiveCount"]) == receives
    assert copy.queue_urls["FrontierQueue"] != stack.queue_urls["FrontierQueue"]


def test_the_embedded_emulator_runs_below_the_crawlers_cpu_priority(moto_server: EmbeddedMoto) -> None:
    """The crawler's timed work (a request due in its pacing slot) must not wait behind the emulator's."""
    if moto_server.pid is None:
        pytest.skip("the emulator runs in this process (SEOLENS_MOTO_INPROCESS=1)")
    if "SEOLENS_MOTO_NICENESS" in os.environ:
        pytest.skip("the emulator's priority is set by SEOLENS_MOTO_NICENESS")
    ours = os.getpriority(os.PRIO_PROCESS, 0)
    assert os.getpriority(os.PRIO_PROCESS, moto_server.pid) == min(ours + EMULATOR_NICENESS, 19)
