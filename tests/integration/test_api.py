"""The HTTP API handler with API Gateway HTTP API 2.0 events against the template's tables in moto.

Evidence comes from DynamoDB and S3 read directly (boto3), the FakeStarter's record of started executions
and the bytes behind the presigned URLs, not from the API's own answers alone.
"""

from __future__ import annotations

import json
import os
import time
import urllib.request
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import boto3
import pytest

from infra.local.runtime import LocalCloud
from seolens_core.adapters.crawls import stored_settings
from seolens_core.control import ExecutionStartFailed, FakeStarter
from tests.integration.conftest import ALICE, BOB, call_api

REPO = Path(__file__).resolve().parents[2]
VALID = {"start_urls": ["https://shop.example.com/"], "max_pages": 50, "max_depth": 3}


def _ddb() -> Any:
    return boto3.client("dynamodb")


def _item(crawl_id: str) -> dict[str, Any] | None:
    resp = _ddb().get_item(
        TableName=os.environ["CRAWLS_TABLE"], Key={"crawl_id": {"S": crawl_id}}, ConsistentRead=True
    )
    item: dict[str, Any] | None = resp.get("Item")
    return item


def _crawl_count() -> int:
    return int(_ddb().scan(TableName=os.environ["CRAWLS_TABLE"], Select="COUNT")["Count"])


def _start(starter: FakeStarter, body: dict[str, Any] | None = None) -> str:
    answer = call_api("POST", "/crawls", body=body or VALID)
    assert answer.status == 202, answer.raw
    crawl_id: str = answer.body["crawl_id"]
    assert crawl_id in starter.started
    return crawl_id


# ------------------------------------------------------------------ POST /crawls
def test_start_records_the_crawl_and_starts_one_execution(starter: FakeStarter) -> None:
    answer = call_api(
        "POST", "/crawls", body={**VALID, "include_subdomains": True, "user_agent": "SEOLens/2.0"}
    )
    assert answer.status == 202, answer.raw
    crawl_id = answer.body["crawl_id"]
    assert answer.body["status"] == "QUEUED"
    assert answer.body["site"] == "https://shop.example.com:443"
    url = f"https://a1b2c3d4e5.execute-api.us-east-1.amazonaws.com/crawls/{crawl_id}"
    assert answer.body["status_url"] == url
    assert answer.headers.get("Location") == url
    assert starter.started == [crawl_id]
    item = _item(crawl_id)
    assert (
        item is not None
        and item["status"]["S"] == "QUEUED"
        and item["site"]["S"] == "https://shop.example.com:443"
    )
    stored = json.loads(stored_settings(item))
    assert stored["start_urls"] == ["https://shop.example.com/"]
    assert (stored["max_pages"], stored["max_depth"], stored["include_subdomains"]) == (50, 3, True)
    assert stored["user_agent"] == "SEOLens/2.0"
    assert stored["allow_hosts"] == []


def test_start_uses_deployment_defaults(starter: FakeStarter) -> None:
    crawl_id = _start(starter, {"start_urls": ["http://blog.example.org/a"]})
    stored = json.loads(stored_settings(_item(crawl_id)))  # type: ignore[arg-type]
    assert stored["max_pages"] == int(os.environ.get("MAX_PAGES", "10000"))
    assert stored["max_depth"] == int(os.environ.get("MAX_DEPTH", "10"))


def test_secrets_are_sealed_for_workers_never_echoed_and_dropped_when_the_crawl_ends(
    starter: FakeStarter,
) -> None:
    body = {
        **VALID,
        "options": {"cookie": "session=s3cr3t-cookie", "extra_headers": {"Authorization": "Bearer t0ken"}},
    }
    crawl_id = _start(starter, body)
    item = _item(crawl_id)
    assert item is not None
    stored = stored_settings(item)
    assert "s3cr3t" not in stored and "t0ken" not in stored  # not in the settings every role reads
    sealed = bytes(item["secrets"]["B"])
    assert b"s3cr3t" not in sealed and b"t0ken" not in sealed  # a KMS ciphertext, bound to the crawl id
    kms = boto3.client("kms")
    opened = kms.decrypt(CiphertextBlob=sealed, EncryptionContext={"crawl_id": crawl_id})["Plaintext"]
    assert b"s3cr3t-cookie" in opened and b"Bearer t0ken" in opened
    with pytest.raises(kms.exceptions.ClientError):  # copied into another crawl's item, it does not open
        kms.decrypt(CiphertextBlob=sealed, EncryptionContext={"crawl_id": "another-crawl"})
    answer = call_api("GET", f"/crawls/{crawl_id}")
    assert answer.status == 200
    assert "s3cr3t" not in answer.raw and "t0ken" not in answer.raw
    assert answer.body["settings"]["cookie"] == "***"
    assert answer.body["settings"]["extra_headers"] == {"Authorization": "***"}
    listed = call_api("GET", "/crawls", query={"limit": "100"})
    assert "s3cr3t" not in listed.raw and "t0ken" not in listed.raw
    assert call_api("POST", f"/crawls/{crawl_id}/cancel").status == 200
    ended = _item(crawl_id)
    assert ended is not None and "secrets" not in ended  # an ended crawl fetches nothing: they are gone


BAD_BODIES = [
    pytest.param({}, "start_urls", id="missing-start-urls"),
    pytest.param({"start_urls": []}, "start_urls", id="empty-start-urls"),
    pytest.param({"start_urls": "https://a.example/"}, "start_urls", id="string-not-list"),
    pytest.param({"start_urls": [42]}, "start_urls", id="url-not-string"),
    pytest.param({**VALID, "max_pages": "ten"}, "max_pages", id="max-pages-word"),
    pytest.param({**VALID, "max_pages": "10"}, "max_pages", id="max-pages-numeric-string"),
    pytest.param({**VALID, "max_pages": 0}, "max_pages", id="max-pages-zero"),
    pytest.param({**VALID, "max_depth": -1}, "max_depth", id="negative-depth"),
    pytest.param({**VALID, "max_depth": 2.5}, "max_depth", id="fractional-depth"),
    pytest.param({**VALID, "include_subdomains": "yes"}, "include_subdomains", id="bool-as-string"),
    pytest.param({"start_urls": ["ftp://files.example.com/"]}, "must be http(s)", id="ftp-url"),
    pytest.param({"start_urls": ["javascript:alert(1)"]}, "must be http(s)", id="javascript-url"),
    pytest.param({"start_urls": ["https://"]}, "no host", id="no-host"),
    pytest.param({"start_urls": ["https://u:p@a.example.com/"]}, "credentials", id="userinfo"),
    pytest.param(
        {"start_urls": [f"https://s{i}.example.com/" for i in range(101)]}, "start_urls", id="101-urls"
    ),
    pytest.param({**VALID, "allow_hosts": ["10.0.0.5"]}, "allow_hosts", id="allow-hosts-refused"),
    pytest.param({"start_urls": ["http://127.0.0.1:8080/"]}, "not a public address", id="loopback"),
    pytest.param({"start_urls": ["http://10.1.2.3/"]}, "not a public address", id="private-10"),
    pytest.param({"start_urls": ["http://192.168.0.1/"]}, "not a public address", id="private-192"),
    pytest.param({"start_urls": ["http://169.254.169.254/latest/"]}, "not a public address", id="metadata"),
    pytest.param({"start_urls": ["http://[::1]/"]}, "not a public address", id="ipv6-loopback"),
    pytest.param({"start_urls": ["http://[::ffff:10.0.0.1]/"]}, "not a public address", id="ipv4-mapped"),
    pytest.param({"start_urls": ["http://localhost:3000/"]}, "not a public host name", id="localhost"),
    pytest.param({"start_urls": ["http://db.internal/"]}, "not a public host name", id="internal-suffix"),
    pytest.param({"start_urls": ["http://intranet/"]}, "not a public host name", id="single-label"),
    pytest.param({**VALID, "user_agent": "bad agent!"}, "product token", id="bad-user-agent"),
    # Loopback and metadata spellings, read as the crawler reads hosts (WHATWG IPv4, percent-decoding, IDNA).
    *(
        pytest.param({"start_urls": [url]}, "not a public", id=f"spelling-{url}")
        for url in (
            "http://0x7f.1/",
            "http://127.1/",
            "http://0177.0.0.1/",
            "http://%31%32%37.0.0.1/",
            "http://\uff11\uff12\uff17.\uff10.\uff10.\uff11/",
            "http://169.254.169.254./latest/",
            "http://2130706433/",
            "http://0xa9fea9fe/",
            "http://localhost./",
            "http://LOCALHOST%2e/",
            "http://[::ffff:7f00:1]/",
        )
    ),
    # Headers a fetch could not send, or the client's own: 422 naming the field.
    *(
        pytest.param({**VALID, "options": {"extra_headers": headers}}, needle, id=f"header-{needle}")
        for headers, needle in (
            ({"X-Token": "a\r\nInjected: yes"}, "control characters"),
            ({"X-Token": "a\nb"}, "control characters"),
            ({"X-Token": "a\x00b"}, "control characters"),
            ({"Host": "other.example"}, "'Host' cannot be set"),
            ({"user-agent": "Googlebot"}, "'user-agent' cannot be set"),
            ({"Connection": "close"}, "'Connection' cannot be set"),
            ({"Transfer-Encoding": "chunked"}, "'Transfer-Encoding' cannot be set"),
            ({"X Token": "a"}, "not an HTTP token"),
            ({"X-Token:": "a"}, "not an HTTP token"),
            ({"X-Big": "v" * 1_000_000}, "more than 4000"),
        )
    ),
    pytest.param({**VALID, "options": {"cookie": "a=b\r\nX: y"}}, "cookie has control", id="cookie-crlf"),
    pytest.param({**VALID, "user_agent": "SEOLens/1.0\r\nX: y"}, "control characters", id="user-agent-crlf"),
    pytest.param({**VALID, "options": {"max_seconds": 0}}, "max_seconds", id="zero-time-budget"),
    pytest.param(
        {**VALID, "options": {"politeness": {"aimd": False}}}, "politeness", id="politeness-not-exposed"
    ),
    pytest.param({**VALID, "options": {"bogus": 1}}, "bogus", id="unknown-option"),
    pytest.param({**VALID, "max_page": 10}, "max_page", id="typo-field"),
]


@pytest.mark.parametrize(("body", "needle"), BAD_BODIES)
def test_invalid_bodies_are_422_naming_the_problem_and_write_nothing(
    starter: FakeStarter, body: dict[str, Any], needle: str
) -> None:
    before = _crawl_count()
    answer = call_api("POST", "/crawls", body=body)
    assert answer.status == 422, answer.raw
    assert answer.body["error"] == "invalid_request"
    assert needle in answer.body["message"], answer.body["message"]
    assert "Traceback" not in answer.raw
    assert _crawl_count() == before
    assert starter.started == []


@pytest.mark.parametrize(
    ("raw", "status"),
    [
        ("{", 400),
        ('{"start_urls": [', 400),
        ("not json", 400),
        ("[1, 2]", 422),
        ('"a string"', 422),
        ("", 422),
    ],
)
def test_malformed_and_non_object_bodies(starter: FakeStarter, raw: str, status: int) -> None:
    before = _crawl_count()
    answer = call_api("POST", "/crawls", raw_body=raw)
    assert answer.status == status, answer.raw
    assert answer.body["error"] == ("malformed_json" if status == 400 else "invalid_request")
    assert _crawl_count() == before and starter.started == []


def test_refused_execution_is_502_and_the_crawl_is_failed_not_lost(starter: FakeStarter) -> None:
    starter.fail_with = ExecutionStartFailed("state machine gone")
    listed_before = {c["crawl_id"] for c in call_api("GET", "/crawls", query={"limit": "100"}).body["crawls"]}
    answer = call_api("POST", "/crawls", body=VALID)
    assert answer.status == 502, answer.raw
    assert answer.body["error"] == "not_started"
    new = [
        c
        for c in call_api("GET", "/crawls", query={"limit": "100"}).body["crawls"]
        if c["crawl_id"] not in listed_before
    ]
    assert len(new) == 1
    item = _item(new[0]["crawl_id"])
    assert item is not None and item["status"]["S"] == "FAILED"
    # The orchestrator's reason can name accounts and roles: it is logged, never stored or answered.
    assert item["error_text"]["S"] == "execution not started"
    shown = call_api("GET", f"/crawls/{new[0]['crawl_id']}")
    assert shown.body["error"] == "execution not started" and "state machine gone" not in shown.raw


def test_unexpected_error_is_a_plain_500(starter: FakeStarter) -> None:
    starter.fail_with = RuntimeError("internal detail /var/task/x.py line 3")
    answer = call_api("POST", "/crawls", body=VALID)
    assert answer.status == 500
    assert answer.body == {
        "error": "internal_error",
        "message": "internal error (logged with the request id)",
    }
    assert "Traceback" not in answer.raw and "internal detail" not in answer.raw


# ------------------------------------------------------------------ GET /crawls, GET /crawls/{id}
def test_list_newest_first_with_limit_and_status_filter(starter: FakeStarter) -> None:
    ids = [_start(starter) for _ in range(3)]
    assert call_api("POST", f"/crawls/{ids[0]}/cancel").status == 200
    listed = call_api("GET", "/crawls", query={"limit": "100"})
    assert listed.status == 200
    order = [c["crawl_id"] for c in listed.body["crawls"]]
    assert set(ids) <= set(order)
    created = [c["created_at"] for c in listed.body["crawls"]]
    assert created == sorted(created, reverse=True)
    cancelled = call_api("GET", "/crawls", query={"status": "CANCELLED", "limit": "100"}).body["crawls"]
    assert ids[0] in {c["crawl_id"] for c in cancelled}
    assert all(c["status"] == "CANCELLED" for c in cancelled)
    assert len(call_api("GET", "/crawls", query={"limit": "2"}).body["crawls"]) == 2


@pytest.mark.parametrize(
    ("query", "needle"),
    [
        ({"limit": "0"}, "limit"),
        ({"limit": "abc"}, "limit"),
        ({"limit": "101"}, "limit"),
        ({"status": "DONE"}, "status"),
    ],
)
def test_list_rejects_bad_query(starter: FakeStarter, query: dict[str, str], needle: str) -> None:
    answer = call_api("GET", "/crawls", query=query)
    assert answer.status == 422, answer.raw
    assert needle in answer.body["message"]


def test_get_shows_state_counters_and_progress(starter: FakeStarter) -> None:
    crawl_id = _start(starter)
    _ddb().update_item(
        TableName=os.environ["CRAWLS_TABLE"],
        Key={"crawl_id": {"S": crawl_id}},
        UpdateExpression="SET #s = :r ADD n_fetched :f, n_errors :e",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={":r": {"S": "RUNNING"}, ":f": {"N": "20"}, ":e": {"N": "2"}},
    )
    answer = call_api("GET", f"/crawls/{crawl_id}")
    assert answer.status == 200, answer.raw
    body = answer.body
    assert body["status"] == "RUNNING"
    assert body["counters"] == {"n_fetched": 20, "n_errors": 2}
    assert body["progress"]["fetched"] == 20 and body["progress"]["max_pages"] == 50
    assert body["progress"]["pages_fraction"] == 0.4
    assert body["progress"]["elapsed_s"] >= 0
    assert body["frontier_paused"] is False
    assert "cost" in body


@pytest.mark.parametrize("crawl_id", ["0123456789abcdef", "__frontier__", "x" * 300, "..%2F..", "a b"])
@pytest.mark.parametrize("suffix", ["", "/pause", "/resume", "/cancel", "/report"])
def test_unknown_ids_are_404_on_every_route(starter: FakeStarter, crawl_id: str, suffix: str) -> None:
    method = "GET" if suffix in ("", "/report") else "POST"
    before = _crawl_count()
    answer = call_api(method, f"/crawls/{crawl_id}{suffix}")
    assert answer.status == 404, answer.raw
    assert answer.body["error"] == "not_found"
    assert _crawl_count() == before


def test_frontier_switch_item_is_never_modified(starter: FakeStarter, control_cloud: LocalCloud) -> None:
    call_api("POST", "/crawls/__frontier__/pause")
    item = _item("__frontier__")
    assert item is None or "status" not in item


def test_operator_switch_pauses_and_resumes_the_whole_frontier(starter: FakeStarter) -> None:
    assert call_api("POST", "/frontier/resume").body == {"paused": False}
    assert call_api("GET", "/frontier").body == {"paused": False}
    assert call_api("POST", "/frontier/pause").body == {"paused": True}
    stored = _item("__frontier__")
    assert stored is not None and stored["paused"] == {"BOOL": True}  # what every worker reads
    assert call_api("GET", "/frontier").body == {"paused": True}
    assert call_api("POST", "/frontier/resume").body == {"paused": False}
    resumed = _item("__frontier__")
    assert resumed is not None and resumed["paused"] == {"BOOL": False}


def test_unknown_route_and_method(starter: FakeStarter) -> None:
    assert call_api("GET", "/nothing").status == 404
    assert call_api("DELETE", "/crawls").status == 404


# ------------------------------------------------------------------ pause / resume / cancel
def test_pause_resume_cancel_transitions(starter: FakeStarter) -> None:
    crawl_id = _start(starter)
    paused = call_api("POST", f"/crawls/{crawl_id}/pause")
    assert paused.status == 200 and paused.body["status"] == "PAUSED"
    assert _item(crawl_id)["status"]["S"] == "PAUSED"  # type: ignore[index]
    again = call_api("POST", f"/crawls/{crawl_id}/pause")
    assert (
        again.status == 409 and again.body["error"] == "status_conflict" and "PAUSED" in again.body["message"]
    )
    resumed = call_api("POST", f"/crawls/{crawl_id}/resume")
    assert resumed.status == 200 and resumed.body["status"] == "RUNNING"
    assert _item(crawl_id)["status"]["S"] == "RUNNING"  # type: ignore[index]
    assert call_api("POST", f"/crawls/{crawl_id}/resume").status == 409
    cancelled = call_api("POST", f"/crawls/{crawl_id}/cancel")
    assert cancelled.status == 200 and cancelled.body["status"] == "CANCELLED"
    item = _item(crawl_id)
    assert item is not None and item["status"]["S"] == "CANCELLED" and "finished_at" in item
    for action in ("pause", "resume", "cancel"):
        answer = call_api("POST", f"/crawls/{crawl_id}/{action}")
        assert answer.status == 409, (action, answer.raw)
        assert "CANCELLED" in answer.body["message"]
    assert _item(crawl_id)["status"]["S"] == "CANCELLED"  # type: ignore[index]


def test_cancel_a_paused_crawl_and_no_transition_out_of_completed(starter: FakeStarter) -> None:
    crawl_id = _start(starter)
    assert call_api("POST", f"/crawls/{crawl_id}/pause").status == 200
    assert call_api("POST", f"/crawls/{crawl_id}/cancel").status == 200
    done = _start(starter)
    _ddb().update_item(
        TableName=os.environ["CRAWLS_TABLE"],
        Key={"crawl_id": {"S": done}},
        UpdateExpression="SET #s = :c",
        ExpressionAttributeNames={"#s": "status"},
        ExpressionAttributeValues={":c": {"S": "COMPLETED"}},
    )
    for action in ("pause", "resume", "cancel"):
        assert call_api("POST", f"/crawls/{done}/{action}").status == 409
    assert _item(done)["status"]["S"] == "COMPLETED"  # type: ignore[index]


# ------------------------------------------------------------------ report
def test_report_links_are_short_lived_presigned_urls_to_the_objects(starter: FakeStarter) -> None:
    crawl_id = _start(starter)
    not_ready = call_api("GET", f"/crawls/{crawl_id}/report")
    assert not_ready.status == 409 and not_ready.body["error"] == "report_not_ready"
    s3 = boto3.client("s3")
    bucket = os.environ["RESULTS_BUCKET"]
    bodies = {
        "report.json": b'{"summary": {"urls": 3}}',
        "findings.csv": b"code,severity,url\nX,warning,https://a/\n",
    }
    for name, data in bodies.items():
        s3.put_object(Bucket=bucket, Key=f"crawls/{crawl_id}/report/{name}", Body=data)
    s3.put_object(Bucket=bucket, Key=f"crawls/{crawl_id}/pages/p1.jsonl", Body=b"{}\n")  # not a report object
    answer = call_api("GET", f"/crawls/{crawl_id}/report")
    assert answer.status == 200, answer.raw
    assert answer.body["expires_in_s"] == 900
    files = {f["name"]: f["url"] for f in answer.body["files"]}
    assert set(files) == set(bodies)
    for name, url in files.items():
        query = parse_qs(urlsplit(url).query)
        assert query.get("X-Amz-Expires") == ["900"] or query.get("Expires"), url
        assert urlsplit(url).hostname in ("127.0.0.1", "localhost") or "127.0.0.1" in url
        with urllib.request.urlopen(url, timeout=10) as resp:  # the moto server on 127.0.0.1
            assert resp.read() == bodies[name]


# ------------------------------------------------------------------ OpenAPI
def test_openapi_document_is_in_sync() -> None:
    from functions.api import openapi_json

    checked_in = json.loads((REPO / "docs" / "openapi.json").read_text())
    assert checked_in == json.loads(openapi_json()), "regenerate: python -m functions.api > docs/openapi.json"
    paths = checked_in["paths"]
    assert set(paths) == {
        "/crawls",
        "/crawls/{id}",
        "/crawls/{id}/pause",
        "/crawls/{id}/resume",
        "/crawls/{id}/cancel",
        "/crawls/{id}/report",
        "/frontier",
        "/frontier/pause",
        "/frontier/resume",
    }
    assert "202" in paths["/crawls"]["post"]["responses"]
    assert "allow_hosts" not in json.dumps(checked_in["components"]["schemas"]["StartCrawlRequest"])


def test_openapi_routes_match_the_template() -> None:
    import yaml

    class _Loader(yaml.SafeLoader):  # type: ignore[misc]
        pass

    _Loader.add_multi_constructor("!", lambda loader, suffix, node: None)
    template = yaml.load((REPO / "template.yaml").read_text(), Loader=_Loader)
    events = template["Resources"]["ApiFunction"]["Properties"]["Events"].values()
    routes = {(e["Properties"]["Method"].lower(), e["Properties"]["Path"]) for e in events}
    document = json.loads((REPO / "docs" / "openapi.json").read_text())
    documented = {(m, p) for p, ops in document["paths"].items() for m in ops}
    assert routes == documented


# ------------------------------------------------------------------ Step Functions adapter
def test_step_functions_starter_starts_a_named_execution_once(control_cloud: LocalCloud) -> None:
    from seolens_core.bootstrap import container
    from seolens_core.control import StepFunctionsStarter

    app = container()
    arn = os.environ.get("STATE_MACHINE_ARN")
    assert arn, "the deployed ApiFunction environment names the state machine"
    real = StepFunctionsStarter(app.clients.stepfunctions, arn)
    crawl_id = f"sfn{int(time.time() * 1000)}"
    execution_arn = app.run(real.start(crawl_id))
    described = boto3.client("stepfunctions").describe_execution(executionArn=execution_arn)
    assert described["name"] == crawl_id
    assert json.loads(described["input"]) == {"crawl_id": crawl_id}
    assert described["stateMachineArn"] == arn
    # A retried start (same name, same input) is idempotent in Step Functions: still one execution.
    try:
        again: str | None = app.run(real.start(crawl_id))
    except ExecutionStartFailed:
        again = None
    assert again in (None, execution_arn)
    executions = boto3.client("stepfunctions").list_executions(stateMachineArn=arn)["executions"]
    assert [e["name"] for e in executions].count(crawl_id) == 1
    with pytest.raises(ExecutionStartFailed):
        app.run(StepFunctionsStarter(app.clients.stepfunctions, None).start("x"))


# ------------------------------------------------------------------ callers kept apart
def test_a_caller_sees_and_controls_only_its_own_crawls(starter: FakeStarter) -> None:
    mine = _start(starter)
    theirs = call_api("POST", "/crawls", body=VALID, caller=BOB)
    assert theirs.status == 202
    bobs = theirs.body["crawl_id"]
    assert _item(mine)["owner"]["S"] == ALICE and _item(bobs)["owner"]["S"] == BOB  # type: ignore[index]
    listed = {c["crawl_id"] for c in call_api("GET", "/crawls", query={"limit": "100"}).body["crawls"]}
    assert mine in listed and bobs not in listed
    bob_listed = call_api("GET", "/crawls", query={"limit": "100"}, caller=BOB).body["crawls"]
    assert [c["crawl_id"] for c in bob_listed] == [bobs]
    for method, path in [
        ("GET", f"/crawls/{bobs}"),
        ("POST", f"/crawls/{bobs}/pause"),
        ("POST", f"/crawls/{bobs}/resume"),
        ("POST", f"/crawls/{bobs}/cancel"),
        ("GET", f"/crawls/{bobs}/report"),
    ]:
        answer = call_api(method, path)
        assert answer.status == 404 and answer.body["error"] == "not_found", (method, path, answer.raw)
    assert _item(bobs)["status"]["S"] == "QUEUED"  # type: ignore[index]  # untouched by alice
    assert call_api("POST", f"/crawls/{bobs}/pause", caller=BOB).status == 200


def test_a_request_without_an_iam_identity_is_refused(starter: FakeStarter) -> None:
    before = _crawl_count()
    for method, path in [("POST", "/crawls"), ("GET", "/crawls")]:
        answer = call_api(method, path, body=VALID if method == "POST" else None, caller="")
        assert answer.status == 403 and answer.body["error"] == "forbidden", answer.raw
    assert _crawl_count() == before


def test_the_list_pages_newest_first_past_a_hundred_crawls(starter: FakeStarter) -> None:
    """A caller's crawls come from the `by_owner` index a page at a time: newest first however many there are
    (one Scan with a Limit read an arbitrary hundred, then sorted them)."""
    carol = "arn:aws:iam::123456789012:user/carol"
    made = []
    for _ in range(130):
        answer = call_api("POST", "/crawls", body=VALID, caller=carol)
        assert answer.status == 202
        made.append(answer.body["crawl_id"])
    seen: list[dict[str, Any]] = []
    query = {"limit": "40"}
    for _ in range(10):
        page = call_api("GET", "/crawls", query=query, caller=carol)
        assert page.status == 200 and len(page.body["crawls"]) <= 40
        seen += page.body["crawls"]
        if page.body["next_cursor"] is None:
            break
        query = {"limit": "40", "cursor": page.body["next_cursor"]}
    ids = [c["crawl_id"] for c in seen]
    assert sorted(ids) == sorted(made) and len(ids) == len(set(ids))
    created = [c["created_at"] for c in seen]
    assert created == sorted(created, reverse=True)
    cancelled = made[5]
    assert call_api("POST", f"/crawls/{cancelled}/cancel", caller=carol).status == 200
    only = call_api("GET", "/crawls", query={"status": "CANCELLED", "limit": "10"}, caller=carol)
    assert [c["crawl_id"] for c in only.body["crawls"]] == [cancelled]
    # A cursor is the caller's own: one made for another list is refused, never read as that list.
    first = call_api("GET", "/crawls", query={"limit": "1"}, caller=carol).body["next_cursor"]
    for cursor in (first, "not-a-cursor"):
        refused = call_api("GET", "/crawls", query={"cursor": cursor})
        assert refused.status == 422 and "cursor" in refused.body["message"], refused.raw


def test_the_frontier_switch_has_its_own_operator_policy() -> None:
    """`/frontier*` pauses every crawl: callers get a policy for `/crawls*` only, operators one for it."""
    from infra.local.template import load_template

    resources = load_template(REPO / "template.yaml")["Resources"]

    def routes(name: str) -> set[str]:
        statement = resources[name]["Properties"]["PolicyDocument"]["Statement"]
        assert all(s["Action"] == "execute-api:Invoke" for s in statement)
        return {r["Fn::Sub"].rsplit("}", 1)[1] for s in statement for r in s["Resource"]}

    assert routes("CrawlApiCallerPolicy") == {"/*/*/crawls", "/*/*/crawls/*"}
    assert routes("CrawlApiOperatorPolicy") == {"/*/*/frontier", "/*/*/frontier/*"}
    document = json.loads((REPO / "docs" / "openapi.json").read_text())
    for path, operations in document["paths"].items():
        for operation in operations.values():
            assert ("CrawlApiOperatorPolicy" in operation["summary"]) == path.startswith("/frontier"), path


def test_the_openapi_document_names_its_security_and_every_error() -> None:
    document = json.loads((REPO / "docs" / "openapi.json").read_text())
    scheme = document["components"]["securitySchemes"]["sigv4"]
    assert (scheme["type"], scheme["in"], scheme["name"]) == ("apiKey", "header", "Authorization")
    assert scheme["x-amazon-apigateway-authtype"] == "awsSigv4"
    assert document["security"] == [{"sigv4": []}]
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            assert {"403", "422", "500"} <= set(operation["responses"]), (method, path)
