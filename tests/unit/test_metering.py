"""CallMeter counts calls and, for DynamoDB batches and transactions, the items they carry (billing is per item)."""

from __future__ import annotations

import boto3
import pytest
from botocore.stub import Stubber

from seolens_core.adapters._metering import CallMeter, batch_size
from seolens_core.adapters._stored_units import item_size, write_units


def test_batch_sizes_per_operation() -> None:
    delete = {"DeleteRequest": {"Key": {"k": {"S": "a"}}}}
    assert batch_size("BatchWriteItem", {"RequestItems": {"a": [delete, delete], "b": [delete]}}) == 3
    assert (
        batch_size("BatchGetItem", {"RequestItems": {"a": {"Keys": [1, 2, 3, 4], "ConsistentRead": True}}})
        == 4
    )
    # eventually consistent: half a read unit per item
    assert batch_size("BatchGetItem", {"RequestItems": {"a": {"Keys": [1, 2, 3]}, "b": {"Keys": [4]}}}) == 2.0
    assert batch_size("TransactWriteItems", {"TransactItems": [{"Update": {}}, {"Delete": {}}]}) == 2
    assert batch_size("UpdateItem", {"Key": {}}) is None
    assert batch_size("BatchWriteItem", None) is None


def test_meter_counts_calls_and_items_through_botocore_hooks() -> None:
    client = boto3.client(
        "dynamodb", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="y"
    )
    meter = CallMeter()
    meter.attach(client)
    put = {"PutRequest": {"Item": {"k": {"S": "v"}}}}
    with Stubber(client) as stub:
        stub.add_response("batch_write_item", {})
        stub.add_response("transact_write_items", {})
        client.batch_write_item(RequestItems={"t": [put, put, put]})
        client.transact_write_items(
            TransactItems=[{"Put": {"TableName": "t", "Item": {"k": {"S": "v"}}}}] * 2
        )
    assert meter.snapshot() == {"dynamodb.BatchWriteItem": 1, "dynamodb.TransactWriteItems": 1}
    assert meter.items() == {"dynamodb.BatchWriteItem": 3, "dynamodb.TransactWriteItems": 2}


def test_an_item_put_counts_one_unit_per_started_kilobyte() -> None:
    journal = {"crawl_id": {"S": "c1"}, "key": {"S": "j#1"}, "blob": {"B": b"x" * 3000}}
    assert item_size(journal) == len("crawl_id") + 2 + len("key") + 3 + len("blob") + 3000
    assert write_units(journal) == 3
    small = {
        "k": {"S": "v"},
        "n": {"N": "12345"},
        "l": {"L": [{"BOOL": True}]},
        "m": {"M": {"a": {"NULL": True}}},
    }
    assert write_units(small) == 1
    put = {"PutRequest": {"Item": journal}}
    assert batch_size("BatchWriteItem", {"RequestItems": {"t": [put, {"DeleteRequest": {}}]}}) == 4
    transact = {"TransactItems": [{"Put": {"Item": journal}}, {"Update": {}}, {"ConditionCheck": {}}]}
    assert batch_size("TransactWriteItems", transact) == 5


def test_single_item_writes_are_sized_from_the_item_put_or_answered() -> None:
    client = boto3.client(
        "dynamodb", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="y"
    )
    meter = CallMeter()
    meter.attach(client)
    big = {"host": {"S": "h"}, "leases": {"S": "x" * 2500}}  # 2.5 KB: 3 units
    key = {"host": {"S": "h"}}
    with Stubber(client) as stub:
        stub.add_response("update_item", {"Attributes": big})
        stub.add_response("update_item", {})  # no item in the answer: one unit (a lower bound)
        stub.add_client_error(
            "update_item",
            "ConditionalCheckFailedException",
            http_status_code=400,
            response_meta={},
            modeled_fields={"Item": big},
        )
        stub.add_response("put_item", {})
        client.update_item(TableName="t", Key=key, UpdateExpression="SET a = :a", ReturnValues="ALL_NEW")
        client.update_item(TableName="t", Key=key, UpdateExpression="SET a = :a")
        with pytest.raises(client.exceptions.ConditionalCheckFailedException):
            client.update_item(TableName="t", Key=key, UpdateExpression="SET a = :a")
        client.put_item(TableName="t", Item=big)
    assert meter.snapshot() == {"dynamodb.PutItem": 1, "dynamodb.UpdateItem": 3}
    assert meter.items() == {"dynamodb.PutItem": 3, "dynamodb.UpdateItem": 3 + 1 + 3}


def test_a_query_is_billed_by_the_items_it_examined_not_those_its_filter_kept() -> None:
    """A filtered read of a crawl's partition (the pending URLs) examines every item: 3,000 items at 512 bytes
    are 375 blocks of 4 KB, 187.5 read units eventually consistent, 375 consistent, one item or none 0.5."""
    client = boto3.client(
        "dynamodb", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="y"
    )
    meter = CallMeter()
    meter.attach(client)
    query = {
        "TableName": "t",
        "KeyConditionExpression": "k = :k",
        "ExpressionAttributeValues": {":k": {"S": "a"}},
    }
    with Stubber(client) as stub:
        stub.add_response("query", {"Items": [], "Count": 0, "ScannedCount": 3000})
        stub.add_response("query", {"Items": [], "Count": 0, "ScannedCount": 3000})
        stub.add_response("query", {"Items": [], "Count": 0, "ScannedCount": 0})
        client.query(**query)
        client.query(**query, ConsistentRead=True)
        client.query(**query)
    assert meter.items() == {"dynamodb.Query": 187.5 + 375 + 0.5}


def test_a_partiql_batch_bills_each_statement_once_an_insert_per_started_kilobyte() -> None:
    from seolens_core.adapters.urls import UrlStore
    from seolens_core.frontier import FrontierMessage

    store = UrlStore(client=None, table="urls")
    url = "http://127.0.0.1:8000/" + "x" * 1500  # a long URL: a 2 KB item
    big = FrontierMessage(crawl_id="c1", url=url, key="k1", depth=1)
    small = FrontierMessage(crawl_id="c1", url="http://127.0.0.1:8000/a", key="k2", depth=1)
    statements = [store._insert(big, "h", 1.0), store._insert(small, "h", 1.0)]
    assert write_units(store._item(big, "h", 1.0, done_outcome=None)) == 2
    lease = store._lease_statement(small, 5.0, 30.0)
    assert batch_size("BatchExecuteStatement", {"Statements": [*statements, lease]}) == 2 + 1 + 1
    reads = [
        {"Statement": "SELECT * FROM urls WHERE k = ?"},
        {"Statement": "select 1", "ConsistentRead": True},
    ]
    assert batch_size("BatchExecuteStatement", {"Statements": reads}) == 1.5

    client = boto3.client(
        "dynamodb", region_name="us-east-1", aws_access_key_id="x", aws_secret_access_key="y"
    )
    meter = CallMeter()
    meter.attach(client)
    with Stubber(client) as stub:
        stub.add_response("batch_execute_statement", {"Responses": [{}, {}, {}]})
        client.batch_execute_statement(Statements=[*statements, lease])
    assert meter.snapshot() == {"dynamodb.BatchExecuteStatement": 1}
    assert meter.items() == {"dynamodb.BatchExecuteStatement": 4}
