"""Every AWS call a function makes in a local run, checked against that function's IAM role in the template.

The emulator does not enforce IAM, so a call the role does not grant would only fail after `sam deploy`. The
audit records each call made while a handler runs (LambdaHost sets the function), turns it into the IAM
actions and resources AWS would authorise (a transaction or batch into one per item and table), and looks for
an Allow statement in the function's role, as `cfn-lint` cannot: it does not know what the code calls.
"""

from __future__ import annotations

import contextlib
import fnmatch
import re
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from infra.local.deploy import DeployedStack
from infra.local.lambda_host import CURRENT_FUNCTION
from seolens_core.adapters._metering import GLOBAL_METER

# API operation -> IAM action, where the names differ.
_ACTIONS = {
    ("s3", "ListObjectsV2"): "s3:ListBucket",
    ("s3", "ListObjects"): "s3:ListBucket",
    ("s3", "HeadObject"): "s3:GetObject",
    ("s3", "CreateMultipartUpload"): "s3:PutObject",
    ("s3", "UploadPart"): "s3:PutObject",
    ("s3", "UploadPartCopy"): "s3:PutObject",
    ("s3", "CompleteMultipartUpload"): "s3:PutObject",
    ("s3", "DeleteObjects"): "s3:DeleteObject",
    ("sqs", "SendMessageBatch"): "sqs:SendMessage",
    ("sqs", "DeleteMessageBatch"): "sqs:DeleteMessage",
    ("sqs", "ChangeMessageVisibilityBatch"): "sqs:ChangeMessageVisibility",
}
_TRANSACT = {
    "Put": "PutItem",
    "Update": "UpdateItem",
    "Delete": "DeleteItem",
    "ConditionCheck": "ConditionCheckItem",
}
_IAM_PREFIX = {"stepfunctions": "states"}
_PARTIQL_TARGET = re.compile(
    r'^\s*(INSERT\s+INTO|UPDATE|DELETE\s+FROM|SELECT\b.*?\bFROM)\s+"?([\w.-]+)"?', re.I | re.S
)


def _partiql_target(statement: str) -> tuple[str, str]:
    """The IAM verb (`Insert`, `Update`, `Delete`, `Select`) and the table of a PartiQL statement."""
    match = _PARTIQL_TARGET.match(statement)
    if match is None:
        return "Select", "*"
    return match.group(1).split()[0].capitalize(), match.group(2)


@dataclass(frozen=True, slots=True, order=True)
class Access:
    """One authorisation AWS would check: `action` on the resource of logical id `resource` (with `path`:
    an S3 key or a DynamoDB index, '' for the resource itself)."""

    function: str
    action: str
    resource: str
    path: str = ""


class IamAudit:
    """Collects the accesses of the functions run while `recording()`; `violations` lists the ungranted."""

    def __init__(self, stack: DeployedStack) -> None:
        self._stack = stack
        self._lock = threading.Lock()
        self.accesses: set[Access] = set()
        self.unresolved: set[str] = set()
        self._by_physical = {
            **{name: logical for logical, name in stack.table_names.items()},
            **{url: logical for logical, url in stack.queue_urls.items()},
            **{name: logical for logical, name in stack.bucket_names.items()},
            **{arn: logical for logical, arn in stack.state_machine_arns.items()},
            **{key: logical for logical, key in stack.kms_keys.items()},
        }

    @contextlib.contextmanager
    def recording(self) -> Iterator[IamAudit]:
        GLOBAL_METER.add_listener(self._on_call)
        try:
            yield self
        finally:
            GLOBAL_METER.remove_listener(self._on_call)

    def _on_call(self, service: str, operation: str, params: Mapping[str, Any]) -> None:
        function = CURRENT_FUNCTION.get()
        if function is None:
            return  # the emulator's own calls (event source mapping, executor), not a function's
        found = list(self._accesses(function, service, operation, params))
        with self._lock:
            self.accesses.update(found)

    def _accesses(
        self, function: str, service: str, operation: str, params: Mapping[str, Any]
    ) -> Iterator[Access]:
        prefix = _IAM_PREFIX.get(service, service)
        action = _ACTIONS.get((service, operation), f"{prefix}:{operation}")
        if service == "dynamodb":
            if operation in ("BatchGetItem", "BatchWriteItem"):
                for table in params.get("RequestItems", {}):
                    yield Access(function, action, self._logical(table))
            elif operation in ("TransactWriteItems", "TransactGetItems"):
                for item in params.get("TransactItems", ()):
                    ((kind, body),) = item.items()
                    yield Access(
                        function,
                        f"dynamodb:{_TRANSACT.get(kind, 'GetItem')}",
                        self._logical(body["TableName"]),
                    )
            elif operation in ("BatchExecuteStatement", "ExecuteStatement", "ExecuteTransaction"):
                statements = params.get("Statements") or params.get("TransactStatements") or [params]
                for statement in statements:
                    verb, table = _partiql_target(str(statement.get("Statement", "")))
                    yield Access(function, f"dynamodb:PartiQL{verb}", self._logical(table))
            elif "TableName" in params:
                index = params.get("IndexName")
                yield Access(
                    function, action, self._logical(params["TableName"]), f"index/{index}" if index else ""
                )
            else:
                yield Access(function, action, "*")
        elif service == "sqs":
            yield Access(function, action, self._logical(params["QueueUrl"]) if "QueueUrl" in params else "*")
        elif service == "s3":
            bucket = self._logical(params.get("Bucket", ""))
            key = params.get("Key")
            if operation == "DeleteObjects":  # authorised per object
                for obj in params.get("Delete", {}).get("Objects", []):
                    yield Access(function, action, bucket, str(obj.get("Key", "")))
            else:
                yield Access(function, action, bucket, key if isinstance(key, str) else "")
            if operation == "UploadPartCopy":
                source = params.get("CopySource")
                src_bucket, _, src_key = (
                    (source if isinstance(source, str) else "").lstrip("/").partition("/")
                )
                if isinstance(source, dict):
                    src_bucket, src_key = source.get("Bucket", ""), source.get("Key", "")
                yield Access(function, "s3:GetObject", self._logical(src_bucket), src_key)
        elif service == "kms":
            yield Access(function, action, self._logical(str(params.get("KeyId", "")).rsplit("/", 1)[-1]))
        elif service == "stepfunctions":
            arn = params.get("stateMachineArn") or params.get("executionArn") or ""
            machine = re.sub(r":execution:([^:]+):[^:]+$", r":stateMachine:\1", arn)
            yield Access(function, action, self._logical(machine), "execution" if machine != arn else "")
        else:
            yield Access(function, action, "*")

    def _logical(self, physical: str) -> str:
        logical = self._by_physical.get(physical)
        if logical is None:
            self.unresolved.add(physical)
            return f"?{physical}"
        return logical

    def violations(self, translated: Mapping[str, Any]) -> list[str]:
        """Accesses no Allow statement of the function's role grants, as readable lines."""
        resources = translated["Resources"]
        out = []
        for access in sorted(self.accesses):
            role = _role_of(resources, access.function)
            statements = _statements(resources.get(role, {}))
            if not any(_grants(s, access) for s in statements):
                where = access.resource + (f"/{access.path}" if access.path else "")
                out.append(f"{access.function} ({role}): {access.action} on {where}")
        return out


def _role_of(resources: Mapping[str, Any], function: str) -> str:
    role = resources[function]["Properties"].get("Role", {})
    if isinstance(role, dict) and "Fn::GetAtt" in role:
        return str(role["Fn::GetAtt"][0])
    return str(role)


def _statements(role: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    out: list[Mapping[str, Any]] = []
    for policy in role.get("Properties", {}).get("Policies", []):
        statement = policy.get("PolicyDocument", {}).get("Statement", [])
        out.extend(statement if isinstance(statement, list) else [statement])
    return out


def _grants(statement: Mapping[str, Any], access: Access) -> bool:
    if statement.get("Effect") != "Allow":
        return False
    actions = statement.get("Action", [])
    actions = [actions] if isinstance(actions, str) else actions
    if not any(fnmatch.fnmatchcase(access.action, a) for a in actions):
        return False
    targets = statement.get("Resource", [])
    targets = targets if isinstance(targets, list) else [targets]
    return any(_covers(t, access) for t in targets)


def _covers(target: Any, access: Access) -> bool:
    """Does one Resource entry (as the template writes it) cover the accessed resource and path?"""
    if target == "*":
        return True
    if isinstance(target, dict) and "Fn::GetAtt" in target:
        return bool(target["Fn::GetAtt"][0] == access.resource and not access.path)
    if isinstance(target, dict) and "Ref" in target:  # a state machine's Ref is its ARN
        return bool(target["Ref"] == access.resource and not access.path)
    if isinstance(target, dict) and "Fn::Sub" in target:
        text = target["Fn::Sub"] if isinstance(target["Fn::Sub"], str) else target["Fn::Sub"][0]
        match = re.fullmatch(r"\$\{(\w+)\.Arn\}/(.+)", text)
        if match:
            return match.group(1) == access.resource and fnmatch.fnmatchcase(access.path, match.group(2))
        match = re.search(r":execution:\$\{(\w+)\.Name\}:\*$", text)
        if match:
            return match.group(1) == access.resource and access.path == "execution"
    return False
