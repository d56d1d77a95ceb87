"""Polite-rate utilisation: achieved request rate / allowed rate (1 / Crawl-delay), per host, measured
from the fixture server's request log, for 1 host and for N hosts crawled together in one crawl.

    python benchmarks/bench_politeness.py [--hosts 20] [--pages 20] [--delay 0.5] [--workers N] [--threads]

Counted: every request the host sees from its first page request on (the sitemap probes of the seeder share
the budget), robots.txt aside; the pages are all known by then, so the host always has work. The fixture
sites are served from a child process (`ProcessFixtureServer`), so the crawler's pauses do not skew the log.
The fetch workers run as `seolens crawl` runs them, one child process each (`--threads`: as threads of this
process, the test suite's mode).
"""

from __future__ import annotations

import argparse
import functools
import itertools
import statistics
import tempfile
import time
from pathlib import Path

from infra.fixture_site import ProcessFixtureServer, RequestRecord
from infra.fixture_site.sites import crawl_delay_site
from infra.local.cli import default_workers
from infra.local.process_host import stop_fork_server
from infra.local.runtime import LocalCloud, run_crawl
from seolens_core.settings import CrawlSettings


def utilisation(records: list[RequestRecord], delay: float) -> tuple[float, float]:
    """(achieved / allowed, smallest gap between two starts)."""
    pages = [r.start for r in records if r.path.startswith("/p/")]
    if not pages:
        return 0.0, float("nan")
    first = min(pages)
    starts = sorted(r.start for r in records if r.start >= first and not r.path.startswith("/robots.txt"))
    if len(starts) < 2:
        return 0.0, float("nan")
    achieved = (len(starts) - 1) / (starts[-1] - starts[0])
    gaps = [b - a for a, b in itertools.pairwise(starts)]
    return achieved * delay, min(gaps)


def run(
    cloud: LocalCloud,
    hosts: int,
    pages: int,
    delay: float,
    workers: int,
    processes: bool = True,
    wait_out_window: bool = False,
) -> None:
    names = [f"h{i:02d}" for i in range(hosts)]
    sites = [functools.partial(crawl_delay_site, delay, pages=pages, name=n) for n in names]
    with ProcessFixtureServer(sites) as server, tempfile.TemporaryDirectory() as out:
        allow = tuple(f"{ip}:{port}" for ip, port in (server.host_port(n) for n in names))
        settings = CrawlSettings(
            start_urls=tuple(server.url(n, "/") for n in names),
            progress_poll_s=1,
            robots_retry_base_s=1,
            allow_hosts=allow,
        )
        t0 = time.monotonic()
        result = run_crawl(
            cloud,
            settings,
            workers=workers,
            out_dir=Path(out),
            processes=processes,
            wait_out_window=wait_out_window,
        )
        wall = time.monotonic() - t0
        per_host = [utilisation(server.log(n), delay) for n in names]
    utils = [u for u, _ in per_host]
    min_gap = min(g for _, g in per_host)
    print(
        f"{hosts:3d} host(s) x {pages} pages, Crawl-delay {delay:g}s, {workers} workers"
        f" ({'processes' if processes else 'threads'}{', window waited out' if wait_out_window else ''}): "
        f"status {result.execution.status}, wall {wall:.1f}s, "
        f"utilisation median {statistics.median(utils):.2f} min {min(utils):.2f} max {max(utils):.2f}, "
        f"smallest gap {min_gap:.3f}s, counters {dict(result.record.counters)}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--hosts", type=int, default=20)
    parser.add_argument("--pages", type=int, default=20)
    parser.add_argument("--delay", type=float, default=0.5)
    parser.add_argument("--workers", type=int, default=default_workers(), help="the CLI's default")
    parser.add_argument("--threads", action="store_true", help="workers as threads of this process")
    parser.add_argument(
        "--wait-out-batching-window",
        action="store_true",
        help="the workers' event source buffers records for its whole batching window, as AWS Lambda does",
    )
    args = parser.parse_args()
    cloud = LocalCloud(stack_name="seolens-bench-politeness").start()
    try:
        for hosts in (1, args.hosts):
            run(
                cloud,
                hosts,
                args.pages,
                args.delay,
                args.workers,
                not args.threads,
                args.wait_out_batching_window,
            )
    finally:
        cloud.stop()
        stop_fork_server()


if __name__ == "__main__":
    main()
