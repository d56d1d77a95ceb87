"""UrlStore on the moto server: one winner per URL, a retried parent re-sends its children, the fetch lease is
exclusive and expires, and one batch may finish the same URL twice."""

from __future__ import annotations

import asyncio
import contextlib
import re
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import boto3
from aiobotocore.session import get_session

from infra.local.moto_server import EmbeddedMoto
from seolens_core.adapters.crawls import CrawlStore
from seolens_core.adapters.urls import DONE, FETCHING, KEY_RANGES, QUEUED, SPREAD_ABOVE, Journal, UrlStore
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
        ],
        KeySchema=[
            {"AttributeName": "crawl_id", "KeyType": "HASH"},
            {"AttributeName": "url_key", "KeyType": "RANGE"},
        ],
    )
    return name


@contextlib.asynccontextmanager
async def _new_store(moto_server: EmbeddedMoto) -> AsyncIterator[tuple[Any, UrlStore]]:
    """An aiobotocore client and a UrlStore on a new table of the moto server."""
    async with get_session().create_client(
        "dynamodb", endpoint_url=moto_server.endpoint_url, region_name="us-east-1"
    ) as client:
        yield client, UrlStore(client, _table(moto_server.endpoint_url))


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


def test_pending_reads_one_crawls_queued_urls_from_its_partition(moto_server: EmbeddedMoto) -> None:
    """No index: the crawl's partition filtered on `pending_crawl`; another crawl's URLs and finished ones
    are not in it, and a limit below the count says more exist."""

    async def scenario() -> None:
        async with _new_store(moto_server) as (_, store):
            ours = [_msg(f"/p{i}", depth=i) for i in range(5)]
            theirs = [FrontierMessage("crawl-2", m.url, m.key, m.depth, parent="p1") for m in ours[:2]]
            await store.claim(ours + theirs, ["example.test"] * 7, 0.0)
            await store.finish(
                [(ours[0], "example.test", "fetched"), (ours[3], "example.test", "fetched")], 1.0
            )
            pending, more = await store.pending(CRAWL)
            assert not more
            assert sorted((p.url, p.depth, p.host) for p in pending) == [
                (ours[i].url, i, "example.test") for i in (1, 2, 4)
            ]
            some, more = await store.pending(CRAWL, limit=2)
            assert len(some) == 2 and more
            assert {p.key for p in (await store.pending("crawl-2"))[0]} == {m.key for m in theirs}

    asyncio.run(scenario())


def test_a_large_crawls_pending_urls_are_read_in_key_ranges_with_the_same_answer(
    moto_server: EmbeddedMoto,
) -> None:
    """Above SPREAD_ABOVE URLs the partition is read in 17 ranges at once: the same URLs (journal markers
    included), in key order, and the same `more` at a limit."""

    async def scenario() -> None:
        async with _new_store(moto_server) as (client, store):
            msgs = [_msg(f"/r{i}") for i in range(60)]
            await store.claim(msgs, ["example.test"] * 60, 0.0)
            await store.finish([(m, "example.test", "fetched") for m in msgs[:20]], 1.0)
            await store.finish([], 2.0, [Journal.build(CRAWL, "part-9", {"pages": []})])
            queries: list[dict[str, Any]] = []
            client.meta.events.register(
                "provide-client-params.dynamodb.Query", lambda params, **_: queries.append(params)
            )
            one, more_one = await store.pending(CRAWL, urls_hint=60)
            assert len(queries) == 2  # the URLs without a journal lease, then the leased ones
            spread, more_spread = await store.pending(CRAWL, urls_hint=SPREAD_ABOVE + 1)
            assert len(queries) >= 2 + 2 * len(KEY_RANGES)
            assert [p.key for p in spread] == [p.key for p in one] == sorted(p.key for p in one)
            assert len(one) == 41 and one[-1].key == "~j-part-9" and not more_one and not more_spread
            head, more = await store.pending(CRAWL, limit=10, urls_hint=SPREAD_ABOVE + 1)
            assert [p.key for p in head] == [p.key for p in one[:10]] and more

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
            found = await store.delivery([msg], 2.0)
            assert found.states[(CRAWL, msg.key)] == DONE and found.parts[(CRAWL, msg.key)] == "part-1"
            pending, _ = await store.pending(CRAWL)
            assert [p.key for p in pending] == ["~j-part-1"]  # not drained: publication still open
            (unpublished,) = await store.unpublished([(CRAWL, "part-1")])
            assert unpublished.body() == body
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


class _DiesAfterPartialWrite:
    """The aiobotocore client, except that the first BatchWriteItem leaves the journal's body unprocessed
    and the container dies (raises) at the next one: a flush cut off between its journal's two items."""

    def __init__(self, client: Any) -> None:
        self._client, self.exceptions, self.writes = client, client.exceptions, 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)

    async def batch_write_item(self, RequestItems: dict[str, Any]) -> Any:
        self.writes += 1
        if self.writes > 1:
            raise RuntimeError("the container died")
        ((table, requests),) = RequestItems.items()
        body = [r for r in requests if r["PutRequest"]["Item"]["url_key"]["S"].startswith("~b-")]
        rest = [r for r in requests if r not in body]
        await self._client.batch_write_item(RequestItems={table: rest})
        return {"UnprocessedItems": {table: body} if body else {}}


def test_a_flush_cut_off_before_its_journal_landed_leaves_its_urls_to_be_fetched_again(
    moto_server: EmbeddedMoto,
) -> None:
    """No URL points to a journal before both its items landed: a URL finished with a half-written journal
    would be taken for published on redelivery and its page lost. The marker left alone is dropped (the
    progress check does it when it is old) and the URL is still pending, to be fetched again."""

    async def scenario(client: Any, table: str) -> None:
        msg = _msg("/page")
        store = UrlStore(client, table)
        await store.claim([msg], ["h"], 0.0)
        assert (await store.claim_fetch(msg, now=1.0, lease_s=30.0)).granted
        journal = Journal.build(CRAWL, "part-1", {"pages": [{"url": msg.url}], "counters": {"n_fetched": 1}})
        dying = UrlStore(_DiesAfterPartialWrite(client), table)
        try:
            await dying.finish([(msg, "h", "fetched")], 2.0, [journal])
        except RuntimeError:
            pass
        else:
            raise AssertionError("the flush should have died")
        assert await _state(client, table, msg) == FETCHING  # not done: its redelivery fetches it again
        assert (await store.delivery([msg], 2.0)).parts == {}
        assert await store.unpublished([(CRAWL, "part-1")]) == []  # nothing to publish
        assert sorted(p.key for p in (await store.pending(CRAWL))[0]) == sorted([msg.key, "~j-part-1"])
        await store.drop_journal(CRAWL, "part-1")
        await store.drop_journal(CRAWL, "part-1")  # already gone: nothing happens
        assert [p.key for p in (await store.pending(CRAWL))[0]] == [msg.key]

    _run_on_table(moto_server, scenario)


def _run_on_table(moto_server: EmbeddedMoto, scenario: Callable[[Any, str], Awaitable[None]]) -> None:
    """Run `scenario(client, table)` with an aiobotocore client on a fresh URLs table."""

    async def main() -> None:
        async with get_session().create_client(
            "dynamodb", endpoint_url=moto_server.endpoint_url, region_name="us-east-1"
        ) as raw:
            await scenario(raw, _table(moto_server.endpoint_url))

    asyncio.run(main())


def _inserted_keys(statements: list[dict[str, Any]]) -> list[str]:
    """The url_keys the INSERT statements of a batch name."""
    keys = []
    for statement in statements:
        names = re.findall(r"'(\w+)': \?", statement["Statement"])
        if statement["Statement"].startswith("INSERT"):
            keys.append(dict(zip(names, statement["Parameters"], strict=True))["url_key"]["S"])
    return keys


class _RivalBeforeBatch:
    """The aiobotocore client, except that a rival creates the `steal` items a batch names between the
    existence check and that batch (the race the INSERTs' key conditions settle), and calls are counted."""

    def __init__(self, client: Any, table: str, steal: list[FrontierMessage]) -> None:
        self._client, self._table, self._steal = client, table, steal
        self.exceptions = client.exceptions
        self.calls: list[tuple[str, int]] = []

    async def batch_get_item(self, **kwargs: Any) -> Any:
        self.calls.append(("BatchGetItem", 0))
        return await self._client.batch_get_item(**kwargs)

    async def batch_execute_statement(self, **kwargs: Any) -> Any:
        self.calls.append(("BatchExecuteStatement", len(kwargs["Statements"])))
        rival = UrlStore(self._client, self._table)
        named = set(_inserted_keys(kwargs["Statements"]))
        stolen = [m for m in self._steal if m.key in named]  # the batches of one claim run at once
        self._steal = [m for m in self._steal if m.key not in named]
        if stolen:
            assert len((await rival.claim(stolen, ["h"] * len(stolen), 0.0)).new) == len(stolen)
        return await self._client.batch_execute_statement(**kwargs)

    async def put_item(self, **kwargs: Any) -> Any:
        self.calls.append(("PutItem", 1))
        return await self._client.put_item(**kwargs)


def test_many_new_urls_are_claimed_in_batches_and_a_lost_race_loses_only_its_urls(
    moto_server: EmbeddedMoto,
) -> None:
    async def scenario(raw: Any, table: str) -> None:
        children = [_msg(f"/c{i}", parent="p1") for i in range(250)]
        stolen = [_msg(f"/c{i}", parent="p2") for i in (3, 120, 249)]
        client = _RivalBeforeBatch(raw, table, stolen)
        claimed = await UrlStore(client, table).claim(children, ["h"] * len(children), 0.0)
        lost = {m.key for m in stolen}
        assert {m.key for m in claimed.new} == {m.key for m in children} - lost
        assert {m.key for m in claimed.send} == {m.key for m in claimed.new}
        # 250 URLs: three existence-check pages, ten batches of 25 INSERTs, each answered statement by
        # statement (no batch again for the URLs the rival took), and one read of those three owners.
        writes = [c for c in client.calls if c[0] != "BatchGetItem"]
        assert writes == [("BatchExecuteStatement", 25)] * 10, writes
        assert client.calls.count(("BatchGetItem", 0)) == 4
        pending, _ = await UrlStore(raw, table).pending(CRAWL, limit=1000)
        owners = {p.key for p in pending}
        assert owners == {m.key for m in children}  # every URL is queued once, by one claimer
        again = await raw.batch_execute_statement(
            Statements=[UrlStore(raw, table)._insert(children[0], "h", 0.0)]
        )
        assert again["Responses"][0]["Error"]["Code"] == "DuplicateItem"

    _run_on_table(moto_server, scenario)


class _CountsOverlap:
    """The aiobotocore client, except that existence checks and batches take a little while and the
    most of each kind in flight at once is recorded."""

    def __init__(self, client: Any) -> None:
        self._client, self.exceptions = client, client.exceptions
        self.flying: dict[str, int] = {"BatchGetItem": 0, "BatchExecuteStatement": 0}
        self.most = dict(self.flying)

    async def _timed(self, name: str, call: Awaitable[Any]) -> Any:
        self.flying[name] += 1
        self.most[name] = max(self.most[name], self.flying[name])
        try:
            await asyncio.sleep(0.02)
            return await call
        finally:
            self.flying[name] -= 1

    async def batch_get_item(self, **kwargs: Any) -> Any:
        return await self._timed("BatchGetItem", self._client.batch_get_item(**kwargs))

    async def batch_execute_statement(self, **kwargs: Any) -> Any:
        return await self._timed("BatchExecuteStatement", self._client.batch_execute_statement(**kwargs))


def test_a_large_claims_reads_and_batches_go_at_once(moto_server: EmbeddedMoto) -> None:
    """A seeded sitemap claims hundreds of URLs: its existence-check pages and its INSERT batches (distinct
    keys) run concurrently, not one round trip after another; every URL is still claimed once."""

    async def scenario(raw: Any, table: str) -> None:
        children = [_msg(f"/s{i}", parent="sitemap") for i in range(250)]
        client = _CountsOverlap(raw)
        claimed = await UrlStore(client, table).claim(children, ["h"] * len(children), 0.0, consistent=True)
        assert len(claimed.new) == 250
        assert client.most == {"BatchGetItem": 3, "BatchExecuteStatement": 10}  # 100+100+50; 10 x 25
        pending, _ = await UrlStore(raw, table).pending(CRAWL, limit=1000)
        assert sorted(p.key for p in pending) == sorted(m.key for m in children)

    _run_on_table(moto_server, scenario)


class _FirstKeepsConflicting(_RivalBeforeBatch):
    """The first statement of every batch meets a conflicting transaction (another writer's, on that item)
    and is not run; the others run."""

    async def batch_execute_statement(self, **kwargs: Any) -> Any:
        statements = kwargs["Statements"]
        self.calls.append(("BatchExecuteStatement", len(statements)))
        conflict = {"Error": {"Code": "TransactionConflict", "Message": "conflict"}}
        if len(statements) == 1:
            return {"Responses": [conflict]}
        rest = await self._client.batch_execute_statement(Statements=statements[1:])
        return {"Responses": [conflict, *rest["Responses"]]}


def test_a_claim_that_keeps_conflicting_falls_back_to_one_conditional_put(
    moto_server: EmbeddedMoto,
) -> None:
    async def scenario(raw: Any, table: str) -> None:
        children = [_msg(f"/k{i}", parent="p1") for i in range(3)]
        client = _FirstKeepsConflicting(raw, table, [])
        claimed = await UrlStore(client, table).claim(children, ["h"] * 3, 0.0)
        assert {m.key for m in claimed.new} == {m.key for m in children}  # none lost
        writes = [c for c in client.calls if c[0] != "BatchGetItem"]
        # Only the conflicting statement goes again (three more attempts), then on its own.
        assert writes == [("BatchExecuteStatement", 3)] + [("BatchExecuteStatement", 1)] * 3 + [
            ("PutItem", 1)
        ]

    _run_on_table(moto_server, scenario)


class _AnswerLost(_RivalBeforeBatch):
    """Every write lands, but its answer is lost and the SDK sends it again (a read timeout, a reset
    connection): the caller sees what the repeated write meets, its own item."""

    async def batch_execute_statement(self, **kwargs: Any) -> Any:
        self.calls.append(("BatchExecuteStatement", len(kwargs["Statements"])))
        await self._client.batch_execute_statement(**kwargs)
        return await self._client.batch_execute_statement(**kwargs)

    async def put_item(self, **kwargs: Any) -> Any:
        self.calls.append(("PutItem", 1))
        await self._client.put_item(**kwargs)
        return await self._client.put_item(**kwargs)


def test_a_claim_whose_answer_was_lost_is_still_sent(moto_server: EmbeddedMoto) -> None:
    """The 20,000-page benchmark of 2026-12-01 stalled with 26 URLs queued and no message: a claim
    transaction landed, its retry met the claims and took them for another writer's."""

    async def scenario(raw: Any, table: str) -> None:
        children = [_msg(f"/lost{i}", parent="p1") for i in range(3)]
        claimed = await UrlStore(_AnswerLost(raw, table, []), table).claim(children, ["h"] * 3, 0.0)
        assert {m.key for m in claimed.send} == {m.key for m in children}
        rival = _msg("/lost0", parent="p2")  # another parent's later claim is still refused
        assert (await UrlStore(raw, table).claim([rival], ["h"], 0.0)).send == []
        store = UrlStore(_AnswerLost(raw, table, []), table)
        single = _msg("/lost-single", parent="p1")
        assert await store._put_new(single, "h", 0.0)  # the one-put fallback, same case

    _run_on_table(moto_server, scenario)


class _StaleReads(_RivalBeforeBatch):
    """Eventually consistent reads that have not seen any write yet (every item missing), unless the
    request asks for a consistent read; records the consistency each read asked for."""

    def __init__(self, client: Any, table: str) -> None:
        super().__init__(client, table, [])
        self.consistent: list[bool] = []

    async def batch_get_item(self, **kwargs: Any) -> Any:
        (spec,) = kwargs["RequestItems"].values()
        self.consistent.append(bool(spec.get("ConsistentRead")))
        if spec.get("ConsistentRead"):
            return await self._client.batch_get_item(**kwargs)
        return {"Responses": {}, "UnprocessedKeys": {}}


def test_link_checks_read_eventually_consistent_and_a_stale_miss_loses_nothing(
    moto_server: EmbeddedMoto,
) -> None:
    """Link existence checks (most of the reads) ask for half-price reads: an item a stale read misses
    meets the conditional put, which answers for it (another parent's URL stays unsent, this parent's own
    earlier claim is sent again). The seeder's claims (it counts `new`) and the duplicate checks before a
    fetch stay consistent."""

    async def scenario(raw: Any, table: str) -> None:
        mine, theirs = _msg("/stale-mine", parent="p1"), _msg("/stale-theirs", parent="p2")
        assert len((await UrlStore(raw, table).claim([mine, theirs], ["h", "h"], 0.0)).new) == 2
        stale = _StaleReads(raw, table)
        store = UrlStore(stale, table)
        again = await store.claim([mine, _msg("/stale-theirs", parent="p1")], ["h", "h"], 0.0)
        assert [m.key for m in again.send] == [mine.key]
        # The stale miss meets the INSERT, refused without the item (DuplicateItem): one consistent read
        # of the refused keys says whose they are.
        assert stale.consistent == [False, True]
        counted = await store.claim([mine], ["h"], 0.0, consistent=True)  # the seeder counts `new`
        assert counted.send == [mine] and counted.new == []
        assert stale.consistent == [False, True, True]
        states = await store.states([mine, theirs])
        assert states == {(CRAWL, mine.key): QUEUED, (CRAWL, theirs.key): QUEUED}
        assert stale.consistent == [False, True, True, True]

    _run_on_table(moto_server, scenario)


class _Counting(_RivalBeforeBatch):
    async def update_item(self, **kwargs: Any) -> Any:
        self.calls.append(("UpdateItem", 1))
        return await self._client.update_item(**kwargs)


def test_fetch_claims_of_a_batch_share_one_call_and_refusals_say_why(
    moto_server: EmbeddedMoto,
) -> None:
    async def scenario(raw: Any, table: str) -> None:
        plain = UrlStore(raw, table)
        free, done, held, also_free = (_msg(p) for p in ("/free", "/done", "/held", "/free2"))
        await plain.claim([free, done, held, also_free], ["h"] * 4, 0.0)
        await plain.finish([(done, "h", "fetched")], 1.0)
        assert (await plain.claim_fetch(held, now=10.0, lease_s=30.0)).granted  # another delivery
        never = _msg("/never-claimed")

        client = _Counting(raw, table, [])
        store = UrlStore(client, table)
        asks = [(free, 20.0, 30.0), (done, 20.0, 30.0), (held, 20.0, 30.0), (also_free, 20.0, 30.0)]
        answers = await store.claim_fetch_many([*asks, (free, 20.0, 30.0), (never, 20.0, 30.0)])
        assert answers[0].granted and answers[3].granted
        assert not answers[1].granted and answers[1].held_until is None  # done: a duplicate
        assert not answers[2].granted and answers[2].held_until == 40.0  # come back when that lease ends
        assert not answers[4].granted and answers[4].held_until == 50.0  # the first copy holds it now
        assert not answers[5].granted and answers[5].held_until is None  # no item: an UPDATE creates none
        assert client.calls == [
            ("BatchExecuteStatement", 5),  # each statement answered: the refusals with their items
            ("UpdateItem", 1),  # the second copy, on its own
            ("UpdateItem", 1),  # refused with no item to say why: asked again singly, never guessed done
        ], client.calls
        for msg in (free, also_free):
            assert await _state(raw, table, msg) == FETCHING
        assert await _state(raw, table, held) == FETCHING
        assert (
            await raw.get_item(TableName=table, Key={"crawl_id": {"S": CRAWL}, "url_key": {"S": never.key}})
        ).get("Item") is None

    _run_on_table(moto_server, scenario)


class _RefusalsWithoutItems(_Counting):
    """A batch whose refusals leave out the item their condition saw (as DynamoDB answered before it
    honoured `ReturnValuesOnConditionCheckFailure` in batches)."""

    async def batch_execute_statement(self, **kwargs: Any) -> Any:
        answer = await super().batch_execute_statement(**kwargs)
        for response in answer["Responses"]:
            response.get("Error", {}).pop("Item", None)
        return answer


def test_a_lease_refused_without_its_item_is_asked_again_not_taken_for_done(
    moto_server: EmbeddedMoto,
) -> None:
    async def scenario(raw: Any, table: str) -> None:
        held, free = _msg("/held-x"), _msg("/free-x")
        await UrlStore(raw, table).claim([held, free], ["h"] * 2, 0.0)
        assert (await UrlStore(raw, table).claim_fetch(held, now=10.0, lease_s=30.0)).granted
        client = _RefusalsWithoutItems(raw, table, [])
        answers = await UrlStore(client, table).claim_fetch_many([(held, 20.0, 30.0), (free, 20.0, 30.0)])
        assert not answers[0].granted and answers[0].held_until == 40.0  # held: come back, not a duplicate
        assert answers[1].granted
        assert client.calls == [("BatchExecuteStatement", 2), ("UpdateItem", 1)], client.calls

    _run_on_table(moto_server, scenario)


def test_two_or_more_writes_share_a_batch_and_one_goes_alone(moto_server: EmbeddedMoto) -> None:
    """A batch of PartiQL statements bills a write unit an item, as single writes do (a transaction bills
    two): two or more new links, or records granted together, share one call; a single one is a PutItem
    or an UpdateItem, with the same answers."""

    async def scenario(raw: Any, table: str) -> None:
        client = _Counting(raw, table, [])
        store = UrlStore(client, table)
        first, second = _msg("/pair-a", parent="p1"), _msg("/pair-b", parent="p1")
        rival = UrlStore(raw, table)
        assert len((await rival.claim([_msg("/pair-b", parent="p2")], ["h"], 0.0)).new) == 1
        third = _msg("/pair-c", parent="p1")
        claimed = await store.claim([first, second, third], ["h"] * 3, 0.0, consistent=True)
        assert claimed.new == [first, third]  # the other parent's claim stands
        answers = await store.claim_fetch_many([(first, 5.0, 30.0), (third, 5.0, 30.0)])
        assert [a.granted for a in answers] == [True, True]
        assert await _state(raw, table, first) == FETCHING
        lone = _msg("/pair-d", parent="p1")
        assert (await store.claim([lone], ["h"], 0.0, consistent=True)).new == [lone]
        assert [a.granted for a in await store.claim_fetch_many([(lone, 5.0, 30.0)])] == [True]
        assert [c for c in client.calls if c[0] != "BatchGetItem"] == [
            ("BatchExecuteStatement", 2),
            ("BatchExecuteStatement", 2),
            ("PutItem", 1),
            ("UpdateItem", 1),
        ], client.calls

    _run_on_table(moto_server, scenario)


def test_a_fetched_url_is_done_by_its_leases_journal_without_a_write_of_its_own(
    moto_server: EmbeddedMoto,
) -> None:
    """The lease names the batch's journal; `finish` writes the journal and no item for the leased URL, which
    every reader then takes for done: the delivery check, the pending query, a retried parent's claim."""

    async def scenario(client: Any, table: str) -> None:
        store = UrlStore(client, table)
        msg, other = _msg("/leased"), _msg("/other")
        await store.claim([msg, other], ["h", "h"], 0.0)
        assert (await store.claim_fetch(msg, 1.0, 30.0, part="b-1")).granted
        in_flight, _ = await store.pending(CRAWL)
        assert {p.key: p.leased_until for p in in_flight} == {msg.key: 31.0, other.key: None}
        assert (await store.delivery([msg], 2.0)).states == {(CRAWL, msg.key): FETCHING}

        body = {
            "pages": [{"url": msg.url, "outcome": "fetched"}],
            "links": [],
            "outgoing": [],
            "counters": {},
        }
        journal = Journal.build(CRAWL, "b-1", body)
        writes: list[list[str]] = []
        real = client.batch_write_item

        async def counting(**kwargs: Any) -> Any:
            requests = [r for v in kwargs["RequestItems"].values() for r in v]
            writes.append([r["PutRequest"]["Item"]["url_key"]["S"] for r in requests])
            return await real(**kwargs)

        client.batch_write_item = counting
        try:
            done = [(msg, "h", "fetched")]
            assert await store.finish(done, 3.0, [journal], leased={(CRAWL, msg.key)}) == {CRAWL}
        finally:
            del client.batch_write_item
        # The marker, then the body (a body without its marker would read as published), and no URL item.
        assert writes == [["~j-b-1"], ["~b-b-1"]]
        assert await _state(client, table, msg) == FETCHING

        found = await store.delivery([msg], 4.0)  # lease still live, journal open: done, and to publish
        assert found.states == {(CRAWL, msg.key): DONE}
        assert found.parts == {(CRAWL, msg.key): "b-1"} and list(found.open) == [(CRAWL, "b-1")]
        pending, _ = await store.pending(CRAWL)
        assert sorted(p.key for p in pending) == sorted([other.key, "~j-b-1"])

        await client.delete_item(TableName=table, Key={"crawl_id": {"S": CRAWL}, "url_key": {"S": "~j-b-1"}})
        found = await store.delivery([msg], 100.0)  # published, lease ended: still done, nothing to publish
        assert found.states == {(CRAWL, msg.key): DONE} and found.open == {}
        assert [p.key for p in (await store.pending(CRAWL))[0]] == [other.key]
        assert (await store.claim([msg, other], ["h", "h"], 5.0)).send == [other]  # the parent retried
        assert await store.outcomes(CRAWL) == {"fetched": 1, "queued": 1}

    _run_on_table(moto_server, scenario)


def test_the_drain_check_reads_leased_urls_by_key_and_journal_and_only_when_it_needs_them(
    moto_server: EmbeddedMoto,
) -> None:
    """At the end of a crawl every URL it fetched is leased: the pending query reads those by key and journal
    only, and whole only the ones whose journal has no body; with more URLs pending than asked, not at all."""

    async def scenario(client: Any, table: str) -> None:
        store = UrlStore(client, table)
        done, open_, queued = _msg("/done"), _msg("/open"), _msg("/queued")
        await store.claim([done, open_, queued], ["h", "h", "h"], 0.0)
        assert (await store.claim_fetch(done, 1.0, 30.0, part="b-1")).granted
        assert (await store.claim_fetch(open_, 1.0, 30.0, part="b-2")).granted
        journal = Journal.build(CRAWL, "b-1", {"pages": [{"url": done.url, "outcome": "fetched"}]})
        assert await store.finish([(done, "h", "fetched")], 2.0, [journal], leased={(CRAWL, done.key)})
        await client.delete_item(TableName=table, Key={"crawl_id": {"S": CRAWL}, "url_key": {"S": "~j-b-1"}})
        queries: list[dict[str, Any]] = []
        client.meta.events.register(
            "provide-client-params.dynamodb.Query", lambda params, **_: queries.append(params)
        )
        pending, more = await store.pending(CRAWL)
        assert not more and {p.key: (p.url, p.host, p.depth, p.leased_until) for p in pending} == {
            open_.key: (open_.url, "h", 1, 31.0),  # its journal has no body: still in flight
            queued.key: (queued.url, "h", 1, None),
        }
        assert [q["ProjectionExpression"] for q in queries][1:] == ["url_key, jr"]
        queries.clear()
        head, more = await store.pending(CRAWL, limit=0)
        assert head == [] and more and len(queries) == 1  # the unleased URLs alone answer it

    _run_on_table(moto_server, scenario)


def test_a_url_that_changes_between_the_drain_checks_queries_is_listed_once_and_only_while_pending(
    moto_server: EmbeddedMoto,
) -> None:
    """The two queries and the re-read by key are not one snapshot: a URL leased between the queries (seen
    unleased, then leased) is listed once, and a leased URL finished before its re-read is not listed."""

    async def scenario(client: Any, table: str) -> None:
        store = UrlStore(client, table)
        finished, moved = _msg("/finished"), _msg("/moved")
        await store.claim([finished, moved], ["h", "h"], 0.0)
        assert (await store.claim_fetch(finished, 1.0, 30.0, part="b-1")).granted  # no body: in flight
        query_pages, get_many = store._query_pages, store._get_many
        queries: list[dict[str, Any]] = []

        async def racing_query(spec: dict[str, Any]) -> Any:
            queries.append(spec)
            if len(queries) == 2:  # after the unleased URLs were read: `moved` is leased now
                assert (await store.claim_fetch(moved, 2.0, 30.0, part="b-2")).granted
            async for page in query_pages(spec):
                yield page

        async def racing_reread(*args: Any, **kwargs: Any) -> Any:
            await client.update_item(  # `finished` is done before its re-read
                TableName=table,
                Key={"crawl_id": {"S": CRAWL}, "url_key": {"S": finished.key}},
                UpdateExpression="SET url_state = :d, outcome = :o REMOVE pending_crawl",
                ExpressionAttributeValues={":d": {"S": "done"}, ":o": {"S": "fetched"}},
            )
            return await get_many(*args, **kwargs)

        store._query_pages = racing_query  # type: ignore[method-assign]
        store._get_many = racing_reread  # type: ignore[method-assign]
        pending, more = await store.pending(CRAWL)
        assert len(queries) == 2 and not more
        assert [p.key for p in pending] == [moved.key]

    _run_on_table(moto_server, scenario)


def test_a_lease_whose_delivery_died_before_its_journal_is_released_and_taken_again(
    moto_server: EmbeddedMoto,
) -> None:
    """No journal body and the lease ended: the delivery died before its flush. The next delivery puts the URL
    back to queued (pending, leasable); while the lease lives it stays leased elsewhere; a lease naming a
    journal is never taken over by the lease's condition alone."""

    async def scenario(client: Any, table: str) -> None:
        store = UrlStore(client, table)
        msg, untouched = _msg("/died"), _msg("/untouched")
        await store.claim([msg, untouched], ["h", "h"], 0.0)
        for m in (msg, untouched):
            assert (await store.claim_fetch(m, 1.0, 30.0, part="dead")).granted
        assert (await store.delivery([msg], 10.0)).states == {(CRAWL, msg.key): FETCHING}
        refused = await store.claim_fetch(untouched, 40.0, 30.0, part="b-2")  # ended, but names a journal
        assert not refused.granted and refused.held_until == 31.0
        assert [p.key for p in (await store.pending(CRAWL))[0] if p.key == untouched.key] == [untouched.key]

        found = await store.delivery([msg], 40.0)
        assert found.states == {(CRAWL, msg.key): QUEUED} and found.parts == {}
        assert await _state(client, table, msg) == QUEUED
        assert (await store.claim_fetch(msg, 41.0, 30.0, part="b-2")).granted

    _run_on_table(moto_server, scenario)
