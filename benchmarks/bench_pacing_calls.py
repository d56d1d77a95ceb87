"""Cost of the shared per-host pacing state under contention: N workers x M concurrent fetches, ONE host.

    python benchmarks/bench_pacing_calls.py [--workers 8] [--coroutines 10] [--seconds 10] [--delay-ms 0]
        [--concurrency 16] [--fetch-ms 20] [--old-rev ce43467] [--release-window-ms 30]

Each worker is a container with its own aiobotocore client and HostPacingStore on the embedded moto server;
each of its M coroutines loops: acquire a slot (local wait up to 2 s), "fetch" (sleep), release with a 200.
A deferral is treated as the worker does: the message comes back at `until` (sleep). Prints fetches/s, API
calls per fetch by operation, failed conditional writes, deferrals, and the smallest gap between starts,
for the current store alone, for it behind `CoalescingPacing` (one container's concurrent reserves share one
write, returns within the release window share one), and, unless `--old-rev ''`, for the optimistic
GetItem + PutItem store of that commit.
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import itertools
import subprocess
import sys
import tempfile
import time
from collections import Counter
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

from aiobotocore.session import get_session

from infra.local.moto_server import start_moto_server
from seolens_core.adapters.host_pacing import HostPacingStore
from seolens_core.politeness import (
    AimdSettings,
    CoalescingPacing,
    Deferred,
    HostPacing,
    Observation,
    PacingContention,
    acquire,
)

HOST = "https://bench.example:443"
ROOT = Path(__file__).resolve().parent.parent


def old_store_class(rev: str) -> Any:
    """The HostPacingStore of an older commit, loaded from `git show` (same politeness core API)."""
    source = subprocess.run(
        ["git", "show", f"{rev}:seolens_core/adapters/host_pacing.py"],
        cwd=ROOT,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    path = Path(tempfile.mkdtemp()) / "old_host_pacing.py"
    path.write_text(source)
    spec = importlib.util.spec_from_file_location("old_host_pacing", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["old_host_pacing"] = module
    spec.loader.exec_module(module)
    return module.HostPacingStore


async def run(
    endpoint: str, store_cls: Any, args: argparse.Namespace, coalesce: bool = False
) -> dict[str, Any]:
    settings = AimdSettings(
        enabled=False,
        initial_delay_ms=args.delay_ms,
        initial_concurrency=args.concurrency,
        max_concurrency=args.concurrency,
    )
    session = get_session()
    starts: list[float] = []
    deferrals: Counter[str] = Counter()
    contention = 0
    async with AsyncExitStack() as stack:
        clients = [
            await stack.enter_async_context(
                session.create_client(
                    "dynamodb",
                    endpoint_url=endpoint,
                    region_name="us-east-1",
                    aws_access_key_id="testing",
                    aws_secret_access_key="testing",
                )
            )
            for _ in range(args.workers)
        ]
        table = f"hosts-{time.time_ns()}"
        await clients[0].create_table(
            TableName=table,
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
        stores = [store_cls(c, table, settings=settings, start_guard_s=0.02) for c in clients]
        await stores[0].set_floor(HOST, 0)
        for s in stores:
            s.calls.clear()
        deadline = time.time() + args.seconds
        counter = itertools.count()

        ports: list[HostPacing] = [
            CoalescingPacing(s, release_window_s=args.release_window_ms / 1000) if coalesce else s
            for s in stores
        ]

        async def coroutine(store: HostPacing) -> None:
            nonlocal contention
            while time.time() < deadline:
                lease = f"l{next(counter)}"
                try:
                    r = await acquire(
                        store,
                        HOST,
                        lease,
                        lease_ttl_s=60,
                        max_local_wait_s=2.0,
                        clock=time.time,
                        sleep=asyncio.sleep,
                    )
                except PacingContention:
                    contention += 1
                    await asyncio.sleep(1.0)
                    continue
                if isinstance(r, Deferred):
                    deferrals[r.reason.value] += 1
                    await asyncio.sleep(max(r.until - time.time(), 0.05))
                    continue
                starts.append(time.time())
                await asyncio.sleep(args.fetch_ms / 1000)
                try:
                    await store.release(HOST, lease, Observation(status=200, ttfb_ms=args.fetch_ms))
                except PacingContention:
                    contention += 1  # the lease stays until it expires

        t0 = time.time()
        await asyncio.gather(*(coroutine(p) for p in ports for _ in range(args.coroutines)))
        elapsed = time.time() - t0
    calls: Counter[str] = sum((s.calls for s in stores), Counter())
    starts.sort()
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    return {
        "fetches": len(starts),
        "fetches_per_s": len(starts) / elapsed,
        "calls_per_fetch": sum(calls.values()) / max(len(starts), 1),
        "by_op": {k: round(v / max(len(starts), 1), 2) for k, v in sorted(calls.items())},
        "failed_conditions": sum(s.conflicts for s in stores),
        "deferrals": dict(deferrals),
        "contention_errors": contention,
        "min_gap_ms": min(gaps) * 1000 if gaps else float("nan"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--workers", type=int, default=8)
    parser.add_argument("--coroutines", type=int, default=10)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--delay-ms", type=int, default=0)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--fetch-ms", type=int, default=20)
    parser.add_argument("--old-rev", default="ce43467", help="commit of the optimistic store; '' to skip")
    parser.add_argument("--release-window-ms", type=float, default=30.0)
    args = parser.parse_args()
    print(
        f"{args.workers} workers x {args.coroutines} coroutines, one host: delay {args.delay_ms} ms,"
        f" concurrency {args.concurrency}, fetch {args.fetch_ms} ms, {args.seconds:.0f} s each"
    )
    moto = start_moto_server()
    try:
        variants: list[tuple[str, Any, bool]] = [
            ("store alone (UpdateItem arithmetic)", HostPacingStore, False),
            ("coalesced (CoalescingPacing)", HostPacingStore, True),
        ]
        if args.old_rev:
            variants.append((f"old (GetItem+PutItem, {args.old_rev})", old_store_class(args.old_rev), False))
        for name, cls, coalesce in variants:
            r = asyncio.run(run(moto.endpoint_url, cls, args, coalesce))
            print(
                f"{name:38s} fetches={r['fetches']:5d} {r['fetches_per_s']:7.1f}/s"
                f"  calls/fetch={r['calls_per_fetch']:6.2f} {r['by_op']}"
                f"  failed_conditions={r['failed_conditions']} deferrals={r['deferrals']}"
                f" contention={r['contention_errors']} min_gap={r['min_gap_ms']:.1f}ms"
            )
    finally:
        moto.stop()


if __name__ == "__main__":
    main()
