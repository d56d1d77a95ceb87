"""Deploy `template.yaml` into an emulated AWS (moto, LocalStack) and read back what was created.

The template is translated offline (see `infra.local.template`), resources the emulator cannot create
are pruned together with everything that refers to them, and the rest is created as a CloudFormation
stack. What the local runtime needs (queue URLs, table names, handler strings, environment variables,
event source mappings, the state machine definition) is then read back from the emulator, so the
template stays the only list of resources.

Pruned on moto 5.2 (found by deploying; `MOTO_UNSUPPORTED_TYPES`): `AWS::ApiGatewayV2::Api` and
`AWS::ApiGatewayV2::Stage` (so the HTTP API, its `AWS::Lambda::Permission`s and the `ApiUrl` output go
too), `AWS::S3::BucketPolicy` (the TLS-only policy; moto does not enforce bucket policies anyway) and
`AWS::Lambda::EventInvokeConfig` (the scheduled audit's OnFailure destination; no schedule runs locally).
Lambda code is a stub zip: the local runtime runs the handlers in-process, never moto's Lambda.
moto's CloudFormation also ignores two table properties, `TimeToLiveSpecification` and
`PointInTimeRecoverySpecification`; they are applied from the template through the DynamoDB API.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import time
import zipfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import boto3
from botocore.exceptions import ClientError

from infra.local.template import (
    MOTO_UNSUPPORTED_TYPES,
    load_template,
    prune_resources,
    read_definition,
    resolve_intrinsic,
    state_machine_sources,
    substitute_definition,
    translate,
)

__all__ = [
    "BOOTSTRAP_BUCKET",
    "DeployError",
    "DeployedStack",
    "EventSourceMappingConfig",
    "FunctionConfig",
    "deploy_template",
]

BOOTSTRAP_BUCKET = "seolens-local-bootstrap"
HASH_TAG = "seolens:template-sha256"
_STUB_NOTE = (
    "SEO Lens local stub: the local runtime runs handlers in-process; build real code with `sam build`.\n"
)
_DONE = {"CREATE_COMPLETE", "UPDATE_COMPLETE"}
_CAPABILITIES = ["CAPABILITY_IAM", "CAPABILITY_NAMED_IAM", "CAPABILITY_AUTO_EXPAND"]


class DeployError(RuntimeError):
    """The stack could not be created (the message carries the emulator's reasons)."""


@dataclass(frozen=True, slots=True)
class FunctionConfig:
    """A deployed function as the emulator reports it: the handlers' only source of configuration."""

    logical_id: str
    name: str
    arn: str
    handler: str
    environment: Mapping[str, str]
    timeout_s: int
    memory_mb: int


@dataclass(frozen=True, slots=True)
class EventSourceMappingConfig:
    """An SQS -> function mapping, for the event-source-mapping emulator."""

    uuid: str
    function_logical_id: str
    queue_logical_id: str
    batch_size: int
    maximum_batching_window_s: int
    report_batch_item_failures: bool
    maximum_concurrency: int | None


@dataclass(frozen=True, slots=True)
class DeployedStack:
    """What a deployed stack holds, keyed by the template's logical ids."""

    stack_name: str
    stack_id: str
    endpoint_url: str
    region: str
    queue_urls: Mapping[str, str]
    queue_arns: Mapping[str, str]
    table_names: Mapping[str, str]
    bucket_names: Mapping[str, str]
    functions: Mapping[str, FunctionConfig]
    event_source_mappings: tuple[EventSourceMappingConfig, ...]
    state_machine_arns: Mapping[str, str]
    state_machine_definitions: Mapping[str, Mapping[str, Any]] = field(repr=False)
    outputs: Mapping[str, str]
    removed_resources: tuple[str, ...]
    template_sha256: str
    reused: bool
    seconds: float
    kms_keys: Mapping[str, str] = field(default_factory=dict)
    """KMS key ids by logical id (for the IAM audit)."""

    @property
    def bucket_name(self) -> str:
        """The stack's only bucket (the results bucket)."""
        (name,) = self.bucket_names.values()
        return name

    @property
    def state_machine_arn(self) -> str:
        (arn,) = self.state_machine_arns.values()
        return arn

    @property
    def state_machine_definition(self) -> Mapping[str, Any]:
        """The only state machine's definition with its substitutions applied (function ARNs)."""
        (definition,) = self.state_machine_definitions.values()
        return definition


def deploy_template(
    endpoint_url: str,
    template_path: Path,
    stack_name: str,
    parameters: Mapping[str, str] | None = None,
    *,
    region: str | None = None,
    unsupported_types: Iterable[str] = MOTO_UNSUPPORTED_TYPES,
    timeout_s: float = 120.0,
) -> DeployedStack:
    """Create (or reuse, if its template hash matches; or update) `stack_name` from a SAM template."""
    started = time.monotonic()
    region = region or os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
    session = boto3.session.Session(region_name=region)
    clients = {name: session.client(name, endpoint_url=endpoint_url) for name in _SERVICES}
    params = dict(parameters or {})

    template = load_template(template_path)
    sources = state_machine_sources(template, template_path.parent)
    definitions = {logical_id: read_definition(path) for logical_id, path in sources.items()}
    code_uri = _upload_stub_code(clients["s3"])
    translated = translate(template, code_uri=code_uri, definitions=definitions, region=region)
    pruned, removed = prune_resources(translated, unsupported_types)
    body = json.dumps(pruned, sort_keys=True, separators=(",", ":"))
    digest = hashlib.sha256((body + json.dumps(params, sort_keys=True)).encode()).hexdigest()

    cfn = clients["cloudformation"]
    existing = _describe_stack(cfn, stack_name)
    reused = False
    cfn_params = [{"ParameterKey": k, "ParameterValue": v} for k, v in sorted(params.items())]
    tags = [{"Key": HASH_TAG, "Value": digest}]
    if existing is not None and existing["StackStatus"] in _DONE:
        if _tag(existing, HASH_TAG) == digest:
            reused = True
        else:
            cfn.update_stack(
                StackName=stack_name,
                TemplateBody=body,
                Parameters=cfn_params,
                Capabilities=_CAPABILITIES,
                Tags=tags,
            )
    else:
        if existing is not None:
            cfn.delete_stack(StackName=existing["StackId"])
            _wait(cfn, existing["StackId"], timeout_s, allow_deleted=True)
        cfn.create_stack(
            StackName=stack_name,
            TemplateBody=body,
            Parameters=cfn_params,
            Capabilities=_CAPABILITIES,
            Tags=tags,
        )
    stack = _wait(cfn, stack_name, timeout_s)
    if not reused:
        _apply_table_settings(clients["dynamodb"], cfn, stack["StackId"], pruned)
    return _read_back(
        clients,
        stack,
        template=template,
        definitions=definitions,
        endpoint_url=endpoint_url,
        region=region,
        removed=removed,
        digest=digest,
        reused=reused,
        started=started,
    )


_SERVICES = ("s3", "cloudformation", "lambda", "sqs", "dynamodb")


def _upload_stub_code(s3: Any) -> str:
    """Put the stub code zip into the bootstrap bucket (idempotent) and return its s3:// URI."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        info = zipfile.ZipInfo("SEOLENS_LOCAL_STUB.txt", date_time=(2020, 1, 1, 0, 0, 0))
        archive.writestr(info, _STUB_NOTE)
    payload = buffer.getvalue()
    key = f"code/{hashlib.sha256(payload).hexdigest()[:16]}.zip"
    try:
        s3.create_bucket(Bucket=BOOTSTRAP_BUCKET)
    except ClientError as error:
        if error.response["Error"]["Code"] not in {"BucketAlreadyOwnedByYou", "BucketAlreadyExists"}:
            raise
    s3.put_object(Bucket=BOOTSTRAP_BUCKET, Key=key, Body=payload)
    return f"s3://{BOOTSTRAP_BUCKET}/{key}"


def _apply_table_settings(dynamodb: Any, cfn: Any, stack_id: str, template: Mapping[str, Any]) -> None:
    """Apply the table properties moto's CloudFormation drops (TTL, point-in-time recovery)."""
    for logical_id, resource in template["Resources"].items():
        if resource["Type"] != "AWS::DynamoDB::Table":
            continue
        props = resource.get("Properties", {})
        name = cfn.describe_stack_resource(StackName=stack_id, LogicalResourceId=logical_id)[
            "StackResourceDetail"
        ]["PhysicalResourceId"]
        ttl = props.get("TimeToLiveSpecification")
        if isinstance(ttl, dict) and ttl.get("Enabled") is True:
            current = dynamodb.describe_time_to_live(TableName=name)["TimeToLiveDescription"]
            if current.get("TimeToLiveStatus") not in {"ENABLED", "ENABLING"}:
                dynamodb.update_time_to_live(
                    TableName=name,
                    TimeToLiveSpecification={"AttributeName": ttl["AttributeName"], "Enabled": True},
                )
        pitr = props.get("PointInTimeRecoverySpecification")
        if isinstance(pitr, dict) and pitr.get("PointInTimeRecoveryEnabled") is True:
            dynamodb.update_continuous_backups(
                TableName=name, PointInTimeRecoverySpecification={"PointInTimeRecoveryEnabled": True}
            )


def _describe_stack(cfn: Any, name: str) -> dict[str, Any] | None:
    try:
        stacks: list[dict[str, Any]] = cfn.describe_stacks(StackName=name)["Stacks"]
    except ClientError as error:
        if "does not exist" in str(error.response["Error"].get("Message", "")):
            return None
        raise
    live = [s for s in stacks if s["StackStatus"] != "DELETE_COMPLETE"]
    return live[0] if live else None


def _tag(stack: Mapping[str, Any], key: str) -> str | None:
    for tag in stack.get("Tags", []):
        if tag["Key"] == key:
            return str(tag["Value"])
    return None


def _wait(cfn: Any, name: str, timeout_s: float, *, allow_deleted: bool = False) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    delay = 0.02
    while True:
        stack = _describe_stack(cfn, name)
        if stack is None:
            if allow_deleted:
                return {}
            raise DeployError(f"stack {name} disappeared while waiting for it")
        status = stack["StackStatus"]
        if not status.endswith("_IN_PROGRESS"):
            if status in _DONE or (allow_deleted and status == "DELETE_COMPLETE"):
                return stack
            raise DeployError(f"stack {name} ended in {status}: {_failure_reasons(cfn, name)}")
        if time.monotonic() > deadline:
            raise DeployError(f"stack {name} still {status} after {timeout_s:.0f} s")
        time.sleep(delay)
        delay = min(delay * 2, 0.5)


def _failure_reasons(cfn: Any, name: str) -> str:
    events = cfn.describe_stack_events(StackName=name)["StackEvents"]
    reasons = [
        f"{e['LogicalResourceId']}: {e.get('ResourceStatusReason', '')}"
        for e in events
        if e["ResourceStatus"].endswith("_FAILED")
    ]
    return "; ".join(reasons) or "no failure events"


def _read_back(
    clients: Mapping[str, Any],
    stack: Mapping[str, Any],
    *,
    template: Mapping[str, Any],
    definitions: Mapping[str, Mapping[str, Any]],
    endpoint_url: str,
    region: str,
    removed: tuple[str, ...],
    digest: str,
    reused: bool,
    started: float,
) -> DeployedStack:
    cfn, lam, sqs = clients["cloudformation"], clients["lambda"], clients["sqs"]
    physical: dict[str, str] = {}
    types: dict[str, str] = {}
    for page in cfn.get_paginator("list_stack_resources").paginate(StackName=stack["StackId"]):
        for summary in page["StackResourceSummaries"]:
            physical[summary["LogicalResourceId"]] = summary.get("PhysicalResourceId", "")
            types[summary["LogicalResourceId"]] = summary["ResourceType"]

    def of_type(resource_type: str) -> dict[str, str]:
        return {k: physical[k] for k, t in sorted(types.items()) if t == resource_type}

    functions: dict[str, FunctionConfig] = {}
    for logical_id, name in of_type("AWS::Lambda::Function").items():
        config = lam.get_function_configuration(FunctionName=name)
        variables = config.get("Environment", {}).get("Variables", {})
        functions[logical_id] = FunctionConfig(
            logical_id=logical_id,
            name=config["FunctionName"],
            arn=config["FunctionArn"],
            handler=config["Handler"],
            # Lambda environment values are strings; moto passes Number parameters through as ints.
            environment={k: str(v) for k, v in variables.items()},
            timeout_s=int(config.get("Timeout", 3)),
            memory_mb=int(config.get("MemorySize", 128)),
        )
    queue_urls = of_type("AWS::SQS::Queue")
    queue_arns = {
        k: sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"]["QueueArn"]
        for k, url in queue_urls.items()
    }
    state_machine_arns = of_type("AWS::StepFunctions::StateMachine")
    arns = {**{k: f.arn for k, f in functions.items()}, **queue_arns, **state_machine_arns}
    resolved_definitions: dict[str, Mapping[str, Any]] = {}
    for logical_id, definition in definitions.items():
        raw = template["Resources"][logical_id].get("Properties", {}).get("DefinitionSubstitutions", {})
        values = {name: resolve_intrinsic(v, physical, arns) for name, v in raw.items()}
        resolved_definitions[logical_id] = substitute_definition(definition, values)

    function_by_arn = {f.arn: k for k, f in functions.items()}
    queue_by_arn = {arn: k for k, arn in queue_arns.items()}
    mappings: list[EventSourceMappingConfig] = []
    for uuid in of_type("AWS::Lambda::EventSourceMapping").values():
        mapping = lam.get_event_source_mapping(UUID=uuid)
        source = mapping.get("EventSourceArn", "")
        if source not in queue_by_arn:
            continue
        mappings.append(
            EventSourceMappingConfig(
                uuid=uuid,
                function_logical_id=function_by_arn[mapping["FunctionArn"]],
                queue_logical_id=queue_by_arn[source],
                batch_size=int(mapping.get("BatchSize", 10)),
                maximum_batching_window_s=int(mapping.get("MaximumBatchingWindowInSeconds", 0)),
                report_batch_item_failures="ReportBatchItemFailures"
                in mapping.get("FunctionResponseTypes", []),
                maximum_concurrency=mapping.get("ScalingConfig", {}).get("MaximumConcurrency"),
            )
        )
    return DeployedStack(
        stack_name=stack["StackName"],
        stack_id=stack["StackId"],
        endpoint_url=endpoint_url,
        region=region,
        queue_urls=queue_urls,
        queue_arns=queue_arns,
        table_names=of_type("AWS::DynamoDB::Table"),
        bucket_names=of_type("AWS::S3::Bucket"),
        functions=functions,
        event_source_mappings=tuple(sorted(mappings, key=lambda m: m.function_logical_id)),
        state_machine_arns=state_machine_arns,
        state_machine_definitions=resolved_definitions,
        outputs={o["OutputKey"]: o["OutputValue"] for o in stack.get("Outputs", [])},
        removed_resources=removed,
        template_sha256=digest,
        reused=reused,
        seconds=time.monotonic() - started,
        kms_keys=of_type("AWS::KMS::Key"),
    )
