"""Write units a request does not show: index writes and stored item sizes, on the template's own tables."""

from __future__ import annotations

from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from infra.local.runtime import TEMPLATE
from infra.local.template import load_template
from seolens_core.adapters._metering import INDEX_WRITES, CallMeter
from seolens_core.adapters._stored_units import SecondaryIndex, StoredItems, TableSchema, touched_names
from seolens_core.adapters.urls import UrlStore
from seolens_core.frontier import FrontierMessage

URLS, CRAWLS = "urls-t", "crawls-t"


def _sparse_index_urls() -> dict[str, Any]:
    """The URLs table as it was up to 2026-12-02, with a sparse index on `pending_crawl`: the template dropped
    the index (two write units a URL), the meter must still count it for any table that has one."""
    properties = dict(load_template(TEMPLATE)["Resources"]["UrlsTable"]["Properties"])
    properties["GlobalSecondaryIndexes"] = [
        {
            "IndexName": "pending",
            "KeySchema": [
                {"AttributeName": "pending_crawl", "KeyType": "HASH"},
                {"AttributeName": "url_key", "KeyType": "RANGE"},
            ],
            "Projection": {"ProjectionType": "INCLUDE", "NonKeyAttributes": ["url", "depth", "host"]},
        }
    ]
    return properties


def _schemas() -> dict[str, TableSchema]:
    resources = load_template(TEMPLATE)["Resources"]
    return {
        URLS: TableSchema.from_description(_sparse_index_urls()),
        CRAWLS: TableSchema.from_description(resources["CrawlsTable"]["Properties"]),
    }


def _units(stored: StoredItems, operation: str, params: dict[str, Any]) -> int:
    return sum(stored.apply(w) for w in stored.writes(operation, params))


def test_update_expressions_name_the_attributes_they_touch() -> None:
    written, removed = touched_names(
        "SET url_state = :done, #u = if_not_exists(#u, :url), m.a[2] = :x REMOVE pending_crawl, lease_until"
        " ADD n_fetched :one, #c :two",
        {"#u": "url", "#c": "n_links"},
    )
    assert written == {"url_state", "url", "m", "n_fetched", "n_links"}
    assert removed == {"pending_crawl", "lease_until"}
    # placeholders that spell a clause keyword are values, not clauses
    assert touched_names("SET a = :set, #add = :remove", {"#add": "b"}) == ({"a", "b"}, frozenset())


def test_schemas_come_from_the_template() -> None:
    resources = load_template(TEMPLATE)["Resources"]
    urls = TableSchema.from_description(resources["UrlsTable"]["Properties"])
    assert urls.keys == ("crawl_id", "url_key") and urls.indexes == ()
    crawls = {index.name: index for index in _schemas()[CRAWLS].indexes}
    assert crawls["by_site"].keys == {"site", "created_at"} and crawls["by_site"].projected == {"status"}
    assert crawls["by_owner"].keys == {"owner", "created_at"} and crawls["by_owner"].projected == {"status"}
    (pending,) = _schemas()[URLS].indexes
    assert pending.keys == {"pending_crawl", "url_key"} and pending.projected == {"url", "depth", "host"}


def test_the_template_urls_table_costs_no_index_writes() -> None:
    resources = load_template(TEMPLATE)["Resources"]
    stored = StoredItems({URLS: TableSchema.from_description(resources["UrlsTable"]["Properties"])})
    store = UrlStore(None, URLS)
    msg = FrontierMessage(crawl_id="c1", url="https://a.test/x", key="00ff", depth=1, parent="p1")
    claim = {"TableName": URLS, **store._create(msg, "a.test", 1.0)}
    assert _units(stored, "PutItem", claim) == 0
    done = store._item(msg, "a.test", 3.0, done_outcome="fetched")
    assert _units(stored, "BatchWriteItem", {"RequestItems": {URLS: [{"PutRequest": {"Item": done}}]}}) == 0


def test_a_url_enters_and_leaves_the_pending_index_once_each() -> None:
    store = UrlStore(None, URLS)
    stored = StoredItems(_schemas())
    msg = FrontierMessage(crawl_id="c1", url="https://a.test/x", key="00ff", depth=1, parent="p1")
    claim = {"TransactItems": [{"Put": store._create(msg, "a.test", 1.0)}]}
    assert _units(stored, "TransactWriteItems", claim) == 1
    lease = store._lease_update(msg, 2.0, 60.0)  # url_state, lease_until: not in the index
    assert _units(stored, "UpdateItem", lease) == 0
    done = store._item(msg, "a.test", 3.0, done_outcome="fetched")
    finish = {"RequestItems": {URLS: [{"PutRequest": {"Item": done}}]}}
    assert _units(stored, "BatchWriteItem", finish) == 1  # leaves the index
    assert _units(stored, "BatchWriteItem", finish) == 0  # already out of it
    dead = {"TransactItems": [store.dead_letter_finish(msg, "a.test", "dead_letter")]}
    assert _units(stored, "TransactWriteItems", dead) == 0


def test_a_url_never_seen_is_taken_as_pending_when_finished() -> None:
    store = UrlStore(None, URLS)
    stored = StoredItems(_schemas())
    msg = FrontierMessage(crawl_id="c1", url="https://a.test/y", key="01ff", depth=1)
    dead = {"TransactItems": [store.dead_letter_finish(msg, "a.test", "dead_letter")]}
    assert _units(stored, "TransactWriteItems", dead) == 1


def _crawl_item() -> dict[str, Any]:
    return {
        "crawl_id": {"S": "c1"},
        "site": {"S": "https://a.test"},
        "created_at": {"S": "2026-12-02T00:00:00Z"},
        "owner": {"S": "arn:aws:iam::123456789012:user/alice"},
        "status": {"S": "RUNNING"},
        "settings": {"S": "x" * 2500},
    }


def _counters_update() -> dict[str, Any]:
    return {
        "TableName": CRAWLS,
        "Key": {"crawl_id": {"S": "c1"}},
        "UpdateExpression": "ADD #c0 :v0",
        "ExpressionAttributeNames": {"#c0": "n_fetched"},
    }


def test_an_index_of_every_attribute_copies_each_update_of_the_item() -> None:
    every = TableSchema(("crawl_id",), (SecondaryIndex("all", frozenset({"site", "created_at"}), None),))
    stored = StoredItems({CRAWLS: every})
    assert _units(stored, "PutItem", {"TableName": CRAWLS, "Item": _crawl_item()}) == 3
    (write,) = stored.writes("UpdateItem", _counters_update())
    assert stored.stored_units(write) == 3  # the stored item's size, not the request's
    assert stored.apply(write) == 3


def test_the_crawls_index_copies_status_changes_not_counter_updates() -> None:
    stored = StoredItems(_schemas())
    # by_site and by_owner each copy the keys and status (one unit each), never the counters
    assert _units(stored, "PutItem", {"TableName": CRAWLS, "Item": _crawl_item()}) == 2
    assert _units(stored, "UpdateItem", _counters_update()) == 0
    status = {
        "TableName": CRAWLS,
        "Key": {"crawl_id": {"S": "c1"}},
        "UpdateExpression": "SET #s = :s",
        "ExpressionAttributeNames": {"#s": "status"},
    }
    assert _units(stored, "UpdateItem", status) == 2


def test_the_meter_counts_index_writes_only_for_writes_that_succeeded() -> None:
    client = boto3.client(
        "dynamodb", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="y"
    )
    meter = CallMeter()
    meter.attach(client)
    meter.know_tables(_schemas())
    store = UrlStore(None, URLS)
    msgs = [
        FrontierMessage(crawl_id="c1", url=f"https://a.test/{i}", key=f"{i:04x}", depth=1) for i in range(3)
    ]
    claims = [{"Put": store._create(m, "a.test", 1.0)} for m in msgs]
    crawl = {"crawl_id": {"S": "c1"}, "site": {"S": "s"}, "created_at": {"S": "t"}, "x": {"S": "y" * 1500}}
    with Stubber(client) as stub:
        stub.add_client_error("transact_write_items", "TransactionCanceledException", http_status_code=400)
        stub.add_response("transact_write_items", {})
        stub.add_response("put_item", {})
        stub.add_response("transact_write_items", {})
        with pytest.raises(client.exceptions.TransactionCanceledException):
            client.transact_write_items(TransactItems=claims)  # cancelled: nothing written
        client.transact_write_items(TransactItems=claims)
        client.put_item(TableName=CRAWLS, Item=crawl)
        client.transact_write_items(
            TransactItems=[
                {
                    "Update": {
                        "TableName": CRAWLS,
                        "Key": {"crawl_id": {"S": "c1"}},
                        "UpdateExpression": "ADD n_fetched :one",
                        "ExpressionAttributeValues": {":one": {"N": "1"}},
                    }
                }
            ]
        )
    items = meter.items()
    # three claims and the crawl put: by_site, and by_owner, which may have held an item under that key before
    # (a put of an unseen item is counted as replacing one); its counter update: none
    assert items[INDEX_WRITES] == 3 + 2
    # the update inside the transaction is billed by the stored item's size (2 KB), not as one unit
    assert items["dynamodb.TransactWriteItems"] == 3 + 3 + 2
    # without the tables' schemas (in Lambda), no index writes are counted
    plain = CallMeter()
    plain.attach(client)
    with Stubber(client) as stub:
        stub.add_response("transact_write_items", {})
        client.transact_write_items(TransactItems=claims)
    assert INDEX_WRITES not in plain.items()
