"""Patch 27: a PartiQL batch of single-item writes runs as DynamoDB's own conditional writes.

Upstream cannot run these statements at all (it fails on a `?` parameter), so the reference is DynamoDB's
documented behaviour and moto's own PutItem / UpdateItem with the equivalent ConditionExpression.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from infra.local import moto_partiql, moto_patches
from infra.local.runtime import TEMPLATE
from infra.local.template import load_template
from seolens_core.adapters.urls import UrlStore
from seolens_core.frontier import FrontierMessage
from seolens_core.urls import url_key_hex

TABLE = "urls"
UPDATE = (
    f'UPDATE "{TABLE}" SET url_state = ? SET lease_until = ? WHERE crawl_id = ? AND url_key = ? AND ({{}})'
)


@pytest.fixture
def ddb(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB"):
        monkeypatch.delenv(name, raising=False)  # a local cloud of another test: not here, in-process
    moto_patches.apply()
    with mock_aws():
        client = boto3.client("dynamodb", region_name="us-east-1")
        # Another test's mock may still hold the backend (the suite's order): start from no table.
        with contextlib.suppress(client.exceptions.ResourceNotFoundException):
            client.delete_table(TableName=TABLE)
        urls = load_template(TEMPLATE)["Resources"]["UrlsTable"]["Properties"]  # the crawler's URLs table
        client.create_table(
            TableName=TABLE,
            **{k: urls[k] for k in ("KeySchema", "AttributeDefinitions", "BillingMode")},
        )
        yield client
        client.delete_table(TableName=TABLE)


def _msg(path: str) -> FrontierMessage:
    url = f"http://127.0.0.1:8000{path}"
    return FrontierMessage(crawl_id="c1", url=url, key=url_key_hex(url), depth=2, parent="p1", sitemap=True)


def _key(key: str) -> dict[str, Any]:
    return {"crawl_id": {"S": "c1"}, "url_key": {"S": key}}


def _item(client: Any, key: str) -> dict[str, Any] | None:
    found: dict[str, Any] | None = client.get_item(TableName=TABLE, Key=_key(key), ConsistentRead=True).get(
        "Item"
    )
    return found


def test_inserts_create_items_and_a_duplicate_key_is_refused_alone(ddb: Any) -> None:
    store = UrlStore(ddb, TABLE)
    messages = [_msg(f"/p{i}") for i in range(25)]
    first = ddb.batch_execute_statement(Statements=[store._insert(m, "h", 5.0) for m in messages[:3]])
    assert first["Responses"] == [{"TableName": TABLE}] * 3
    stored = _item(ddb, messages[0].key)
    assert stored == store._item(messages[0], "h", 5.0, done_outcome=None)  # every attribute, as put

    changed = [store._insert(m, "other-host", 9.0) for m in messages]  # 3 exist, 22 are new
    answer = ddb.batch_execute_statement(Statements=changed)["Responses"]
    assert [r.get("Error", {}).get("Code") for r in answer] == ["DuplicateItem"] * 3 + [None] * 22
    assert "Item" not in answer[0]["Error"]  # INSERT answers no item, whatever was asked
    assert _item(ddb, messages[0].key) == stored  # a refused INSERT changes nothing
    assert _item(ddb, messages[24].key) == store._item(messages[24], "other-host", 9.0, done_outcome=None)


def test_an_update_changes_an_existing_item_under_its_condition(ddb: Any) -> None:
    store = UrlStore(ddb, TABLE)
    queued, fetching, missing = _msg("/q"), _msg("/f"), _msg("/m")
    ddb.batch_execute_statement(Statements=[store._insert(m, "h", 1.0) for m in (queued, fetching)])
    ddb.update_item(TableName=TABLE, Key=_key(fetching.key), **_set_fetching(until=50.0))

    leases = [store._lease_statement(m, now=20.0, lease_s=30.0) for m in (queued, fetching, missing)]
    answer = ddb.batch_execute_statement(Statements=leases)["Responses"]
    assert answer[0] == {"TableName": TABLE}
    assert (_item(ddb, queued.key) or {})["lease_until"] == {"N": "50.0"}
    refused = answer[1]["Error"]
    assert refused["Code"] == "ConditionalCheckFailed"
    assert refused["Item"] == _item(ddb, fetching.key)  # ALL_OLD: the item the condition saw
    # No item: a PartiQL UPDATE does not create one (an UpdateItem would), and has no item to answer.
    assert answer[2] == {
        "Error": {"Code": "ConditionalCheckFailed", "Message": "The conditional request failed"}
    }
    assert _item(ddb, missing.key) is None
    holds_when_missing = {
        "Statement": UPDATE.format("lease_until IS MISSING"),
        "Parameters": [{"S": "fetching"}, {"N": "7"}, {"S": "c1"}, {"S": missing.key}],
    }
    answer = ddb.batch_execute_statement(Statements=[holds_when_missing])["Responses"]
    assert answer[0]["Error"]["Code"] == "ConditionalCheckFailed"  # the item must exist, whatever else
    assert _item(ddb, missing.key) is None

    without_old = {k: v for k, v in leases[1].items() if k != "ReturnValuesOnConditionCheckFailure"}
    assert "Item" not in ddb.batch_execute_statement(Statements=[without_old])["Responses"][0]["Error"]
    later = store._lease_statement(fetching, now=60.0, lease_s=30.0)  # the other lease has ended
    assert ddb.batch_execute_statement(Statements=[later])["Responses"] == [{"TableName": TABLE}]


def _set_fetching(until: float) -> dict[str, Any]:
    return {
        "UpdateExpression": "SET url_state = :f, lease_until = :l",
        "ExpressionAttributeValues": {":f": {"S": "fetching"}, ":l": {"N": repr(until)}},
    }


CONDITIONS = [
    ("url_state = ?", "#s = :a", [{"S": "queued"}]),
    ("url_state <> ?", "#s <> :a", [{"S": "queued"}]),
    ("depth < ?", "#d < :a", [{"N": "3"}]),
    ("depth <= 2", "#d <= :two", []),
    ("depth >= ? AND NOT url_state = 'done'", "#d >= :a AND NOT #s = :done", [{"N": "2"}]),
    ("depth > 5 OR url_state = 'queued'", "#d > :five OR #s = :queued", []),
    ("lease_until IS MISSING", "attribute_not_exists(#l)", []),
    ('"lease_until" IS NOT MISSING', "attribute_exists(#l)", []),
    (
        "(url_state = 'it''s' OR depth = ?) AND host = ?",
        "(#s = :its OR #d = :a) AND #h = :b",
        [{"N": "2"}, {"S": "h"}],
    ),
    ("NOT (depth = 2 AND host = 'h')", "NOT (#d = :two AND #h = :h)", []),
]
LITERALS = {
    ":two": {"N": "2"},
    ":five": {"N": "5"},
    ":done": {"S": "done"},
    ":queued": {"S": "queued"},
    ":its": {"S": "it's"},
    ":h": {"S": "h"},
}


@pytest.mark.parametrize(("where", "expression", "values"), CONDITIONS)
def test_each_condition_decides_as_the_equivalent_update_item(
    ddb: Any, where: str, expression: str, values: list[dict[str, Any]]
) -> None:
    store = UrlStore(ddb, TABLE)
    twin_a, twin_b = _msg("/a"), _msg("/b")
    ddb.batch_execute_statement(Statements=[store._insert(m, "h", 1.0) for m in (twin_a, twin_b)])
    statement = {
        "Statement": UPDATE.format(where),
        "Parameters": [{"S": "fetching"}, {"N": "7"}, {"S": "c1"}, {"S": twin_a.key}, *values],
    }
    answer = ddb.batch_execute_statement(Statements=[statement])["Responses"][0]
    names = {"#s": "url_state", "#d": "depth", "#l": "lease_until", "#h": "host"}
    used = {k: v for k, v in names.items() if k in expression}
    placeholders = {f":{chr(ord('a') + i)}": v for i, v in enumerate(values)}
    attribute_values = {**{k: v for k, v in LITERALS.items() if k in expression}, **placeholders}
    try:
        ddb.update_item(
            TableName=TABLE,
            Key=_key(twin_b.key),
            UpdateExpression="SET url_state = :f0, lease_until = :l0",
            ConditionExpression=expression,
            ExpressionAttributeNames=used,
            ExpressionAttributeValues={**attribute_values, ":f0": {"S": "fetching"}, ":l0": {"N": "7"}},
        )
        expected_ok = True
    except ClientError as exc:
        assert exc.response["Error"]["Code"] == "ConditionalCheckFailedException"
        expected_ok = False
    assert ("Error" not in answer) == expected_ok, (where, answer)
    after_a, after_b = _item(ddb, twin_a.key) or {}, _item(ddb, twin_b.key) or {}
    own = ("url_key", "url")  # the twins' only difference
    assert {k: v for k, v in after_a.items() if k not in own} == {
        k: v for k, v in after_b.items() if k not in own
    }
    assert (after_a["url_state"] == {"S": "fetching"}) == expected_ok


def test_statements_outside_the_subset_go_to_upstream(ddb: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[dict[str, Any]]] = []

    def upstream(self: Any, statements: list[dict[str, Any]]) -> list[dict[str, Any]]:
        seen.append(statements)
        return [{"TableName": TABLE}] * len(statements)

    from moto.dynamodb.models import DynamoDBBackend

    monkeypatch.setattr(
        DynamoDBBackend, "batch_execute_statement", moto_partiql.batch_execute_statement(upstream)
    )
    insert = UrlStore(ddb, TABLE)._insert(_msg("/x"), "h", 1.0)
    others = [
        {
            "Statement": f'SELECT * FROM "{TABLE}" WHERE crawl_id = ? AND url_key = ?',
            "Parameters": [{"S": "c1"}] * 2,
        },
        {
            "Statement": f'DELETE FROM "{TABLE}" WHERE crawl_id = ? AND url_key = ?',
            "Parameters": [{"S": "c1"}] * 2,
        },
        {
            "Statement": f'UPDATE "{TABLE}" SET a.b = ? WHERE crawl_id = ? AND url_key = ?',
            "Parameters": [{"S": "1"}] * 3,
        },
        {
            "Statement": f'UPDATE "{TABLE}" SET a = ? WHERE crawl_id = ?',
            "Parameters": [{"S": "1"}, {"S": "c1"}],
        },
        {"Statement": "INSERT INTO \"no-such-table\" VALUE {'k': ?}", "Parameters": [{"S": "1"}]},
    ]
    for other in others:
        ddb.batch_execute_statement(Statements=[insert, other])  # one statement outside: the whole batch
    assert len(seen) == len(others)
    assert _item(ddb, _msg("/x").key) is None  # nothing of it ran here
    ddb.batch_execute_statement(Statements=[insert])
    assert len(seen) == len(others) and _item(ddb, _msg("/x").key) is not None


def test_limits_and_parameter_counts_are_checked(ddb: Any) -> None:
    store = UrlStore(ddb, TABLE)
    too_many = [store._insert(_msg(f"/l{i}"), "h", 1.0) for i in range(26)]
    with pytest.raises(ClientError) as raised:
        ddb.batch_execute_statement(Statements=too_many)
    assert raised.value.response["Error"]["Code"] == "ValidationException"
    assert _item(ddb, _msg("/l0").key) is None
    short = dict(too_many[0], Parameters=too_many[0]["Parameters"][:-1])
    lease = store._lease_statement(_msg("/l1"), now=5.0, lease_s=30.0)
    short_lease = dict(lease, Parameters=lease["Parameters"][:3])  # not even the whole key
    answer = ddb.batch_execute_statement(Statements=[short, too_many[1], short_lease])["Responses"]
    assert answer[0]["Error"]["Code"] == "ValidationError"
    assert answer[1] == {"TableName": TABLE}
    assert answer[2]["Error"]["Code"] == "ValidationError"
    assert (_item(ddb, _msg("/l1").key) or {})["url_state"] == {"S": "queued"}


def test_a_statement_is_parsed_once_per_text() -> None:
    text = UPDATE.format("url_state = ?")
    assert moto_partiql.parse(text) is moto_partiql.parse(text)
    with pytest.raises(moto_partiql.Unsupported):
        moto_partiql.parse(f"INSERT INTO \"{TABLE}\" VALUE {{'a': ?, 'a': ?}}")  # a name twice
    with pytest.raises(moto_partiql.Unsupported):
        moto_partiql.parse(f'UPDATE "{TABLE}" SET a = ? WHERE b = ? extra')
