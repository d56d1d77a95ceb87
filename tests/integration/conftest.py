"""Integration fixtures: the template's stack in moto for the API and scheduled-audit handlers.

A copy of tests/e2e's `local_cloud` under another name (conftest fixtures are per directory); the handlers
get a FakeStarter so no state machine runs.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from infra.local.runtime import LocalCloud
from seolens_core.bootstrap import container, reset_container
from seolens_core.control import STARTER_KEY, FakeStarter


@pytest.fixture(scope="session")
def control_cloud() -> Iterator[LocalCloud]:
    reset_container()
    cloud = LocalCloud(stack_name="seolens-control").start()
    try:
        yield cloud
    finally:
        cloud.stop()


@pytest.fixture
def starter(control_cloud: LocalCloud) -> Iterator[FakeStarter]:
    """A fresh control service per test, wired to a FakeStarter."""
    fake = FakeStarter()
    app = container()
    app.extras.clear()
    app.extras[STARTER_KEY] = fake
    yield fake
    app.extras.clear()


ALICE = "arn:aws:sts::123456789012:assumed-role/seo-operators/alice"
BOB = "arn:aws:sts::123456789012:assumed-role/seo-operators/bob"


@dataclass
class LambdaContextStub:
    function_name: str = "seolens-ApiFunction"
    memory_limit_in_mb: int = 512
    invoked_function_arn: str = "arn:aws:lambda:us-east-1:123456789012:function:seolens-ApiFunction"
    aws_request_id: str = "req-1"


def http_api_event(
    method: str,
    path: str,
    *,
    route: str,
    body: str | None = None,
    query: dict[str, str] | None = None,
    path_params: dict[str, str] | None = None,
    caller: str | None = None,
) -> dict[str, Any]:
    """An API Gateway HTTP API payload 2.0 event, as an IAM-authorised route delivers it (`caller`: the
    IAM identity's ARN, alice's session of seo-operators by default; "" for an event without one)."""
    caller = ALICE if caller is None else caller
    session = caller.rsplit("/", 1)[-1]
    domain = "a1b2c3d4e5.execute-api.us-east-1.amazonaws.com"
    headers = {
        "accept": "application/json",
        "content-length": str(len(body or "")),
        "host": domain,
        "user-agent": "python-requests/2.32",
        "x-amz-date": "20261129T220000Z",
        "x-amzn-trace-id": "Root=1-6749f0a0-0123456789abcdef01234567",
        "x-forwarded-for": "203.0.113.7",
        "x-forwarded-port": "443",
        "x-forwarded-proto": "https",
    }
    if body is not None:
        headers["content-type"] = "application/json"
    event: dict[str, Any] = {
        "version": "2.0",
        "routeKey": f"{method} {route}",
        "rawPath": path,
        "rawQueryString": "&".join(f"{k}={v}" for k, v in (query or {}).items()),
        "headers": headers,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "a1b2c3d4e5",
            "authorizer": {
                "iam": {
                    "accessKey": "ASIAEXAMPLEKEY",
                    "accountId": "123456789012",
                    "callerId": f"AROAEXAMPLE:{session}",
                    "cognitoIdentity": None,
                    "principalOrgId": None,
                    "userArn": caller or None,
                    "userId": f"AROAEXAMPLE:{session}",
                }
            },
            "domainName": domain,
            "domainPrefix": "a1b2c3d4e5",
            "http": {
                "method": method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "203.0.113.7",
                "userAgent": "python-requests/2.32",
            },
            "requestId": uuid.uuid4().hex[:12] + "=",
            "routeKey": f"{method} {route}",
            "stage": "$default",
            "time": "29/Nov/2026:22:00:00 +0000",
            "timeEpoch": 1795989600000,
        },
        "isBase64Encoded": False,
    }
    if query:
        event["queryStringParameters"] = query
    if path_params:
        event["pathParameters"] = path_params
    if body is not None:
        event["body"] = body
    return event


@dataclass
class ApiAnswer:
    status: int
    body: Any
    raw: str
    headers: dict[str, str]


def call_api(
    method: str,
    path: str,
    *,
    body: Any = None,
    raw_body: str | None = None,
    query: dict[str, str] | None = None,
    caller: str | None = None,
) -> ApiAnswer:
    from functions.api import handler

    parts = path.strip("/").split("/")
    route, params = path, None
    if len(parts) >= 2 and parts[0] == "crawls":
        params = {"id": parts[1]}
        route = "/crawls/{id}" + ("/" + parts[2] if len(parts) > 2 else "")
    text = raw_body if raw_body is not None else (json.dumps(body) if body is not None else None)
    event = http_api_event(
        method, path, route=route, body=text, query=query, path_params=params, caller=caller
    )
    result = handler(event, LambdaContextStub())  # type: ignore[arg-type]
    raw = result.get("body") or ""
    return ApiAnswer(result["statusCode"], json.loads(raw) if raw else None, raw, result.get("headers", {}))


@pytest.fixture(autouse=True)
def _its_cloud_is_active(request: pytest.FixtureRequest) -> None:
    """A test of `control_cloud` talks to that cloud even when another cloud of this session was started later
    (the emulated Lambda environment is process-wide; see `LocalCloud.activate`)."""
    if "control_cloud" in request.fixturenames:
        request.getfixturevalue("control_cloud").activate()
