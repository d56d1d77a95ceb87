"""The sharded click-depth search (seolens_core/crawl/_inlinks.py, depth phase) equals one in-memory BFS."""

from __future__ import annotations

import asyncio
import json
from array import array
from typing import Any
from unittest import mock

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seolens_core.crawl import _inlinks
from seolens_core.crawl._inlinks import Graph, InlinkCounter, MemoryObjects, is_done, start_cursor

URLS = [f"https://ex.test/p{i}" for i in range(14)]
CRAWL = "c1"

link = st.fixed_dictionaries(
    {
        "source": st.sampled_from(URLS),
        "target": st.sampled_from(URLS),
        "internal": st.booleans(),
        "redirect": st.booleans(),
    }
)


def reference_depths(links: list[dict[str, Any]], starts: list[str]) -> dict[str, int]:
    """The Reporter's previous in-memory algorithm: BFS over every internal edge, a redirect hop included."""
    graph: dict[str, list[str]] = {}
    for row in links:
        if row.get("internal"):
            graph.setdefault(row["source"], []).append(row["target"])
    depth = dict.fromkeys(starts, 0)
    frontier = list(starts)
    while frontier:
        nxt: list[str] = []
        for url in frontier:
            for target in graph.get(url, ()):
                if target not in depth:
                    depth[target] = depth[url] + 1
                    nxt.append(target)
        frontier = nxt
    return depth


def put_parts(store: MemoryObjects, parts: list[list[dict[str, Any]]]) -> None:
    for i, rows in enumerate(parts):
        store.objects[f"crawls/{CRAWL}/links/{i:05d}-x.jsonl"] = "".join(
            json.dumps(r) + "\n" for r in rows
        ).encode()


def search(
    store: MemoryObjects,
    shards: int,
    starts: list[str],
    budget: int = 5,
    *,
    retried: bool = False,
    warm: bool = False,
) -> tuple[dict[str, int], int]:
    """Run every step (one per invocation, as the Orphans loop does) and read the depths back from the store.
    `retried`: every step runs twice, as an invocation that timed out after its writes and is run again.
    `warm`: one counter runs every step, as one invocation runs many (what it keeps in memory is used)."""
    counter = InlinkCounter(store, edge_budget=budget)

    async def go() -> tuple[dict[str, int], int]:
        cursor, steps = start_cursor(shards), 0
        while not is_done(cursor):
            if retried:
                await (counter if warm else InlinkCounter(store, edge_budget=budget)).step(
                    CRAWL, cursor, starts
                )
            # cold: a fresh counter per invocation, nothing survives in memory between steps
            cursor = await (counter if warm else InlinkCounter(store, edge_budget=budget)).step(
                CRAWL, cursor, starts
            )
            assert len(json.dumps(cursor)) < 200, cursor  # the checkpoint never carries URL lists
            steps += 1
        found: dict[str, int] = {}
        for shard in range(shards):
            found.update(await counter.depths(CRAWL, cursor, shard))
        return found, steps

    return asyncio.run(go())


@settings(max_examples=120, deadline=None)
@given(
    parts=st.lists(st.lists(link, max_size=12), max_size=8),
    shards=st.integers(1, 5),
    starts=st.lists(st.sampled_from(URLS), min_size=1, max_size=2, unique=True),
    retried=st.booleans(),
    set_max=st.sampled_from([_inlinks.FRONTIER_SET_MAX, 1, 0]),
    at_once=st.sampled_from([1, 2, 4]),
    warm=st.booleans(),
)
def test_sharded_search_equals_the_in_memory_bfs(
    parts: list[list[dict[str, Any]]],
    shards: int,
    starts: list[str],
    retried: bool,
    set_max: int,
    at_once: int,
    warm: bool,
) -> None:
    """`retried`: a step re-run after its depth map was written must still hand its level to the next one.
    `set_max`: frontiers held as sets, or (above it) searched by bisection. `at_once`: shards a step searches.
    `warm`: one counter for every step (its frontier and graphs kept between them)."""
    store = MemoryObjects()
    put_parts(store, parts)
    with (
        mock.patch.object(_inlinks, "FRONTIER_SET_MAX", set_max),
        mock.patch.object(_inlinks, "DEPTH_SHARDS_AT_ONCE", at_once),
    ):
        found, _ = search(store, shards, starts, retried=retried, warm=warm)
    assert found == reference_depths([r for p in parts for r in p], starts)


def test_a_chain_takes_one_level_per_click_and_stored_objects_hold_the_answer() -> None:
    chain = [{"source": URLS[i], "target": URLS[i + 1], "internal": True} for i in range(5)]
    shortcut = [{"source": URLS[0], "target": URLS[4], "internal": True}]
    outside = [{"source": URLS[1], "target": "https://other.test/", "internal": False}]
    store = MemoryObjects()
    put_parts(store, [chain[:3], chain[3:] + shortcut + outside])
    found, steps = search(store, 2, [URLS[0]])
    assert found == {URLS[0]: 0, URLS[1]: 1, URLS[2]: 2, URLS[3]: 3, URLS[4]: 1, URLS[5]: 2}
    stored: dict[str, int] = {}
    for key in sorted(k for k in store.objects if "/inlinks/depth/" in k and k.endswith(".json")):
        stored.update(json.loads(store.objects[key]))
    assert stored == found  # the objects in the store, not only the counter's answer
    levels = {k.split("/level/")[1].split("/")[0] for k in store.objects if "/level/" in k}
    assert levels == {"0001", "0002", "0003", "0004"}  # level 4 is empty: the search ends there
    # one map step (7 edges, budget 5) + end of map, reduce x2, then one step a level (both shards at once)
    assert steps == 2 + 2 + 4
    one_at_a_time = MemoryObjects()
    put_parts(one_at_a_time, [chain[:3], chain[3:] + shortcut + outside])
    with mock.patch.object(_inlinks, "DEPTH_SHARDS_AT_ONCE", 1):  # a step a shard: 4 levels x 2 shards
        assert search(one_at_a_time, 2, [URLS[0]]) == (found, 2 + 2 + 2 * 4)


def test_a_graph_reads_back_what_was_written_and_refuses_other_bytes() -> None:
    in_edges = {URLS[2]: {9, 2**64 - 1, 3}, URLS[0]: set(), URLS[1]: {5}}
    graph = Graph.from_bytes(Graph.of(in_edges).to_bytes())
    assert [(t, list(keys)) for t, keys in graph.in_edges()] == [
        (URLS[0], []),
        (URLS[1], [5]),
        (URLS[2], [3, 9, 2**64 - 1]),
    ]
    body = Graph.of(in_edges).to_bytes()
    with pytest.raises(ValueError, match="not an in-edge graph"):
        Graph.from_bytes(body[:-8])  # a key missing
    with pytest.raises(ValueError, match="not an in-edge graph"):
        Graph.from_bytes(array("Q", [2, 5]).tobytes() + b"[]")  # five targets announced, none there


def test_without_start_urls_there_is_no_depth_phase() -> None:
    store = MemoryObjects()
    put_parts(store, [[{"source": URLS[0], "target": URLS[1], "internal": True}]])
    found, _ = search(store, 2, [])
    assert found == {}
    assert not any("/inlinks/depth/" in k for k in store.objects)


def test_a_rerun_after_new_parts_searches_a_new_generation() -> None:
    """A redriven crawl adds parts after the counts were done: the next run maps them and searches again."""
    store = MemoryObjects()
    put_parts(store, [[{"source": URLS[0], "target": URLS[1], "internal": True}]])
    counter = InlinkCounter(store, edge_budget=5)
    cursor = asyncio.run(counter.run(CRAWL, start_cursor(2), starts=[URLS[0]]))
    store.objects[f"crawls/{CRAWL}/links/99999-y.jsonl"] = (
        json.dumps({"source": URLS[1], "target": URLS[2], "internal": True}) + "\n"
    ).encode()
    cursor = asyncio.run(counter.run(CRAWL, cursor, starts=[URLS[0]]))
    found: dict[str, int] = {}
    for shard in range(2):
        found.update(asyncio.run(counter.depths(CRAWL, cursor, shard)))
    assert found == {URLS[0]: 0, URLS[1]: 1, URLS[2]: 2}


class CountingObjects(MemoryObjects):
    def __init__(self) -> None:
        super().__init__()
        self.read: list[str] = []

    async def get_object(self, key: str) -> bytes | None:
        self.read.append(key)
        return await super().get_object(key)


def _graph_reads(limit: int) -> tuple[int, dict[str, int], InlinkCounter]:
    chain = [{"source": URLS[i], "target": URLS[i + 1], "internal": True} for i in range(8)]
    store = CountingObjects()
    put_parts(store, [chain])
    with mock.patch.object(_inlinks, "GRAPH_CACHE_BYTES", limit):
        counter = InlinkCounter(store, edge_budget=100)
        cursor = asyncio.run(counter.run(CRAWL, start_cursor(3), starts=[URLS[0]]))
    found: dict[str, int] = {}
    for shard in range(3):
        found.update(asyncio.run(counter.depths(CRAWL, cursor, shard)))
    return sum("/inlinks/graph/" in k for k in store.read), found, counter


def test_one_run_of_the_depth_search_reads_each_graph_once_and_then_lets_them_go() -> None:
    """Eight levels over three shards: each level searches every shard's in-edges. Kept between levels, each
    graph file is read once; with no room to keep them, once a level. The run drops them at its end (the
    Report step after it runs in the same container)."""
    kept_reads, found, counter = _graph_reads(_inlinks.GRAPH_CACHE_BYTES)
    assert found == {u: i for i, u in enumerate(URLS[:9])}
    assert kept_reads == 3
    unkept_reads, unkept_found, _ = _graph_reads(0)
    assert unkept_found == found and unkept_reads == 3 * 9  # nine levels, the last one finds nothing
    assert counter._graphs._bytes == 0 and not counter._graphs._kept


def test_the_graph_cache_keeps_the_most_recently_used_within_its_bytes() -> None:
    cache = _inlinks._GraphCache(limit=100)
    graphs = {k: Graph([k], array("Q", [0, 0]), array("Q")) for k in "abcd"}
    cache.put("a", graphs["a"], 40)
    cache.put("b", graphs["b"], 40)
    assert cache.get("a") is graphs["a"]  # a used last: b goes first
    cache.put("c", graphs["c"], 40)
    assert cache.get("b") is None and cache.get("a") is graphs["a"] and cache.get("c") is graphs["c"]
    cache.put("d", graphs["d"], 101)  # larger than the whole cache: not kept, nothing dropped for it
    assert cache.get("d") is None and cache.get("a") is graphs["a"]
