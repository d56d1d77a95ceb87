"""UrlStore on the moto server: one winner per URL, a retried parent re-sends its children, the fetch lease is
exclusive and expires, and one batch may finish the same URL twice."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import boto3
from aiobotocore.session import get_session

from infra.local.moto_server import EmbeddedMoto
from seolens_core.adapters.crawls import CrawlStore
from seolens_core.adapters.urls import DONE, FETCHING, QUEUED, Journal, UrlStore
from seolens_core.frontier import FrontierMessage
from seolens_core.urls import url_key_hex

CRAWL = "crawl-1"


def _table(endpoint: str) -> str:
    name = f"urls-{uuid.uuid4().hex[:8]}"
    boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1").create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[
            {"AttributeName": "crawl_id", "AttributeType": "S"},
            {"AttributeName": "url_key", "AttributeType": "S"},
            {"AttributeName": "pending_crawl", "AttributeType": "S"},
        ],
        KeySchema=[
            {"AttributeName": "crawl_id", "KeyType": "HASH"},
            {"AttributeName": "url_key", "KeyType": "RANGE"},
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "pending",
                "KeySchema": [
                    {"AttributeName": "pending_crawl", "KeyType": "HASH"},
                    {"AttributeName": "url_key", "KeyType": "RANGE"},
                ],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
    )
    return name


def _msg(path: str, parent: str | None = "p1", depth: int = 1) -> FrontierMessage:
    url = f"http://example.test{path}"
    return FrontierMessage(crawl_id=CRAWL, url=url, key=url_key_hex(url), depth=depth, parent=parent)


async def _state(client: Any, table: str, msg: FrontierMessage) -> str:
    item = await client.get_item(
        TableName=table, Key={"crawl_id": {"S": CRAWL}, "url_key": {"S": msg.key}}, ConsistentRead=True
    )
    return str(item["Item"]["url_state"]["S"])


def test_claim_one_winner_and_parent_resend(moto_server: EmbeddedMoto) -> None:
    async def scenario() -> None:
        async with get_session().create_client(
            "dynamodb", endpoint_url=moto_server.endpoint_url, region_name="us-east-1"
        ) as client:
            table = _table(moto_server.endpoint_url)
            a, b = UrlStore(client, table), UrlStore(client, table)  # two containers
            child = _msg("/x", parent="p1")
            rival = _msg("/x", parent="p2")
            first, second = await asyncio.gather(a.claim([child], ["h"], 0.0), b.claim([rival], ["h"], 0.0))
            assert len(first.new) + len(second.new) == 1  # exactly one writer created the item
            winner_store, winner_msg = (a, child) if first.new else (b, rival)
            # The same parent retried (its batch failed after the claim): it must re-send, not lose the child.
            again = await winner_store.claim([winner_msg], ["h"], 0.0)
            assert again.send == [winner_msg] and again.new == []
            other_store, other_msg = (b, rival) if first.new else (a, child)
            assert (await other_store.claim([other_msg], ["h"], 0.0)).send == []
            pending, more = await a.pending(CRAWL)
            assert [p.key for p in pending] == [child.key] and not more

    asyncio.run(scenario())


def test_fetch_lease_is_exclusive_expires_and_releases(moto_server: EmbeddedMoto) -> None:
    async def scenario() -> None:
        async with get_session().create_client(
            "dynamodb", endpoint_url=moto_server.endpoint_url, region_name="us-east-1"
        ) as client:
            table = _table(moto_server.endpoint_url)
            store = UrlStore(client, table)
            msg = _msg("/page")
            await store.claim([msg], ["h"], 0.0)
            first = await store.claim_fetch(msg, now=100.0, lease_s=30.0)
            assert first.granted and await _state(client, table, msg) == FETCHING
            second = await store.claim_fetch(msg, now=110.0, lease_s=30.0)
            assert not second.granted and second.held_until == 130.0  # come back when the lease ends
            expired = await store.claim_fetch(msg, now=131.0, lease_s=30.0)
            assert expired.granted  # the holder crashed: the next delivery takes over
            await store.release_fetch(msg)
            assert await _state(client, table, msg) == QUEUED
            assert (await store.claim_fetch(msg, now=132.0, lease_s=30.0)).granted
            await store.finish(
                [(msg, "h", "fetched"), (msg, "h", "fetched")], 133.0
            )  # same key twice: one write
            assert await _state(client, table, msg) == DONE
            done = await store.claim_fetch(msg, now=134.0, lease_s=30.0)
            assert not done.granted and done.held_until is None  # a duplicate: drop it
            assert (await store.pending(CRAWL))[0] == []

    asyncio.run(scenario())


def _crawls_table(endpoint: str) -> str:
    name = f"crawls-{uuid.uuid4().hex[:8]}"
    boto3.client("dynamodb", endpoint_url=endpoint, region_name="us-east-1").create_table(
        TableName=name,
        BillingMode="PAY_PER_REQUEST",
        AttributeDefinitions=[{"AttributeName": "crawl_id", "AttributeType": "S"}],
        KeySchema=[{"AttributeName": "crawl_id", "KeyType": "HASH"}],
    )
    return name


def test_journal_keeps_the_crawl_pending_until_closed_and_counts_once(moto_server: EmbeddedMoto) -> None:
    """A flush writes its journal with the done URLs; until the journal is closed (counters + marker delete in
    one transaction) the crawl is not drained, a redelivery can read it back, and closing twice counts once."""

    async def scenario() -> None:
        async with get_session().create_client(
            "dynamodb", endpoint_url=moto_server.endpoint_url, region_name="us-east-1"
        ) as client:
            table, crawls_table = _table(moto_server.endpoint_url), _crawls_table(moto_server.endpoint_url)
            store, crawls = UrlStore(client, table), CrawlStore(client, crawls_table)
            msg = _msg("/page")
            await store.claim([msg], ["h"], 0.0)
            assert (await store.claim_fetch(msg, now=1.0, lease_s=30.0)).granted
            body = {
                "pages": [{"url": msg.url, "outcome": "fetched"}],
                "links": [],
                "outgoing": [],
                "counters": {"n_fetched": 1},
            }
            journal = Journal.build(CRAWL, "part-1", body)
            assert await store.finish([(msg, "h", "fetched")], 2.0, [journal]) == {CRAWL}
            states, parts = await store.states_and_journals([msg])
            assert states[(CRAWL, msg.key)] == DONE and parts[(CRAWL, msg.key)] == "part-1"
            pending, _ = await store.pending(CRAWL)
            assert [p.key for p in pending] == ["~j-part-1"]  # not drained: publication still open
            (found,) = await store.unpublished([(CRAWL, "part-1")])
            assert found.body() == body
            close = store.journal_close(CRAWL, "part-1")
            first, second = await asyncio.gather(
                crawls.add_counters(CRAWL, {"n_fetched": 1}, once=close),
                crawls.add_counters(CRAWL, {"n_fetched": 1}, once=close),
            )
            assert sorted([first, second]) == [False, True]  # the crashed flush and its repair: counted once
            item = await client.get_item(TableName=crawls_table, Key={"crawl_id": {"S": CRAWL}})
            assert item["Item"]["n_fetched"]["N"] == "1"
            assert await store.unpublished([(CRAWL, "part-1")]) == []
            assert (await store.pending(CRAWL))[0] == []
            assert await store.outcomes(CRAWL) == {"fetched": 1}  # journal items are not URLs

    asyncio.run(scenario())
