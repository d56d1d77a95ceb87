"""Inlink counts of a crawl of any size, as a map/reduce over the link parts in S3.

Why: the report needs, for every page and sitemap URL, how many distinct crawled pages link to it
(`count_inlinks` semantics: unique internal `(source, target)` pairs, `source != target`, redirect hops
included). A 1,000,000-page crawl has tens of millions of edges; no single Lambda should hold them.

Layout (all under `crawls/{crawl_id}/inlinks/`):

- `map/{shard:04d}/{step:06d}.json` -- written by map step `step`: `{target: [source key, ...]}` for the
  targets whose `url_key(target) % shards == shard`. Source keys are the 64-bit `url_key` of the source
  (see seolens_core/urls/_key.py for the collision bound), sorted and unique within the step.
- `counts/{shard:04d}.json` -- written by the reduce of `shard`: `{target: inlinks}`.
- `graph/{step:06d}/{shard:04d}.bin` -- written by the same reduce: the merged in-edges of the shard's
  targets (generation `step` = the map steps done, so a re-run never reads a stale file), as `Graph`
  bytes: its targets (JSON), then each target's sorted source keys as one array of 8-byte keys, so a
  depth step reads it without decoding an integer at a time.
- `depth/{step:06d}/{shard:04d}.json` -- `{url: click depth}` of the shard's URLs reached from a start URL;
  `depth/{step:06d}/level/{level:04d}/{shard:04d}.bin` -- the url keys first reached at `level`
  (8-byte unsigned, sorted), the frontier of the next level.
- `rows/{kind}/{step:06d}.jsonl` -- the rows of each batch kind (pages, pacing, links) map step `step`
  read, as they were stored (JSON lines): the report reads these few large objects, never a part again.
- `cursor.json` -- the checkpoint of the loop (below).

Map: one step reads link rows (the links section of the batch parts `crawls/{id}/parts/*.jsonl`, after the
link-only parts `crawls/{id}/links/*.jsonl` of earlier versions) in key order, starting after the last key the
previous step read (S3 `StartAfter`, so neither the listing nor the state grows with the crawl), until it
has seen `edge_budget` edges (at least one part), then writes at most `shards` objects and the rows of the
parts it read (their bytes, copied, by kind: batch parts hold page and pacing rows too). Memory per step is
bounded by the edge budget (its pairs and the parts' bytes, ~200 bytes an edge) plus the parts read ahead
(`READ_AHEAD`, eight worker batches).

Reduce: one step merges the map objects of `shards_per_step` shards: per target, the union of source keys,
then its size. The union (rather than a sum of per-step counts) makes the result exact even when the same
page's links appear in two parts (a URL fetched twice after a lease expired) and makes every step
idempotent: a retried or repeated map step rewrites the same key, and a stale extra map object can only
add pairs that are already there. Memory per reduce step is bounded by the edges of one shard, about
edges / shards: pick `shards` so that fits (16 for the default Lambda up to ~3M edges; 256 for 50M).

Depth: the shortest click distance from a start URL over the same internal edges (the report's `depth`),
by a breadth-first search run level by level over the graph files, `DEPTH_SHARDS_AT_ONCE` shards of a level
per step (searched at once, their S3 round trips overlapping): a target of a shard not yet in the shard's
depth map gets `level + 1` when one of its source keys is in the frontier of `level` (a sorted array of
8-byte keys; a set of them up to `FRONTIER_SET_MAX` keys, searched by bisection beyond). A step holds those
shards' in-edges and depth maps plus the frontier (8 bytes per URL of one level, ~70 as a set), never the
graph. The depth phase runs only when the start URLs are passed to `step`/`run` (the report does; the
counts alone do not need it). The frontier message's `depth` is not used for this: workers run in
parallel, so the first discovery of a URL is not always along a shortest path.

Reading: the report reads `counts/` shard by shard and keeps only the URLs it asks for (pages and sitemap
URLs), so it holds O(pages) counts, never the edge list.

Driving: `InlinkCounter.step(crawl_id, cursor)` does one bounded step and returns the next cursor, a small
JSON object (`phase`, the last link key read or the next shard, the step number, `shards`); never a list of
URLs. The state machine's Orphans task calls the report function in a loop until it answers `done`; the
function keeps the cursor in `cursor.json` between invocations (the ReportFunction payload is fixed to
`crawl_id`, `action`, `error` by the contract), so a retried invocation resumes from the last checkpoint.
The report step finishes any remaining steps itself, so a cancelled or failed crawl (which skips Orphans)
gets the same counts. A finished cursor keeps the last link key mapped: a run that finds parts after it (the
crawl went on after a redrive) maps only those and reduces again, which the union makes exact.
"""

from __future__ import annotations

import bisect
import heapq
import time
from array import array
from collections import Counter
from collections.abc import AsyncGenerator, Callable, Collection, Iterable, Iterator, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any, Protocol

from seolens_core.adapters._batch_part import BATCH_KINDS, sections
from seolens_core.adapters._gather import all_or_cancel, read_ahead
from seolens_core.adapters._json import dumps, load_lines, loads
from seolens_core.adapters.results import READ_AHEAD, batch_prefix, kind_prefix
from seolens_core.urls import url_key

Cursor = dict[str, Any]

DEFAULT_SHARDS = 16
DEFAULT_EDGE_BUDGET = 200_000
DEFAULT_SHARDS_PER_STEP = 1
DEPTH_SHARDS_AT_ONCE = 4
"""Shards of one level a depth step searches at once (each holding its in-edges and depth map meanwhile)."""
GRAPH_CACHE_BYTES = 64 * 2**20
"""In-edge graphs one run of the depth search keeps between levels (each level reads every shard's graph): a
crawl whose graphs fit (~150,000 pages of 40 links) reads each once, a larger one keeps what fits. Dropped
at the end of the run: the Report step after it has the container's memory to itself."""
FRONTIER_READS_AT_ONCE = 8
"""A level's per-shard frontier files read at once (one at a time, a level waited out each round trip)."""
FRONTIER_SET_MAX = 2_000_000
"""Frontier keys held as a set (C-speed membership, ~140 MB at most); a larger level is searched by bisection."""
_LIST_PAGE = 100  # link part keys listed at a time (a cursor never holds more)
CHECKPOINT_S = 1.0
"""Seconds of steps between two checkpoints of a run (and one at its end)."""
PREMAP_MIN_PARTS = 20
"""Map steps while the crawl runs wait for this many new parts (~1,000 pages, ~6 MB of link rows: the report
copies a step's rows server-side from 5 MiB), so the steps stay few and the Orphans step has little left."""
PREMAP_EDGE_BUDGET = DEFAULT_EDGE_BUDGET // 4
"""Edges of one map step while the crawl runs: the Progress function's memory is a quarter of the Report's."""


class ObjectStore(Protocol):
    """The slice of ResultsStore the counter needs (an in-memory fake implements it in tests)."""

    async def list_keys(
        self, prefix: str, start_after: str | None = None, limit: int | None = None
    ) -> list[str]: ...

    async def put_object(self, key: str, body: bytes, content_type: str = "application/json") -> None: ...

    async def get_object(self, key: str) -> bytes | None: ...


def shard_of(target: str, shards: int) -> int:
    """The stable shard of a target URL (the same on every machine and run)."""
    return url_key(target) % shards


CURSOR_VERSION = 2
"""2: map steps copy the rows they read (`rows/`). A checkpoint of another version is started over."""


def start_cursor(shards: int = DEFAULT_SHARDS) -> Cursor:
    return {
        "v": CURSOR_VERSION,
        "phase": "map",
        "after": None,
        "step": 0,
        "shard": 0,
        "shards": shards,
        "links": 0,
    }


def _after_step(cursor: Cursor, links: int, **changes: Any) -> Cursor:
    """The cursor after one more map step, which copied `links` link rows: `links` is then the rows copied by
    all its steps (None for a checkpoint written before it was counted)."""
    total = cursor.get("links")
    return {
        **cursor,
        **changes,
        "step": cursor["step"] + 1,
        "links": None if total is None else total + links,
    }


def is_done(cursor: Cursor | None) -> bool:
    return cursor is not None and cursor.get("phase") == "done"


def _base(crawl_id: str) -> str:
    return f"crawls/{crawl_id}/inlinks/"


def rows_key(crawl_id: str, kind: str, step: int) -> str:
    """The rows of `kind` (one of `BATCH_KINDS`) read by map step `step`."""
    return f"{_base(crawl_id)}rows/{kind}/{step:06d}.jsonl"


def rows_keys(crawl_id: str, kind: str, cursor: Cursor) -> list[str]:
    """Every row of `kind` the map steps of `cursor` read, as objects in reading order (each step wrote one
    of each kind, empty or not)."""
    return [rows_key(crawl_id, kind, step) for step in range(cursor["step"])]


def _link_prefixes(crawl_id: str) -> tuple[str, str]:
    """Link-only parts, then batch parts: in key order, so one key cursor walks both."""
    return kind_prefix(crawl_id, "links"), batch_prefix(crawl_id)


async def _link_keys(store: ObjectStore, crawl_id: str, after: str | None, limit: int) -> list[str]:
    """Up to `limit` keys of parts holding links, after `after`, in key order across both prefixes."""
    keys: list[str] = []
    for prefix in _link_prefixes(crawl_id):
        if after is not None and after > prefix and not after.startswith(prefix):
            continue  # the cursor is past every key of this prefix
        start = after if after is not None and after.startswith(prefix) else None
        keys += await store.list_keys(prefix, start_after=start, limit=limit - len(keys))
        if len(keys) >= limit:
            break
    return keys


async def _link_keys_through(store: ObjectStore, crawl_id: str, last: str) -> list[str]:
    """Every key of a part holding links, up to `last` included, in key order."""
    keys: list[str] = []
    after: str | None = None
    while True:
        page = await _link_keys(store, crawl_id, after, 1000)
        keys += [key for key in page if key <= last]
        if not page or page[-1] >= last:
            return keys
        after = page[-1]


def _mapped_key(crawl_id: str, step: int) -> str:
    """The keys of the parts map step `step` read, when it ran while parts could still land behind it."""
    return f"{_base(crawl_id)}mapped/{step:06d}.txt"


def map_pairs(
    rows: Iterable[dict[str, Any]], shards: int, into: dict[int, dict[str, set[int]]] | None = None
) -> dict[int, dict[str, set[int]]]:
    """Unique internal (source, target) pairs of `rows`, source != target, grouped by target shard
    (added to `into` when given)."""
    out: dict[int, dict[str, set[int]]] = {} if into is None else into
    source_keys: dict[str, int] = {}  # a page's links come together: its key is hashed once
    for link in rows:
        source, target = link["source"], link["target"]
        if not link.get("internal") or source == target:
            continue
        key = source_keys.get(source)
        if key is None:
            key = source_keys[source] = url_key(source)
        out.setdefault(shard_of(target, shards), {}).setdefault(target, set()).add(key)
    return out


class _GraphCache:
    """Graphs by key, up to `limit` bytes of their files, the least recently used dropped first. A graph file
    is written once under its key (a new reduce generation writes new keys), so a kept graph is never stale."""

    def __init__(self, limit: int | None = None) -> None:
        self._limit = GRAPH_CACHE_BYTES if limit is None else limit
        self._kept: dict[str, tuple[Graph, int]] = {}
        self._bytes = 0

    def get(self, key: str) -> Graph | None:
        kept = self._kept.pop(key, None)
        if kept is None:
            return None
        self._kept[key] = kept  # most recently used last
        return kept[0]

    def put(self, key: str, graph: Graph, size: int) -> None:
        if size > self._limit or key in self._kept:
            return
        self._kept[key] = (graph, size)
        self._bytes += size
        while self._bytes > self._limit:
            _, dropped = self._kept.pop(next(iter(self._kept)))
            self._bytes -= dropped

    def clear(self) -> None:
        self._kept.clear()
        self._bytes = 0


@dataclass(frozen=True, slots=True)
class InlinkCounter:
    store: ObjectStore
    edge_budget: int = DEFAULT_EDGE_BUDGET
    shards_per_step: int = DEFAULT_SHARDS_PER_STEP
    # The last frontier read (its key prefix and keys): the steps of one level in one invocation share it.
    _frontier_cache: dict[str, Frontier] = field(default_factory=dict, compare=False, repr=False)
    _graphs: _GraphCache = field(default_factory=_GraphCache, compare=False, repr=False)

    async def step(self, crawl_id: str, cursor: Cursor | None, starts: Sequence[str] = ()) -> Cursor:
        """One bounded map, reduce or depth step; returns the next cursor (phase "done" at the end).
        With `starts` (normalized start URLs) the reduce is followed by the depth phase."""
        cursor = dict(cursor or start_cursor())
        if cursor["phase"] == "map":
            return await self._map(crawl_id, cursor)
        if cursor["phase"] == "sweep":
            return await self._sweep(crawl_id, cursor)
        if cursor["phase"] == "reduce":
            cursor = await self._reduce(crawl_id, cursor)
            if cursor["phase"] == "done" and starts:
                cursor = {**cursor, "phase": "depth", "level": 0, "shard": 0}
            return cursor
        if cursor["phase"] == "depth":
            return await self._depth(crawl_id, cursor, starts)
        return cursor

    async def run(
        self,
        crawl_id: str,
        cursor: Cursor | None,
        *,
        budget_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
        starts: Sequence[str] = (),
    ) -> Cursor:
        """Steps until done or until `budget_s` has passed (at least one step). Checkpoints at the end and at
        least every `CHECKPOINT_S` on the way: every step is idempotent, so a retried invocation redoes at most
        that much (a depth step takes ~20 ms, and a checkpoint after each was most of the depth search)."""
        started = saved = clock()
        cursor = cursor or start_cursor()
        if is_done(cursor) and await _link_keys(
            self.store, crawl_id, cursor["after"], 1
        ):  # parts written after the counts (a redriven crawl): map them, then reduce again
            cursor = {**cursor, "phase": "map"}
        try:
            while not is_done(cursor):
                cursor = await self.step(crawl_id, cursor, starts)
                now = clock()
                out_of_budget = budget_s is not None and now - started >= budget_s
                if is_done(cursor) or out_of_budget or now - saved >= CHECKPOINT_S:
                    await self.save(crawl_id, cursor)
                    saved = now
                if out_of_budget:
                    break
        finally:
            self._graphs.clear()
        return cursor

    async def premap(
        self,
        crawl_id: str,
        cursor: Cursor,
        *,
        budget_s: float,
        clock: Callable[[], float] = time.monotonic,
        min_parts: int = PREMAP_MIN_PARTS,
        edge_budget: int = PREMAP_EDGE_BUDGET,
    ) -> Cursor:
        """Map steps over the parts written so far, while the crawl runs, so that the Orphans step after it
        maps only the rest. A part can land behind the cursor (its name is its worker's clock when it was
        written): each step records the keys it read, and the sweep after the last map step maps any part
        up to `premapped_to` that no step read. A step whenever `min_parts` parts wait, as long as `budget_s`
        allows: one step a call fell behind the crawl, and steps of the few parts landed meanwhile multiplied
        the map objects the reduce reads."""
        started = clock()
        while cursor["phase"] == "map":
            if len(await _link_keys(self.store, crawl_id, cursor["after"], min_parts)) < min_parts:
                break
            read, links = await self._map_step(
                crawl_id, cursor, self._forward(crawl_id, cursor["after"]), edge_budget, record=True
            )
            if not read:
                break
            cursor = _after_step(cursor, links, after=read[-1], premapped_to=read[-1])
            await self.save(crawl_id, cursor)
            if clock() - started >= budget_s:
                break
        return cursor

    async def load(self, crawl_id: str) -> Cursor | None:
        raw = await self.store.get_object(_base(crawl_id) + "cursor.json")
        cursor = None if raw is None else dict(loads(raw))
        return cursor if cursor is not None and cursor.get("v") == CURSOR_VERSION else None

    async def save(self, crawl_id: str, cursor: Cursor) -> None:
        await self.store.put_object(_base(crawl_id) + "cursor.json", dumps(cursor))

    async def counts(self, crawl_id: str, shards: int, wanted: Collection[str]) -> Counter[str]:
        """Inlink counts of the `wanted` URLs, read one shard at a time (call after the cursor is done)."""
        want_by_shard: dict[int, list[str]] = {}
        for url in wanted:
            want_by_shard.setdefault(shard_of(url, shards), []).append(url)
        found: Counter[str] = Counter()
        for shard, urls in sorted(want_by_shard.items()):
            raw = await self.store.get_object(f"{_base(crawl_id)}counts/{shard:04d}.json")
            if raw is None:
                continue
            counts: dict[str, int] = loads(raw)
            for url in urls:
                if counts.get(url):
                    found[url] = counts[url]
        return found

    async def shard_counts(self, crawl_id: str, shard: int) -> dict[str, int]:
        """The inlink counts of one shard's targets (URLs with none are absent)."""
        raw = await self.store.get_object(f"{_base(crawl_id)}counts/{shard:04d}.json")
        return {} if raw is None else dict(loads(raw))

    async def _map(self, crawl_id: str, cursor: Cursor) -> Cursor:
        read, links = await self._map_step(
            crawl_id, cursor, self._forward(crawl_id, cursor["after"]), self.edge_budget
        )
        if not read:  # nothing left to read; `after` stays: the high-water mark
            after_map = "sweep" if cursor.get("premapped_to") is not None else "reduce"
            return {**cursor, "phase": after_map, "shard": 0}
        return _after_step(cursor, links, after=read[-1])

    async def _sweep(self, crawl_id: str, cursor: Cursor) -> Cursor:
        """Map the parts up to `premapped_to` that no step read (they landed behind a map step that ran while
        the crawl did): one bounded step at a time, recorded like the others, until there are none."""
        mapped: set[str] = set()
        for key in await self.store.list_keys(_base(crawl_id) + "mapped/"):
            mapped.update((await self.store.get_object(key) or b"").decode().split())
        missed = [
            k
            for k in await _link_keys_through(self.store, crawl_id, cursor["premapped_to"])
            if k not in mapped
        ]
        del mapped
        if not missed:
            return {**cursor, "phase": "reduce", "shard": 0}

        async def pages() -> AsyncGenerator[list[str], None]:
            for start in range(0, len(missed), _LIST_PAGE):
                yield missed[start : start + _LIST_PAGE]

        _, links = await self._map_step(crawl_id, cursor, pages(), self.edge_budget, record=True)
        return _after_step(cursor, links)

    async def _forward(self, crawl_id: str, after: str | None) -> AsyncGenerator[list[str], None]:
        """The keys of the parts holding links after `after`, a listing page at a time, in key order."""
        while keys := await _link_keys(self.store, crawl_id, after, _LIST_PAGE):
            yield keys
            after = keys[-1]

    async def _map_step(
        self,
        crawl_id: str,
        cursor: Cursor,
        feed: AsyncGenerator[list[str], None],
        edge_budget: int,
        record: bool = False,
    ) -> tuple[list[str], int]:
        """Map step `cursor["step"]`: the parts `feed` names, in its order, until `edge_budget` edges are read;
        writes the map objects and the rows copies (and with `record`, the keys read); returns those keys and
        the link rows copied."""
        shards: int = cursor["shards"]
        pairs: dict[int, dict[str, set[int]]] = {}
        copies: dict[str, list[bytes]] = {kind: [] for kind in BATCH_KINDS}
        read: list[str] = []
        seen = 0
        batch_parts = _link_prefixes(crawl_id)[1]

        async def sections_of(key: str) -> dict[str, bytes]:
            raw = await self.store.get_object(key) or b""
            return sections(raw, BATCH_KINDS) if key.startswith(batch_parts) else {"links": raw}

        async with aclosing(feed) as pages:
            async for keys in pages:
                async with aclosing(read_ahead(keys, sections_of, READ_AHEAD)) as parts:
                    async for key, found in parts:
                        read.append(key)
                        rows = load_lines(found["links"])
                        seen += len(rows)
                        map_pairs(rows, shards, into=pairs)
                        for kind, raw in found.items():
                            if raw.strip():
                                copies[kind].append(raw if raw.endswith(b"\n") else raw + b"\n")
                        if seen >= edge_budget:
                            break
                if seen >= edge_budget:
                    break
        if not read:
            return read, 0
        step: int = cursor["step"]
        for kind, lines in copies.items():
            await self.store.put_object(
                rows_key(crawl_id, kind, step), b"".join(lines), "application/x-ndjson"
            )
        del copies
        for shard, targets in pairs.items():
            body = {target: sorted(sources) for target, sources in sorted(targets.items())}
            key = f"{_base(crawl_id)}map/{shard:04d}/{step:06d}.json"
            await self.store.put_object(key, dumps(body))
        if record:
            await self.store.put_object(_mapped_key(crawl_id, step), "\n".join(read).encode(), "text/plain")
        return read, seen

    async def _reduce(self, crawl_id: str, cursor: Cursor) -> Cursor:
        shards: int = cursor["shards"]
        shard: int = cursor["shard"]
        end = min(shards, shard + self.shards_per_step)
        for s in range(shard, end):
            merged: dict[str, set[int]] = {}
            keys = await self.store.list_keys(f"{_base(crawl_id)}map/{s:04d}/")
            async with aclosing(read_ahead(keys, self.store.get_object, READ_AHEAD)) as parts:
                async for _, raw in parts:
                    part: dict[str, list[int]] = loads(raw or b"{}")
                    for target, sources in part.items():
                        merged.setdefault(target, set()).update(sources)
            counts = dumps({target: len(sources) for target, sources in sorted(merged.items())})
            graph = Graph.of(merged).to_bytes()
            del merged
            await all_or_cancel(
                self.store.put_object(f"{_base(crawl_id)}counts/{s:04d}.json", counts),
                self.store.put_object(
                    _graph_key(crawl_id, cursor["step"], s), graph, "application/octet-stream"
                ),
            )
            del counts, graph
        if end >= shards:
            return {**cursor, "phase": "done", "shard": shards}
        return {**cursor, "shard": end}

    async def depths(self, crawl_id: str, cursor: Cursor, shard: int) -> dict[str, int]:
        """The click depths of one shard's URLs (call after the depth phase is done)."""
        raw = await self.store.get_object(f"{_base(crawl_id)}depth/{cursor['step']:06d}/{shard:04d}.json")
        return {} if raw is None else dict(loads(raw))

    async def _depth(self, crawl_id: str, cursor: Cursor, starts: Sequence[str]) -> Cursor:
        """`DEPTH_SHARDS_AT_ONCE` shards of one BFS level: targets of each shard first reached from the
        level's frontier. The shards of a level are independent (each reads the frontier and writes only its
        own files), so their S3 round trips overlap: one at a time, the search was mostly waiting on them."""
        shards: int = cursor["shards"]
        level: int = cursor["level"]
        shard: int = cursor["shard"]
        base = f"{_base(crawl_id)}depth/{cursor['step']:06d}/"
        frontier = await self._frontier(base, level, starts)
        end = min(shards, shard + DEPTH_SHARDS_AT_ONCE)
        await all_or_cancel(
            *(self._depth_shard(crawl_id, cursor, base, s, frontier, starts) for s in range(shard, end))
        )
        if end < shards:
            return {**cursor, "shard": end}
        if not await self._frontier(base, level + 1, starts):
            return {**cursor, "phase": "done", "shard": shards}
        return {**cursor, "level": level + 1, "shard": 0}

    async def _depth_shard(
        self, crawl_id: str, cursor: Cursor, base: str, shard: int, frontier: Frontier, starts: Sequence[str]
    ) -> None:
        shards: int = cursor["shards"]
        level: int = cursor["level"]
        raw = await self.store.get_object(f"{base}{shard:04d}.json")
        depth: dict[str, int] = {} if raw is None else loads(raw)
        if level == 0:
            depth.update((u, 0) for u in starts if shard_of(u, shards) == shard)
        found = False
        if frontier:
            graph = await self._graph(_graph_key(crawl_id, cursor["step"], shard))
            for target, sources in graph.in_edges():
                if target not in depth and frontier.reaches(sources):
                    depth[target] = level + 1
                    found = True
            del graph
        if found or level == 0:
            await self.store.put_object(f"{base}{shard:04d}.json", dumps(depth))
        # From the map, not from this run's finds: a retried step (its depth map written, its level file not)
        # finds nothing new, but the level's URLs are still the next frontier.
        reached = [target for target, d in depth.items() if d == level + 1]
        keys = array("Q", sorted(url_key(u) for u in reached))
        await self.store.put_object(
            f"{base}level/{level + 1:04d}/{shard:04d}.bin", keys.tobytes(), "application/octet-stream"
        )

    async def _graph(self, key: str) -> Graph:
        """A shard's in-edges: each level of the search reads them again, from the cache where they fit."""
        graph = self._graphs.get(key)
        if graph is None:
            raw = await self.store.get_object(key)
            graph = Graph.from_bytes(raw) if raw else Graph([], array("Q", [0]), array("Q"))
            self._graphs.put(key, graph, len(raw or b""))
        return graph

    async def _frontier(self, base: str, level: int, starts: Sequence[str]) -> Frontier:
        """The url keys first reached at `level` (level 0: the start URLs)."""
        if level == 0:
            return Frontier(array("Q", sorted({url_key(u) for u in starts})))
        prefix = f"{base}level/{level:04d}/"
        if prefix in self._frontier_cache:
            return self._frontier_cache[prefix]
        parts: list[array[int]] = []
        async for _, raw in read_ahead(
            await self.store.list_keys(prefix), self.store.get_object, FRONTIER_READS_AT_ONCE
        ):
            part: array[int] = array("Q")
            part.frombytes(raw or b"")
            parts.append(part)
        frontier = Frontier(array("Q", heapq.merge(*parts)))  # each shard's keys are sorted
        del parts
        self._frontier_cache.clear()  # a level is read only once all of the previous level's shards are done
        self._frontier_cache[prefix] = frontier
        return frontier


def _graph_key(crawl_id: str, step: int, shard: int) -> str:
    return f"{_base(crawl_id)}graph/{step:06d}/{shard:04d}.bin"


@dataclass(frozen=True, slots=True)
class Graph:
    """One shard's in-edges: `targets[i]` is linked from `keys[offsets[i]:offsets[i + 1]]` (source url keys,
    sorted). Stored as 16 bytes (the JSON length, the target count), the targets as a JSON list, then the
    offsets and the keys as arrays of 8-byte unsigned integers (native order, as the level files)."""

    targets: list[str]
    offsets: array[int]
    keys: array[int]

    @classmethod
    def of(cls, in_edges: dict[str, set[int]]) -> Graph:
        targets = sorted(in_edges)
        offsets, keys = array("Q", [0]), array("Q")
        for target in targets:
            keys.extend(sorted(in_edges[target]))
            offsets.append(len(keys))
        return cls(targets, offsets, keys)

    def in_edges(self) -> Iterator[tuple[str, array[int]]]:
        offsets, keys = self.offsets, self.keys
        for i, target in enumerate(self.targets):
            yield target, keys[offsets[i] : offsets[i + 1]]

    def to_bytes(self) -> bytes:
        names = dumps(self.targets)
        return (
            array("Q", [len(names), len(self.targets)]).tobytes()
            + names
            + (self.offsets + self.keys).tobytes()
        )

    @classmethod
    def from_bytes(cls, data: bytes) -> Graph:
        size, count = array("Q", data[:16])
        targets: list[str] = loads(data[16 : 16 + size])
        numbers = array("Q", data[16 + size :])
        if len(targets) != count or len(numbers) < count + 1 or numbers[count] != len(numbers) - count - 1:
            raise ValueError(f"not an in-edge graph: {count} targets, {len(numbers)} numbers")
        return cls(targets, numbers[: count + 1], numbers[count + 1 :])


class Frontier:
    """The url keys of one BFS level (sorted), and whether any of a target's source keys is among them: by a
    set up to `FRONTIER_SET_MAX` keys (C-speed membership), by bisection beyond."""

    def __init__(self, keys: array[int]) -> None:
        self.keys = keys
        self._members = frozenset(keys) if len(keys) <= FRONTIER_SET_MAX else None

    def __len__(self) -> int:
        return len(self.keys)

    def reaches(self, sources: Iterable[int]) -> bool:
        if self._members is not None:
            return not self._members.isdisjoint(sources)
        return any(_contains(self.keys, k) for k in sources)


def _contains(keys: array[int], key: int) -> bool:
    i = bisect.bisect_left(keys, key)
    return i < len(keys) and keys[i] == key


class MemoryObjects:
    """An in-memory ObjectStore (tests and the memory benchmark)."""

    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}
        self.gets = 0

    async def list_keys(
        self, prefix: str, start_after: str | None = None, limit: int | None = None
    ) -> list[str]:
        keys = sorted(
            k for k in self.objects if k.startswith(prefix) and (start_after is None or k > start_after)
        )
        return keys if limit is None else keys[:limit]

    async def put_object(self, key: str, body: bytes, content_type: str = "application/json") -> None:
        self.objects[key] = bytes(body)

    async def get_object(self, key: str) -> bytes | None:
        self.gets += 1
        return self.objects.get(key)
