"""The inlink map/reduce (seolens_core/crawl/_inlinks.py) equals count_inlinks on any graph and any split."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from infra.local.asl import AslExecutor, substitute
from seolens_core.adapters._batch_part import encode_batch
from seolens_core.adapters._json import load_lines
from seolens_core.crawl._inlinks import InlinkCounter, MemoryObjects, is_done, rows_keys, start_cursor
from seolens_core.crawl._report import count_inlinks

URLS = [f"https://ex.test/p{i}" for i in range(12)]
CRAWL = "c1"

link = st.fixed_dictionaries(
    {"source": st.sampled_from(URLS), "target": st.sampled_from(URLS), "internal": st.booleans()}
)


def put_parts(store: MemoryObjects, parts: list[list[dict[str, Any]]]) -> None:
    """Link-only parts (as written before batch parts) and batch parts, alternately."""
    for i, rows in enumerate(parts):
        if i % 2:
            body = encode_batch({"pages": [{"url": f"u{i}"}], "links": rows}) or b""
            store.objects[f"crawls/{CRAWL}/parts/{i:05d}-x.jsonl"] = body
        else:
            body = "".join(json.dumps(r) + "\n" for r in rows).encode()
            store.objects[f"crawls/{CRAWL}/links/{i:05d}-x.jsonl"] = body


def run_all(counter: InlinkCounter, shards: int) -> tuple[dict[str, Any], int]:
    async def go() -> tuple[dict[str, Any], int]:
        cursor, steps = start_cursor(shards), 0
        while not is_done(cursor):
            cursor = await counter.step(CRAWL, cursor)
            assert len(json.dumps(cursor)) < 200, cursor  # the state never carries URLs lists
            steps += 1
        return cursor, steps

    return asyncio.run(go())


def copied_rows(store: MemoryObjects, cursor: dict[str, Any], kind: str = "links") -> list[dict[str, Any]]:
    """The rows of `kind` the map steps copied, read back as the report reads them."""
    return [row for key in rows_keys(CRAWL, kind, cursor) for row in load_lines(store.objects[key])]


def in_reading_order(parts: list[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    """`put_parts`' rows in key order: the link-only parts (even), then the batch parts (odd)."""
    return [row for i in sorted(range(len(parts)), key=lambda i: (i % 2, i)) for row in parts[i]]


def counts(counter: InlinkCounter, shards: int, wanted: list[str]) -> dict[str, int]:
    return dict(asyncio.run(counter.counts(CRAWL, shards, wanted)))


@settings(max_examples=150, deadline=None)
@given(
    parts=st.lists(st.lists(link, max_size=15), max_size=8),
    shards=st.integers(1, 6),
    edge_budget=st.integers(1, 40),
    per_step=st.integers(1, 3),
)
def test_partitioned_counts_equal_count_inlinks(
    parts: list[list[dict[str, Any]]], shards: int, edge_budget: int, per_step: int
) -> None:
    """Any split into parts, including one page's links in two parts (a re-delivered URL), any budgets."""
    store = MemoryObjects()
    put_parts(store, parts)
    counter = InlinkCounter(store, edge_budget=edge_budget, shards_per_step=per_step)
    cursor, steps = run_all(counter, shards)
    expected = {u: n for u, n in count_inlinks(r for p in parts for r in p).items() if n}
    assert counts(counter, shards, [*URLS, "https://ex.test/never"]) == expected
    assert copied_rows(store, cursor) == in_reading_order(parts)  # every row once, external ones too
    assert copied_rows(store, cursor, "pages") == [{"url": f"u{i}"} for i in range(1, len(parts), 2)]
    assert copied_rows(store, cursor, "pacing") == []
    assert steps <= len(parts) + 1 + -(-shards // per_step)  # a map step reads at least one part


@settings(max_examples=40, deadline=None)
@given(
    parts=st.lists(st.lists(link, min_size=1, max_size=10), min_size=1, max_size=6), shards=st.integers(1, 4)
)
def test_retried_and_repeated_steps_change_nothing(parts: list[list[dict[str, Any]]], shards: int) -> None:
    store = MemoryObjects()
    put_parts(store, parts)
    counter = InlinkCounter(store, edge_budget=7)

    async def with_retries() -> dict[str, Any]:
        cursor = start_cursor(shards)
        while not is_done(cursor):
            await counter.step(CRAWL, cursor)  # a timed-out invocation whose work is redone
            cursor = await counter.step(CRAWL, cursor)
        return cursor

    cursor = asyncio.run(with_retries())
    expected = {u: n for u, n in count_inlinks(r for p in parts for r in p).items() if n}
    assert counts(counter, shards, URLS) == expected
    assert copied_rows(store, cursor) == in_reading_order(parts)
    cursor, _ = run_all(InlinkCounter(store, edge_budget=3), shards)  # a second run with another chunking
    assert counts(counter, shards, URLS) == expected
    assert copied_rows(store, cursor) == in_reading_order(parts)


def test_map_writes_target_shards_and_reduce_writes_counts() -> None:
    store = MemoryObjects()
    a, b, c = URLS[:3]
    put_parts(
        store,
        [
            [
                {"source": a, "target": b, "internal": True},
                {"source": a, "target": b, "internal": True},  # twice on one page: once
                {"source": a, "target": a, "internal": True},  # itself: never
                {"source": a, "target": "https://other.test/", "internal": False},
            ],
            [{"source": c, "target": b, "internal": True}, {"source": b, "target": a, "internal": True}],
        ],
    )
    counter = InlinkCounter(store, edge_budget=1)
    _, steps = run_all(counter, 2)
    assert steps == 2 + 1 + 2  # two map steps (budget 1 edge = one part each), end of map, two shards
    maps = sorted(k for k in store.objects if "/inlinks/map/" in k)
    assert {k.rsplit("/", 1)[1] for k in maps} == {"000000.json", "000001.json"}
    reduced = {}
    for k in sorted(k for k in store.objects if "/inlinks/counts/" in k):
        reduced.update(json.loads(store.objects[k]))
    assert reduced == {b: 2, a: 1}
    assert counts(counter, 2, [a, b, c]) == {a: 1, b: 2}


def test_checkpointed_run_resumes_within_a_time_budget() -> None:
    store = MemoryObjects()
    put_parts(store, [[{"source": URLS[i], "target": URLS[0], "internal": True}] for i in range(1, 6)])
    counter = InlinkCounter(store, edge_budget=1)
    ticks = iter(range(1000))

    async def invocations() -> int:
        calls = 0
        while True:
            calls += 1
            cursor = await counter.run(
                CRAWL, await counter.load(CRAWL) or start_cursor(4), budget_s=1, clock=lambda: next(ticks)
            )
            if is_done(cursor):
                return calls

    assert asyncio.run(invocations()) == 5 + 1 + 4  # one step per invocation: 5 maps, end of map, 4 shards
    assert counts(counter, 4, URLS) == {URLS[0]: 5}


def test_parts_written_after_the_counts_are_mapped_on_the_next_run() -> None:
    store = MemoryObjects()
    first = [[{"source": URLS[1], "target": URLS[0], "internal": True}]]
    put_parts(store, first)
    counter = InlinkCounter(store)
    done = asyncio.run(counter.run(CRAWL, start_cursor(3)))
    assert is_done(done) and counts(counter, 3, URLS) == {URLS[0]: 1}
    late = [{"source": URLS[2], "target": URLS[0], "internal": True}]
    late += [{"source": URLS[1], "target": URLS[0], "internal": True}]  # a page delivered again: still one
    store.objects[f"crawls/{CRAWL}/links/99999-late.jsonl"] = "".join(
        json.dumps(r) + "\n" for r in late
    ).encode()
    again = asyncio.run(counter.run(CRAWL, asyncio.run(counter.load(CRAWL))))
    assert is_done(again) and again["step"] == done["step"] + 1
    assert counts(counter, 3, URLS) == {URLS[0]: 2}
    # a worker batch's part after that: found past the link-only parts
    batch = encode_batch({"links": [{"source": URLS[3], "target": URLS[0], "internal": True}]})
    store.objects[f"crawls/{CRAWL}/parts/99999-late.jsonl"] = batch or b""
    third = asyncio.run(counter.run(CRAWL, asyncio.run(counter.load(CRAWL))))
    assert is_done(third) and third["after"].endswith("parts/99999-late.jsonl")
    assert counts(counter, 3, URLS) == {URLS[0]: 3}
    assert asyncio.run(counter.run(CRAWL, third)) == third  # nothing new: the cursor stays
    assert copied_rows(store, third) == [
        *first[0],
        *late,
        {"source": URLS[3], "target": URLS[0], "internal": True},
    ]


def test_a_checkpoint_of_another_version_is_started_over() -> None:
    """A cursor from before the map copied its link rows would leave the report without them."""
    store = MemoryObjects()
    put_parts(store, [[{"source": URLS[1], "target": URLS[0], "internal": True}]])
    counter = InlinkCounter(store)
    old = {**start_cursor(2), "v": 1, "phase": "done", "after": "crawls/c1/links/00000-x.jsonl", "step": 1}
    asyncio.run(counter.save(CRAWL, old))
    assert asyncio.run(counter.load(CRAWL)) is None
    done = asyncio.run(counter.run(CRAWL, asyncio.run(counter.load(CRAWL)) or start_cursor(2)))
    assert copied_rows(store, done) == [{"source": URLS[1], "target": URLS[0], "internal": True}]
    assert asyncio.run(counter.load(CRAWL)) == done


DEFINITION = Path(__file__).resolve().parents[3] / "infra" / "statemachine" / "crawl.asl.json"
ARNS = {
    n: f"arn:aws:lambda:us-east-1:123456789012:function:{n}"
    for n in ("SeedFunctionArn", "ProgressFunctionArn", "ReportFunctionArn")
}


def test_state_machine_loops_orphans_until_done() -> None:
    answers = [False, False, True]
    calls: list[str] = []

    def invoke(arn: str, payload: Any) -> Any:
        if arn == ARNS["SeedFunctionArn"]:
            return {"crawl_id": "c1", "cursor": None, "seed_done": True, "wait_seconds": 0}
        if arn == ARNS["ProgressFunctionArn"]:
            return {
                "crawl_id": "c1",
                "state": "DRAINED",
                "wait_seconds": 0,
                "counters": {},
                "checked_at": 0.0,
            }
        calls.append(payload["action"])
        assert set(payload) == {"crawl_id", "action", "error"}
        if payload["action"] == "orphans":
            return {"crawl_id": "c1", "ok": True, "done": answers.pop(0), "phase": "map"}
        return {"crawl_id": "c1", "ok": True}

    executor = AslExecutor(substitute(DEFINITION.read_text(), ARNS), invoke, sleep=lambda s: None)
    result = executor.run({"crawl_id": "c1"}, name="crawl-c1")
    assert result.status == "SUCCEEDED", (result.error, result.cause)
    assert calls == ["orphans", "orphans", "orphans", "report"]
    assert len(json.dumps(result.output)) < 1000  # the loop keeps the state small


@settings(max_examples=120, deadline=None)
@given(
    parts=st.lists(st.lists(link, min_size=1, max_size=10), max_size=10),
    order=st.permutations(range(10)),
    premap_at=st.lists(st.booleans(), min_size=10, max_size=10),
    shards=st.integers(1, 4),
    edge_budget=st.integers(1, 25),
)
def test_premapping_while_parts_land_out_of_order_counts_every_edge_once(
    parts: list[list[dict[str, Any]]],
    order: list[int],
    premap_at: list[bool],
    shards: int,
    edge_budget: int,
) -> None:
    """Parts land in any order (a part is named by its worker's clock, and written later) while map steps run
    over what has landed; a part behind the cursor is mapped by the sweep: every edge counted, every row
    copied once (links.jsonl is made of the copies)."""
    store = MemoryObjects()
    counter = InlinkCounter(store, edge_budget=edge_budget)
    keys = [f"crawls/{CRAWL}/parts/{i:05d}-x.jsonl" for i in range(len(parts))]

    async def go() -> dict[str, Any]:
        cursor = start_cursor(shards)
        for written, i in enumerate(j for j in order if j < len(parts)):
            store.objects[keys[i]] = encode_batch({"pages": [{"url": f"u{i}"}], "links": parts[i]}) or b""
            if premap_at[written]:
                cursor = await counter.premap(CRAWL, cursor, budget_s=0, min_parts=1, edge_budget=edge_budget)
        return await counter.run(CRAWL, cursor)

    cursor = asyncio.run(go())
    assert is_done(cursor)
    expected = {u: n for u, n in count_inlinks(r for p in parts for r in p).items() if n}
    assert counts(counter, shards, URLS) == expected
    everything = sorted(json.dumps(r, sort_keys=True) for p in parts for r in p)
    assert sorted(json.dumps(r, sort_keys=True) for r in copied_rows(store, cursor)) == everything
    assert cursor["links"] == len(everything)  # the report's link count when it has no reason to read them
    assert sorted(r["url"] for r in copied_rows(store, cursor, "pages")) == sorted(
        f"u{i}" for i in range(len(parts))
    )


def test_a_part_landing_behind_the_premap_cursor_is_swept() -> None:
    """The case the sweep exists for, spelled out: parts 0 and 2 premapped, then part 1 lands behind them."""
    store = MemoryObjects()
    counter = InlinkCounter(store)
    rows = [[{"source": URLS[i], "target": URLS[5], "internal": True}] for i in range(3)]

    def land(i: int) -> None:
        store.objects[f"crawls/{CRAWL}/parts/{i:05d}-x.jsonl"] = encode_batch({"links": rows[i]}) or b""

    async def go() -> dict[str, Any]:
        land(0)
        land(2)
        cursor = await counter.premap(CRAWL, start_cursor(2), budget_s=0, min_parts=1)
        assert cursor["premapped_to"].endswith("00002-x.jsonl")
        land(1)
        return await counter.run(CRAWL, cursor)

    cursor = asyncio.run(go())
    assert counts(counter, 2, [URLS[5]]) == {URLS[5]: 3}
    assert len(copied_rows(store, cursor)) == 3


def test_work_ahead_maps_a_step_whenever_its_minimum_waits_within_its_budget() -> None:
    """A step whenever `min_parts` parts wait (one step a check fell behind the crawl; a step for each part
    or two landed meanwhile multiplied the map objects), until the budget is spent."""
    store = MemoryObjects()
    counter = InlinkCounter(store)

    def land(first: int, count: int) -> None:
        for i in range(first, first + count):
            rows = [{"source": URLS[i % 12], "target": URLS[(i + 1) % 12], "internal": True}]
            store.objects[f"crawls/{CRAWL}/parts/{i:05d}-x.jsonl"] = encode_batch({"links": rows}) or b""

    async def premap(cursor: dict[str, Any], budget_s: float, ticks: list[float]) -> dict[str, Any]:
        clock = iter(ticks)
        return await counter.premap(
            CRAWL, cursor, budget_s=budget_s, clock=lambda: next(clock), min_parts=3, edge_budget=2
        )

    land(0, 2)
    cursor = asyncio.run(premap(start_cursor(2), 60, [0.0] * 50))
    assert cursor["step"] == 0 and not any("/inlinks/" in k for k in store.objects)
    land(2, 5)
    cursor = asyncio.run(premap(cursor, 60, [0.0] * 50))  # 7 wait: 2, 2, then 3 wait: 2; 1 left
    assert cursor["step"] == 3 and cursor["after"].endswith("00005-x.jsonl")
    land(7, 9)
    cursor = asyncio.run(premap(cursor, 1.0, [0.0, 0.4, 0.8, 1.2, 9.9]))  # 10 wait; the budget ends after 3
    assert cursor["step"] == 6 and cursor["after"].endswith("00011-x.jsonl")


def test_a_run_checkpoints_every_second_of_steps_and_at_its_end() -> None:
    """Ten one-edge map steps at 0.3 s each, then the end of the map and one reduce (12 steps): checkpoints
    after 1.2 s and 2.4 s of steps, and at the end (3.6 s), not one per step."""
    saved: list[dict[str, Any]] = []

    class Recording(MemoryObjects):
        async def put_object(self, key: str, body: bytes, content_type: str = "application/json") -> None:
            if key.endswith("/cursor.json"):
                saved.append(json.loads(body))
            await super().put_object(key, body, content_type)

    store = Recording()
    put_parts(store, [[{"source": URLS[i], "target": URLS[0], "internal": True}] for i in range(1, 11)])
    counter = InlinkCounter(store, edge_budget=1)
    ticks = iter([i * 0.3 for i in range(100)])
    cursor = asyncio.run(counter.run(CRAWL, start_cursor(1), clock=lambda: next(ticks)))
    assert is_done(cursor)
    assert [c["step"] for c in saved] == [4, 8, 10] and saved[-1] == cursor
    assert counts(counter, 1, URLS) == {URLS[0]: 10}
