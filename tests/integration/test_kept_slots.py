"""Kept slots (`PacingGate`, issue 9): on a host without spacing, a slot whose request went well serves this
container's next request to the host without a release and a reserve write, and never at the cost of a limit.

Every test runs real `PacingGate`s on the embedded moto server and reads the evidence from the service: the
calls the aiobotocore client made (its own `before-call` events) and the stored PACE item.
"""

from __future__ import annotations

import asyncio
import itertools
import time
from collections.abc import Callable
from typing import Any

from infra.local.moto_server import EmbeddedMoto
from seolens_core.crawl._pacing import KEEP_VIEW_S, PacingGate
from seolens_core.crawl._ports import Ticket, Wait
from seolens_core.fetch import FetchResult
from seolens_core.settings import CrawlSettings, PolitenessSettings
from tests.integration.test_host_pacing import HOST, create_hosts_table, dynamodb

OK = FetchResult(url=HOST + "/", status=200, headers={}, ttfb_ms=5.0)


def unspaced(concurrency: int = 2, delay_ms: int = 0) -> CrawlSettings:
    politeness = PolitenessSettings(
        initial_delay_ms=delay_ms, initial_concurrency=concurrency, max_concurrency=concurrency, aimd=False
    )
    return CrawlSettings(start_urls=("https://shop.example/",), politeness=politeness)


def record_calls(client: Any) -> list[str]:
    sent: list[str] = []  # what reached the service, from the client's own events
    client.meta.events.register("before-call.dynamodb.*", lambda model, **_: sent.append(model.name))
    return sent


async def served(gate: PacingGate, settings: CrawlSettings, now: Callable[[], float] = time.time) -> Ticket:
    """One request to HOST through `gate`: its slot, released after a clean 200."""
    ticket = await gate.acquire(HOST, settings, None, now())
    assert isinstance(ticket, Ticket)
    await gate.release(ticket, OK, False, now())
    return ticket


async def stored_item(client: Any, table: str) -> dict[str, Any]:
    raw = await client.get_item(TableName=table, Key={"host": {"S": HOST}, "kind": {"S": "PACE"}})
    return dict(raw["Item"])


def test_a_clean_slot_serves_the_next_request_without_a_write(moto_server: EmbeddedMoto) -> None:
    """Two requests in turn: one reservation, no write between them, one release at the end that carries
    both observations and frees the lease."""

    async def main() -> None:
        async with dynamodb(moto_server) as client:
            table = await create_hosts_table(client)
            gate = PacingGate(client, table, keep_s=1.0)
            settings = unspaced()
            first = await gate.acquire(HOST, settings, None, time.time())
            assert isinstance(first, Ticket)
            sent = record_calls(client)
            await gate.release(first, OK, False, time.time())
            second = await gate.acquire(HOST, settings, None, time.time())
            assert isinstance(second, Ticket)
            assert second.lease_id == first.lease_id and abs(second.start_at - time.time()) < 0.1
            assert sent == []  # neither a release nor a reservation reached the table
            await gate.release(second, OK, False, time.time())
            updates: list[dict[str, Any]] = []
            client.meta.events.register(
                "before-parameter-build.dynamodb.UpdateItem",
                lambda params, **_: updates.append(dict(params)),
            )
            await gate.settle()
            assert sent == ["UpdateItem"]
            # One path per lease: DynamoDB refuses an expression whose document paths overlap (moto does not).
            named = list(updates[0]["ExpressionAttributeNames"].values())
            assert named == [first.lease_id], updates[0]
            item = await stored_item(client, table)
            assert item["leases"]["M"] == {}
            assert len(item["obs"]["L"]) == 2  # both requests' outcomes reach the host's window
            assert gate.reused == 1

    asyncio.run(main())


def test_a_host_with_a_delay_keeps_nothing(moto_server: EmbeddedMoto) -> None:
    """A delay (the host's Crawl-delay or AIMD's) is kept by reservations only: every slot goes back."""

    async def main() -> None:
        async with dynamodb(moto_server) as client:
            table = await create_hosts_table(client)
            gate = PacingGate(client, table, keep_s=1.0)
            settings = unspaced(delay_ms=100)
            first = await gate.acquire(HOST, settings, None, time.time())
            assert isinstance(first, Ticket)
            sent = record_calls(client)
            await gate.release(first, OK, False, time.time())
            assert sent == ["UpdateItem"]
            second = await gate.acquire(HOST, settings, None, time.time())
            assert isinstance(second, Ticket) and second.lease_id != first.lease_id
            assert gate.reused == 0

    asyncio.run(main())


def test_a_distress_answer_returns_the_hosts_kept_slots_at_once(moto_server: EmbeddedMoto) -> None:
    """A 429 is never kept; the slot kept by the other request goes back with it, and the next request
    meets the block instead of a kept slot."""

    async def main() -> None:
        async with dynamodb(moto_server) as client:
            table = await create_hosts_table(client)
            gate = PacingGate(client, table, keep_s=30.0)
            settings = unspaced()
            a, b = await asyncio.gather(*(gate.acquire(HOST, settings, None, time.time()) for _ in range(2)))
            assert isinstance(a, Ticket) and isinstance(b, Ticket)
            await gate.release(a, OK, False, time.time())
            limited = FetchResult(url=HOST + "/", status=429, headers={"retry-after": "30"}, ttfb_ms=5.0)
            asked = time.time()
            await gate.release(b, limited, False, time.time())
            await asyncio.sleep(0.2)  # the kept slot's return write, sent at once (not after 30 s)
            item = await stored_item(client, table)
            assert item["leases"]["M"] == {}
            assert float(item["blocked_until"]["N"]) >= asked + 29
            answer = await gate.acquire(HOST, settings, None, time.time())
            assert isinstance(answer, Wait) and answer.reason == "blocked"
            assert gate.reused == 0

    asyncio.run(main())


def test_a_kept_slot_needs_a_fresh_reading_of_the_host(moto_server: EmbeddedMoto) -> None:
    """This container's last reading of the host's item is older than `KEEP_VIEW_S` (another container may
    have blocked it since): the kept slot goes back and the request reserves, which reads the item."""
    offset = [0.0]

    def clock() -> float:
        return time.time() + offset[0]

    async def main() -> None:
        async with dynamodb(moto_server) as client:
            table = await create_hosts_table(client)
            gate = PacingGate(client, table, clock=clock, keep_s=30.0)
            settings = unspaced()
            first = await served(gate, settings, clock)
            offset[0] += KEEP_VIEW_S + 0.05
            sent = record_calls(client)
            second = await gate.acquire(HOST, settings, None, clock())
            assert isinstance(second, Ticket) and second.lease_id != first.lease_id
            assert "UpdateItem" in sent
            await asyncio.sleep(0.1)
            item = await stored_item(client, table)
            assert set(item["leases"]["M"]) == {second.lease_id}  # the kept one went back
            assert len(item["obs"]["L"]) == 1
            assert gate.reused == 0

    asyncio.run(main())


def test_a_kept_lease_too_short_for_the_next_fetch_is_not_reused(moto_server: EmbeddedMoto) -> None:
    """A crawl whose fetches may take longer than the lease's remaining life (its fetch timeout 20 s above
    the one the slot was granted for) reserves a slot of its own; the kept one goes back unused."""

    async def main() -> None:
        async with dynamodb(moto_server) as client:
            table = await create_hosts_table(client)
            gate = PacingGate(client, table, keep_s=30.0)
            settings = unspaced()
            first = await served(gate, settings)
            fetch = settings.fetch.model_copy(update={"total_timeout_s": settings.fetch.total_timeout_s + 20})
            slower = settings.model_copy(update={"fetch": fetch})
            sent = record_calls(client)
            second = await gate.acquire(HOST, slower, None, time.time())
            assert isinstance(second, Ticket) and second.lease_id != first.lease_id
            assert sent == ["UpdateItem"]
            assert gate.reused == 0
            await gate.settle()
            item = await stored_item(client, table)
            assert set(item["leases"]["M"]) == {second.lease_id}  # the short one went back at settle

    asyncio.run(main())


def test_an_unclaimed_kept_slot_goes_back_after_keep_s(moto_server: EmbeddedMoto) -> None:
    async def main() -> None:
        async with dynamodb(moto_server) as client:
            table = await create_hosts_table(client)
            gate = PacingGate(client, table, keep_s=0.1)
            await served(gate, unspaced())
            assert (await stored_item(client, table))["leases"]["M"] != {}
            await asyncio.sleep(0.3)
            assert (await stored_item(client, table))["leases"]["M"] == {}

    asyncio.run(main())


def test_kept_slots_across_containers_never_exceed_the_concurrency(moto_server: EmbeddedMoto) -> None:
    """Three containers, four fetch loops each, on a host of concurrency 3: slots are kept and reused (most
    requests make no reservation), yet never more than three requests are in flight, and after `settle`
    nothing stays leased."""
    intervals: list[tuple[float, float]] = []

    async def main() -> list[PacingGate]:
        async with dynamodb(moto_server) as c1, dynamodb(moto_server) as c2, dynamodb(moto_server) as c3:
            table = await create_hosts_table(c1)
            gates = [PacingGate(c, table, keep_s=0.05) for c in (c1, c2, c3)]
            settings = unspaced(concurrency=3)
            deadline = time.time() + 2.5

            async def loop(gate: PacingGate) -> None:
                while time.time() < deadline:
                    got = await gate.acquire(HOST, settings, None, time.time())
                    if isinstance(got, Wait):
                        await asyncio.sleep(min(max(got.until - time.time(), 0.01), 0.2))
                        continue
                    start = time.time()
                    await asyncio.sleep(0.02)
                    intervals.append((start, time.time()))
                    await gate.release(got, OK, False, time.time())

            await asyncio.gather(*(loop(g) for g in gates for _ in range(4)))
            await asyncio.gather(*(g.settle() for g in gates))
            assert (await stored_item(c1, table))["leases"]["M"] == {}
            return gates

    gates = asyncio.run(main())
    assert max_in_flight(intervals) <= 3
    assert sum(g.reused for g in gates) > len(intervals) / 2, (sum(g.reused for g in gates), len(intervals))


def max_in_flight(intervals: list[tuple[float, float]]) -> int:
    events = sorted(itertools.chain.from_iterable(((s, 1), (e, -1)) for s, e in intervals))
    return max(itertools.accumulate(step for _, step in events))
