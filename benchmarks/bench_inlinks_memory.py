"""Peak memory per invocation of the inlink map/reduce (seolens_core/crawl/_inlinks.py) vs counting in one process.

Generates a link graph (default 300,000 internal edges over 50,000 pages, 10 pages per link part as the worker
writes them) into an in-memory object store, then runs the map/reduce step by step under tracemalloc and prints,
per phase, the peak bytes one invocation allocated above what was live before it (the stored objects are not
counted; the objects a step writes are). The baseline is the old Reporter path: every link row in a list, then
count_inlinks.

    python benchmarks/bench_inlinks_memory.py [--edges 300000] [--targets 50000] [--budget 20000] [--shards 1,16]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import random
import time
import tracemalloc
from collections.abc import Coroutine
from typing import Any

from seolens_core.crawl._inlinks import InlinkCounter, MemoryObjects, is_done, start_cursor
from seolens_core.crawl._report import count_inlinks

CRAWL = "bench"
PAGES_PER_PART = 10


def generate(store: MemoryObjects, edges: int, targets: int, seed: int = 7) -> int:
    rng = random.Random(seed)
    urls = [f"https://shop.example/category-{i % 97}/product-{i}.html" for i in range(targets)]
    per_page = max(1, edges // targets)
    rows: list[dict[str, Any]] = []
    written = part = 0
    for n, source in enumerate(urls):
        for _ in range(per_page):
            target = (
                urls[min(int(rng.paretovariate(1.2)) - 1, targets - 1)]
                if rng.random() < 0.3
                else rng.choice(urls)
            )
            rows.append(
                {
                    "crawl_id": CRAWL,
                    "source": source,
                    "target": target,
                    "internal": True,
                    "anchor": "see more",
                    "nofollow": False,
                }
            )
        if (n + 1) % PAGES_PER_PART == 0 or n == targets - 1:
            store.objects[f"crawls/{CRAWL}/links/{part:07d}-0123456789ab.jsonl"] = "".join(
                json.dumps(r, separators=(",", ":")) + "\n" for r in rows
            ).encode()
            written += len(rows)
            rows, part = [], part + 1
    return written


async def baseline(store: MemoryObjects) -> Any:
    links: list[dict[str, Any]] = []
    for key in sorted(k for k in store.objects if "/links/" in k):
        links.extend(json.loads(line) for line in store.objects[key].decode().splitlines() if line)
    return count_inlinks(links)


def measure(coro: Coroutine[Any, Any, Any]) -> tuple[Any, int]:
    tracemalloc.reset_peak()
    before = tracemalloc.get_traced_memory()[0]
    result = asyncio.run(coro)
    return result, tracemalloc.get_traced_memory()[1] - before


def mib(n: int) -> str:
    return f"{n / 2**20:7.1f} MiB"


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--edges", type=int, default=300_000)
    ap.add_argument("--targets", type=int, default=50_000)
    ap.add_argument("--budget", type=int, default=20_000, help="edges read per map invocation")
    ap.add_argument("--shards", default="1,16")
    args = ap.parse_args()
    tracemalloc.start()
    for shards in [int(x) for x in args.shards.split(",")]:
        store = MemoryObjects()
        edges = generate(store, args.edges, args.targets)
        parts = sum(1 for k in store.objects if "/links/" in k)
        counter = InlinkCounter(store, edge_budget=args.budget)
        cursor: dict[str, Any] = start_cursor(shards)
        peaks: dict[str, list[int]] = {"map": [], "reduce": []}
        started = time.perf_counter()
        while not is_done(cursor):
            phase = cursor["phase"]
            cursor, peak = measure(counter.step(CRAWL, cursor))
            peaks[phase].append(peak)
        elapsed = time.perf_counter() - started
        wanted = [f"https://shop.example/category-{i % 97}/product-{i}.html" for i in range(args.targets)]
        got, read_peak = measure(counter.counts(CRAWL, shards, wanted))
        print(
            f"P={shards:<3} edges={edges} parts={parts} budget={args.budget}: "
            f"map x{len(peaks['map'])} peak {mib(max(peaks['map']))} | "
            f"reduce x{len(peaks['reduce'])} peak {mib(max(peaks['reduce']))} | "
            f"report read peak {mib(read_peak)} | {elapsed:.1f}s under tracemalloc"
        )
        expected, base_peak = measure(baseline(store))
        exact = {u: n for u, n in expected.items() if n} == dict(got)
        print(
            f"        one process (old Reporter: all links + count_inlinks) peak {mib(base_peak)}; equal: {exact}"
        )


if __name__ == "__main__":
    main()
