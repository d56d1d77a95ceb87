"""List-price arithmetic of a crawl: calls -> billed units -> dollars, checked by hand."""

from __future__ import annotations

import pytest

from seolens_core.costs import Usage, billed_units, cost_of


def test_units_and_dollars_by_hand() -> None:
    usage = Usage(
        calls={
            "sqs.SendMessageBatch": 10,
            "sqs.ReceiveMessage": 20,
            "dynamodb.PutItem": 100,
            "dynamodb.BatchWriteItem": 4,
            "dynamodb.GetItem": 50,
            "s3.PutObject": 8,
            "s3.GetObject": 3,
            "s3.DeleteObject": 5,
            "kinesis.PutRecord": 1,
        },
        batch_items={"BatchWriteItem": 25.0},
        lambda_invocations=30,
        lambda_gb_seconds=12.0,
        sfn_transitions=40,
    )
    units = billed_units(usage)
    assert units.sqs_requests == 30
    assert units.dynamodb_wru == 100 + 4 * 25
    assert units.dynamodb_rru == 50
    assert (units.s3_put_requests, units.s3_get_requests) == (8, 3)  # deletes are free
    assert units.unpriced == ("kinesis.PutRecord",)  # counted, never silently priced at zero
    cost = cost_of(units)
    assert cost.sqs == pytest.approx(30 * 0.40 / 1e6)
    assert cost.dynamodb == pytest.approx(200 * 0.625 / 1e6 + 50 * 0.125 / 1e6)
    assert cost.lambda_ == pytest.approx(12.0 * 0.0000166667 + 30 * 0.20 / 1e6)
    assert cost.step_functions == pytest.approx(40 * 0.025 / 1000)
    assert cost.s3 == pytest.approx(8 * 0.005 / 1000 + 3 * 0.0004 / 1000)
    assert cost.as_dict()["total"] == pytest.approx(
        cost.sqs + cost.dynamodb + cost.lambda_ + cost.step_functions + cost.s3
    )


def test_single_item_writes_bill_their_metered_units() -> None:
    """A pacing item of 2.5 KB returned by its update bills 3 units, as AWS bills the item's size."""
    units = billed_units(
        Usage(calls={"dynamodb.UpdateItem": 10, "dynamodb.PutItem": 2}, batch_items={"UpdateItem": 2.5})
    )
    assert units.dynamodb_wru == 10 * 2.5 + 2


def test_queries_bill_their_metered_read_units_and_a_get_one() -> None:
    """A query page of a whole partition is metered by the items it examined; without a figure, one unit."""
    units = billed_units(
        Usage(
            calls={"dynamodb.Query": 4, "dynamodb.Scan": 1, "dynamodb.GetItem": 3},
            batch_items={"Query": 90.5},
        )
    )
    assert units.dynamodb_rru == 4 * 90.5 + 1 + 3


def test_a_partiql_batch_bills_write_units_once_where_a_transaction_bills_twice() -> None:
    from seolens_core.costs import Usage, billed_units

    batch = billed_units(Usage({"dynamodb.BatchExecuteStatement": 4}, {"BatchExecuteStatement": 25.0}))
    transaction = billed_units(Usage({"dynamodb.TransactWriteItems": 1}, {"TransactWriteItems": 100.0}))
    assert batch.dynamodb_wru == transaction.dynamodb_wru / 2 == 100.0
    assert batch.unpriced == ()
    assert billed_units(Usage({"dynamodb.BatchExecuteStatement": 2})).dynamodb_wru == 50.0  # unknown: 25
