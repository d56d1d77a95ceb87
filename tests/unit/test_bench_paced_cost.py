"""bench_paced_cost's breakdown: each DynamoDB call named by what it does, with the items it bills."""

from __future__ import annotations

from benchmarks.bench_paced_cost import purpose

URLS = "seolens-UrlsTable-ABC123"


def test_a_partiql_batch_is_named_by_its_statements_and_bills_one_item_each() -> None:
    statements = [{"Statement": f"INSERT INTO \"{URLS}\" VALUE {{'crawl_id': ?}}"}] * 3 + [
        {"Statement": f'UPDATE "{URLS}" SET "url_state" = ? WHERE "crawl_id" = ?'}
    ]
    name, items = purpose("BatchExecuteStatement", {"Statements": statements})
    assert (name, items) == ("BatchExecuteStatement: INSERT UrlsTable + UPDATE UrlsTable", 4)


def test_a_conditional_update_is_named_by_its_table_and_expression() -> None:
    name, items = purpose(
        "UpdateItem",
        {"TableName": URLS, "UpdateExpression": "SET #s = :s", "ConditionExpression": "attribute_exists(k)"},
    )
    assert (name, items) == ("UpdateItem UrlsTable SET ? = ?", 1)
