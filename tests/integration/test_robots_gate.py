"""RobotsGate on the embedded moto server: big robots.txt stored compressed (or as its records only, or as
disallow-all, with a finding) within DynamoDB's 400 KB item limit, and the retry back-off kept from the stored state across containers and races."""

from __future__ import annotations

import asyncio
import random
import string
import time
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, cast

import pytest
from aiobotocore.session import get_session

from infra.local.moto_server import EmbeddedMoto
from seolens_core.crawl._robots_gate import (
    ALERT_ROBOTS_TEXT_TRUNCATED,
    DISALLOW_ALL_TEXT,
    KIND,
    TEXT_BUDGET_BYTES,
    RobotsGate,
)
from seolens_core.fetch import Fetcher, FetchResult
from seolens_core.robots import DecisionReason, RobotsMode
from seolens_core.settings import CrawlSettings

HOST = "http://robots.example:8080"
SETTINGS = CrawlSettings(start_urls=(HOST + "/",), robots_retry_base_s=1.0)
DYNAMODB_ITEM_LIMIT = 400 * 1024


class FakeFetcher:
    """Answers robots.txt from a script; counts the fetches; `latency` delays each answer."""

    def __init__(self, status: int, body: bytes = b"", latency: float = 0.0) -> None:
        self.status, self.body, self.latency = status, body, latency
        self.calls = 0

    async def fetch(
        self, url: str, headers: dict[str, str] | None = None, method: str = "GET"
    ) -> FetchResult:
        self.calls += 1
        if self.latency:
            await asyncio.sleep(self.latency)
        return FetchResult(
            url=url, status=self.status, body=self.body, headers={"content-type": "text/plain"}
        )


class SlowLeases:
    """A DynamoDB client whose update_item (the lease) waits first: a worker that read the host's state
    and is slow to claim the lease, so another worker refreshes robots.txt in between."""

    def __init__(self, client: Any, wait_s: float) -> None:
        self._client, self._wait = client, wait_s
        self.exceptions = client.exceptions

    async def update_item(self, **kwargs: Any) -> Any:
        await asyncio.sleep(self._wait)
        return await self._client.update_item(**kwargs)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._client, name)


def count_reads(client: Any) -> list[str]:
    """From now on, the host of every GetItem `client` makes, in order."""
    reads: list[str] = []
    get_item = client.get_item

    async def counting_get_item(**kwargs: Any) -> Any:
        reads.append(kwargs["Key"]["host"]["S"])
        return await get_item(**kwargs)

    client.get_item = counting_get_item
    return reads


@asynccontextmanager
async def hosts_table(moto: EmbeddedMoto) -> AsyncIterator[tuple[Any, str]]:
    session = get_session()
    async with session.create_client(
        "dynamodb",
        endpoint_url=moto.endpoint_url,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    ) as client:
        name = f"hosts-{uuid.uuid4().hex[:10]}"
        await client.create_table(
            TableName=name,
            KeySchema=[
                {"AttributeName": "host", "KeyType": "HASH"},
                {"AttributeName": "kind", "KeyType": "RANGE"},
            ],
            AttributeDefinitions=[
                {"AttributeName": "host", "AttributeType": "S"},
                {"AttributeName": "kind", "AttributeType": "S"},
            ],
            BillingMode="PAY_PER_REQUEST",
        )
        yield client, name


async def _item(client: Any, table: str) -> dict[str, Any]:
    resp = await client.get_item(
        TableName=table, Key={"host": {"S": HOST}, "kind": {"S": KIND}}, ConsistentRead=True
    )
    return cast(dict[str, Any], resp["Item"])


def _item_bytes(item: dict[str, Any]) -> int:
    """Rough DynamoDB item size: names plus values (what the 400 KB limit counts)."""
    total = 0
    for name, value in item.items():
        total += len(name)
        (kind, raw), *_ = value.items()
        total += len(raw) if kind == "B" else len(str(raw).encode("utf-8"))
    return total


def _big_compressible() -> str:
    """~500 KiB of ordinary rules; the last line disallows /zz-last/."""
    lines = ["User-agent: *"]
    n = 0
    while sum(len(line) + 1 for line in lines) < 500 * 1024 - 100:
        lines.append(f"Disallow: /catalogue/section-{n}/item-*.html$")
        n += 1
    lines.append("Disallow: /zz-last/")
    return "\n".join(lines) + "\n"


def _big_incompressible(seed: int = 4) -> str:
    """~500 KiB of random paths: zlib cannot bring it under the budget. /early/ is disallowed first."""
    rng = random.Random(seed)
    alphabet = string.ascii_letters + string.digits + "-_"
    lines = ["User-agent: *", "Disallow: /early/"]
    while sum(len(line) + 1 for line in lines) < 500 * 1024 - 100:
        lines.append("Disallow: /" + "".join(rng.choices(alphabet, k=60)))
    lines.append("Disallow: /zz-last/")
    return "\n".join(lines) + "\n"


def test_500_kib_robots_is_stored_compressed_and_applied(moto_server: EmbeddedMoto) -> None:
    async def scenario() -> None:
        async with hosts_table(moto_server) as (client, table):
            text = _big_compressible()
            fetcher = FakeFetcher(200, text.encode())
            gate = RobotsGate(client, table)
            now = time.time()
            blocked = await gate.check(HOST, "/zz-last/x", SETTINGS, cast(Fetcher, fetcher), now)
            assert not blocked.allowed and blocked.finding == "ALERT_ROBOTS_DISALLOWED"
            item = await _item(client, table)
            assert "text" not in item["decision"]["S"] or len(item["decision"]["S"]) < 4096
            assert _item_bytes(item) < DYNAMODB_ITEM_LIMIT
            assert "finding" not in item
            # A second container reads the stored decision back: same text, same rules, no new fetch.
            other = RobotsGate(client, table)
            stored = await other.stored_decision(HOST)
            assert stored is not None and stored.mode is RobotsMode.PARSED
            assert stored.rules_text == text and stored.state.last_good_text == text
            assert not (await other.check(HOST, "/zz-last/y", SETTINGS, cast(Fetcher, fetcher), now)).allowed
            assert (await other.check(HOST, "/open", SETTINGS, cast(Fetcher, fetcher), now)).allowed
            assert fetcher.calls == 1

    asyncio.run(scenario())


def test_uncompressible_robots_is_stored_as_disallow_all_with_a_finding(moto_server: EmbeddedMoto) -> None:
    """Rules that cannot be stored whole are never cut to a prefix (it could drop a Disallow): the host is
    disallowed, with a finding, rather than allowed what the site forbids."""

    async def scenario() -> None:
        async with hosts_table(moto_server) as (client, table):
            text = _big_incompressible()
            # Without compression or cutting, the item would not be accepted at all.
            with pytest.raises(client.exceptions.ClientError, match=r"[Ss]ize"):
                await client.put_item(
                    TableName=table,
                    Item={"host": {"S": HOST}, "kind": {"S": "RAW"}, "text": {"S": text}},
                )
            fetcher = FakeFetcher(200, text.encode())
            gate = RobotsGate(client, table)
            now = time.time()
            for path in ("/early/page", "/zz-last/x", "/open"):
                assert not (await gate.check(HOST, path, SETTINGS, cast(Fetcher, fetcher), now)).allowed
            item = await _item(client, table)
            assert item["finding"]["S"] == ALERT_ROBOTS_TEXT_TRUNCATED
            assert int(item["text_bytes"]["N"]) == len(text.encode())
            assert len(item["text_z"]["B"]) <= TEXT_BUDGET_BYTES
            assert _item_bytes(item) < DYNAMODB_ITEM_LIMIT
            stored = await RobotsGate(client, table).stored_decision(HOST)
            assert stored is not None and stored.mode is RobotsMode.PARSED
            assert stored.rules_text == DISALLOW_ALL_TEXT
            other = RobotsGate(client, table)
            assert not (await other.check(HOST, "/zz-last/x", SETTINGS, cast(Fetcher, fetcher), now)).allowed

    asyncio.run(scenario())


def test_backoff_grows_across_containers_and_a_late_lease_does_not_refetch(moto_server: EmbeddedMoto) -> None:
    async def scenario() -> None:
        async with hosts_table(moto_server) as (client, table):
            fetcher = FakeFetcher(503, latency=0.05)
            f = cast(Fetcher, fetcher)
            a, b = RobotsGate(client, table), RobotsGate(client, table)
            answer = await a.check(HOST, "/", SETTINGS, f, time.time())
            assert answer.wait_until is not None and not answer.allowed
            # Containers take turns: each retry reads the failure count stored by the other one.
            for n, gate in enumerate([b, a, b, a], start=2):
                stored = await a.stored_decision(HOST)
                assert stored is not None and stored.suspended and stored.retry_at is not None
                assert stored.state.consecutive_failures == n - 1
                early = await gate.check(HOST, "/", SETTINGS, f, stored.retry_at - 0.2)
                assert early.wait_until == stored.retry_at and fetcher.calls == n - 1, (
                    "no fetch before retry_at"
                )
                await gate.check(HOST, "/", SETTINGS, f, stored.retry_at + 0.01)
                assert fetcher.calls == n
                after_retry = await a.stored_decision(HOST)
                assert after_retry is not None and after_retry.retry_at is not None
                gap = after_retry.retry_at - time.time()  # base * 2**(n-1) from the failed fetch's end
                assert 2.0 ** (n - 1) - 0.5 <= gap <= 2.0 ** (n - 1) + 0.01, (n, gap)
            final = await b.stored_decision(HOST)
            assert final is not None and final.reason is DecisionReason.UNREACHABLE
            assert final.state.consecutive_failures == 5
            assert final.retry_at is not None
            # 5th failure: base * 2**4 = 16 s after it (time.time() at the fetch's end).
            assert 15.5 <= final.retry_at - time.time() <= 16.1

            # A worker that read the suspended state but claims the lease after another worker refreshed
            # must not fetch again (and must not restart the back-off from its stale copy).
            due = final.retry_at + 0.01
            slow = RobotsGate(SlowLeases(client, 0.3), table)
            fast = RobotsGate(client, table)

            async def fast_later() -> None:
                await asyncio.sleep(0.05)
                await fast.check(HOST, "/", SETTINGS, f, due)

            slow_answer, _ = await asyncio.gather(slow.check(HOST, "/", SETTINGS, f, due), fast_later())
            assert fetcher.calls == 6, "the late lease holder fetched robots.txt again"
            after = await fast.stored_decision(HOST)
            assert after is not None and after.state.consecutive_failures == 6
            assert slow_answer.wait_until is not None and slow_answer.wait_until >= due

    asyncio.run(scenario())


def test_a_definitive_decision_is_kept_longer_than_a_failing_one(moto_server: EmbeddedMoto) -> None:
    """A container re-reads a host's ROBOTS item after 10 s while robots.txt is failing (another worker's retry
    may have replaced it), but keeps a fetched decision for 2 min: fewer reads per page on healthy hosts."""

    async def scenario() -> None:
        async with hosts_table(moto_server) as (client, table):
            reads = count_reads(client)
            now = time.time()
            healthy, failing = HOST, "https://down.example:443"
            gate = RobotsGate(client, table)
            ok = FakeFetcher(200, b"User-agent: *\nDisallow: /private/\n")
            assert (await gate.check(healthy, "/a", SETTINGS, cast(Fetcher, ok), now)).allowed
            down = FakeFetcher(503, latency=0.0)
            assert (
                await gate.check(failing, "/a", SETTINGS, cast(Fetcher, down), now)
            ).wait_until is not None
            reads.clear()
            later = (
                now + 60
            )  # past the 10 s cache, within the 2 min one and within the failing host's retry gap
            assert not (await gate.check(healthy, "/private/x", SETTINGS, cast(Fetcher, ok), later)).allowed
            assert (
                await gate.check(failing, "/a", SETTINGS, cast(Fetcher, down), later)
            ).wait_until is not None
            assert reads == [failing]
            assert ok.calls == 1

    asyncio.run(scenario())


def test_records_meeting_a_host_together_share_one_read(moto_server: EmbeddedMoto) -> None:
    """A fresh container's batch: ten records check the same host at once and make one GetItem."""

    async def scenario() -> None:
        async with hosts_table(moto_server) as (client, table):
            now = time.time()
            ok = FakeFetcher(200, b"User-agent: *\nDisallow: /private/\n")
            assert (
                await RobotsGate(client, table).check(HOST, "/a", SETTINGS, cast(Fetcher, ok), now)
            ).allowed
            reads = count_reads(client)
            fresh = RobotsGate(client, table)  # another container: nothing cached yet
            answers = await asyncio.gather(
                *(fresh.check(HOST, f"/p{i}", SETTINGS, cast(Fetcher, ok), now) for i in range(10))
            )
            assert all(a.allowed for a in answers)
            assert reads == [HOST]
            assert ok.calls == 1

    asyncio.run(scenario())


def _cr_only_garbage_robots(seed: int = 9) -> bytes:
    """10 MiB: CR-only line ends (RFC 9309 allows CR, LF and CRLF), `Disallow: /blocked/` near the top, then
    binary garbage (random bytes: CRs among them, no LF)."""
    head = b"# the shop\rUser-agent: *\rDisallow: /blocked/\r"
    noise = bytes(b for b in random.Random(seed).randbytes(10 * 1024 * 1024 + 4096) if b != 0x0A)
    return (head + noise)[: 10 * 1024 * 1024]


def test_cr_only_robots_with_garbage_keeps_its_rules_in_storage(moto_server: EmbeddedMoto) -> None:
    """Storage may never make robots.txt more permissive: the rules of the first 500 KiB survive the cut to
    the item limit, whatever the line ends, for the worker that fetched it and every other one."""

    async def scenario() -> None:
        async with hosts_table(moto_server) as (client, table):
            fetcher = FakeFetcher(200, _cr_only_garbage_robots())
            gate, now = RobotsGate(client, table), time.time()
            for n in range(1, 6):
                answer = await gate.check(HOST, f"/blocked/{n}", SETTINGS, cast(Fetcher, fetcher), now)
                assert not answer.allowed and answer.finding == "ALERT_ROBOTS_DISALLOWED", n
            assert (await gate.check(HOST, "/open", SETTINGS, cast(Fetcher, fetcher), now)).allowed
            item = await _item(client, table)
            assert len(item["text_z"]["B"]) <= TEXT_BUDGET_BYTES and _item_bytes(item) < DYNAMODB_ITEM_LIMIT
            assert item["finding"]["S"] == ALERT_ROBOTS_TEXT_TRUNCATED  # stored as its records alone
            stored = await gate.stored_decision(HOST)
            assert stored is not None and stored.rules_text == "User-agent: *\nDisallow: /blocked/\n"
            other = RobotsGate(client, table)  # another container reads the stored copy
            for n in range(1, 6):
                answer = await other.check(HOST, f"/blocked/{n}", SETTINGS, cast(Fetcher, fetcher), now)
                assert not answer.allowed, n
            assert (await other.check(HOST, "/open", SETTINGS, cast(Fetcher, fetcher), now)).allowed
            assert fetcher.calls == 1

    asyncio.run(scenario())
