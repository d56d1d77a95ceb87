"""Experiment: Crawl-delay spacing while the crawler's process is paused by full garbage collections.

Run: python benchmarks/politeness_under_pauses.py [--objects 3000000] [--runs 3] [--in-process]

A thread keeps `--objects` small lists alive and calls gc.collect() every 0.4 s (each call stops every thread
of the process for as long as it takes). The fixture site (Crawl-delay 0.5 s, 20 pages) runs in its own
process unless --in-process, where its arrival times pause with the crawler and can bunch up. Prints the
smallest gaps the server saw per run and the pause durations.
"""

from __future__ import annotations

import argparse
import functools
import gc
import tempfile
import threading
import time
from pathlib import Path

from infra.fixture_site import FixtureServer, LogQueries, ProcessFixtureServer
from infra.fixture_site.sites import crawl_delay_site
from infra.local.runtime import LocalCloud, run_crawl
from seolens_core.settings import CrawlSettings

DELAY = 0.5


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--objects", type=int, default=3_000_000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--in-process", action="store_true", help="serve the site from a thread of this process"
    )
    args = parser.parse_args()
    junk = [[i] for i in range(args.objects)]
    pauses: list[float] = []
    stop = threading.Event()

    def pause_forever() -> None:
        while not stop.wait(0.4):
            started = time.monotonic()
            gc.collect()
            pauses.append(time.monotonic() - started)

    threading.Thread(target=pause_forever, daemon=True).start()
    cloud = LocalCloud(stack_name="pauses").start()
    violations = 0
    try:
        for i in range(args.runs):
            build = functools.partial(crawl_delay_site, DELAY, pages=20, name="site")
            server: LogQueries
            with FixtureServer([build()]) if args.in_process else ProcessFixtureServer([build]) as server:
                ip, port = server.host_port("site")
                settings = CrawlSettings(
                    start_urls=(server.url("site", "/"),),
                    progress_poll_s=1,
                    robots_retry_base_s=1,
                    allow_hosts=(f"{ip}:{port}",),
                )
                with tempfile.TemporaryDirectory() as out:
                    run = run_crawl(cloud, settings, workers=4, out_dir=Path(out))
                gaps = sorted(server.gaps("site"))
            violations += gaps[0] < DELAY
            print(
                f"run {i + 1}: {run.execution.status}, {len(gaps) + 1} requests, smallest gaps {[round(g, 3) for g in gaps[:4]]}"
            )
    finally:
        stop.set()
        cloud.stop()
    del junk
    print(
        f"pauses: {len(pauses)}, longest {max(pauses, default=0):.3f} s; runs with a gap under {DELAY} s: {violations}"
    )


if __name__ == "__main__":
    main()
