"""Politeness proven by the fixture server's request log (start/end of every request), 4 workers.

Each scenario is a small NumberedPages site; the crawler's own counters are only used to check the crawl
ended, every claim about pacing is read from what the server saw. The server runs in its own process, so
its arrival times are not distorted by pauses of the test process (GC, GIL). So does each fetch worker (an
emulated Lambda environment per child process, as `seolens crawl` runs them and as Lambda's sandboxes are):
as threads of the test process the workers shared its GIL with the state machine, the queue pollers and
the heap of every earlier test, and a stall there made a worker miss its slot. Measured with a neighbour
thread holding the GIL ~50 ms every 0.7 s: workers as threads lost two slots in each of 3 runs (0.908 of
the allowed rate); as processes none in 6 of 7 runs. CI saw the threads' loss once (0.939, one slot).
"""

from __future__ import annotations

import functools
import itertools
from pathlib import Path
from typing import Any

import pytest

from infra.fixture_site import LogQueries, ProcessFixtureServer, RequestRecord
from infra.fixture_site.sites import (
    NumberedPages,
    crawl_delay_site,
    flaky_site,
    latency_steps_site,
    retry_after_site,
    steady_latency_site,
)
from infra.local.runtime import CrawlRun, LocalCloud, run_crawl
from seolens_core.settings import CrawlSettings, PolitenessSettings

SITE = "site"
ROBOTS = "/robots.txt"


def crawl(
    cloud: LocalCloud, server: LogQueries, out: Path, **politeness: Any
) -> tuple[CrawlRun, list[RequestRecord]]:
    ip, port = server.host_port(SITE)
    settings = CrawlSettings(
        start_urls=(server.url(SITE, "/"),),
        progress_poll_s=1,
        robots_retry_base_s=1,
        allow_hosts=(f"{ip}:{port}",),
        politeness=PolitenessSettings(**politeness),
    )
    run = run_crawl(cloud, settings, workers=4, out_dir=out, processes=True)
    assert run.execution.status == "SUCCEEDED"
    return run, [r for r in server.log(SITE) if r.path.split("?", 1)[0] != ROBOTS]


def rate(records: list[RequestRecord]) -> float:
    """Request starts per second between the first and the last start."""
    starts = sorted(r.start for r in records)
    return (len(starts) - 1) / (starts[-1] - starts[0])


def fetched_pages(server: LogQueries, pages: int) -> set[str]:
    wanted = set(NumberedPages(pages).paths())
    return {r.path for r in server.log(SITE) if r.status == 200 and r.path in wanted}


# (a) Crawl-delay


def test_crawl_delay_is_kept_between_every_two_starts(local_cloud: LocalCloud, tmp_path: Path) -> None:
    with ProcessFixtureServer([functools.partial(crawl_delay_site, 0.5, pages=20, name=SITE)]) as server:
        crawl(local_cloud, server, tmp_path)
        assert fetched_pages(server, 20) == set(NumberedPages(20).paths())
        gaps = server.gaps(SITE)
    assert len(gaps) >= 20
    assert min(gaps) >= 0.5, sorted(gaps)[:5]


def test_crawl_delay_rate_uses_the_allowed_budget(local_cloud: LocalCloud, tmp_path: Path) -> None:
    with ProcessFixtureServer([functools.partial(crawl_delay_site, 0.5, pages=30, name=SITE)]) as server:
        _, records = crawl(local_cloud, server, tmp_path)
    pages = [r for r in records if r.path.startswith("/p/")]
    assert len(pages) == 30
    # From the first page on, all 30 pages are known (the frontier is never empty): every request the
    # host sees counts against its budget, the seeder's sitemap probes included.
    first = min(r.start for r in pages)
    busy = sorted((r for r in records if r.start >= first), key=lambda r: r.start)
    gaps = [(round(a.start - first, 2), round(b.start - a.start, 3)) for a, b in itertools.pairwise(busy)]
    print(f"utilisation {rate(busy) * 0.5:.3f} over {len(busy)} requests")
    assert rate(busy) >= 0.95 * (1 / 0.5), [g for g in gaps if g[1] > 0.53]


# (b) Retry-After


def test_no_request_inside_a_retry_after_window(local_cloud: LocalCloud, tmp_path: Path) -> None:
    seconds = 3
    site = functools.partial(retry_after_site, seconds, ok_requests=3, pages=15, name=SITE)
    with ProcessFixtureServer([site]) as server:
        _, records = crawl(local_cloud, server, tmp_path)
        assert fetched_pages(server, 15) == set(NumberedPages(15).paths())
    limited = [r for r in records if r.status == 429]
    assert limited, "the scenario must have answered 429 at least once"
    for r in limited:
        assert r.end is not None
        inside = [o.path for o in records if r.end < o.start < r.end + seconds]
        assert inside == [], f"requests inside the Retry-After window after {r.path}: {inside}"


# (c) 503 storm


@pytest.mark.heavy
def test_rate_halves_within_a_window_of_503s_then_recovers(local_cloud: LocalCloud, tmp_path: Path) -> None:
    site = functools.partial(
        flaky_site, ok_requests=15, flaky_seconds=6.0, error_rate=0.3, pages=60, name=SITE
    )
    with ProcessFixtureServer([site]) as server:
        _, records = crawl(local_cloud, server, tmp_path, window=10)
        assert fetched_pages(server, 60) == set(NumberedPages(60).paths())
    records.sort(key=lambda r: r.start)
    first_503 = next(i for i, r in enumerate(records) if r.status == 503)
    t_fail = records[first_503].start
    before = [r for r in records[:first_503] if r.start >= t_fail - 3.0]
    # One window: 50 requests or 3 s, whichever comes first.
    window_end = min(t_fail + 3.0, records[min(first_503 + 50, len(records) - 1)].start)
    after = [r for r in records if window_end <= r.start < window_end + 3.0]
    assert len(before) >= 3
    rate_before = rate(before)
    rate_after = (len(after) / 3.0) if after else 0.0
    assert rate_after <= rate_before / 2, (rate_before, rate_after)
    # Gently: once the failures stop the host is crawled to the end, never faster than before the storm.
    last_503 = max(r.start for r in records if r.status == 503)
    calm = [r for r in records if r.start > last_503]
    assert len(calm) >= 2
    assert rate(calm) <= rate_before * 1.1


# (d) latency climb


@pytest.mark.heavy
def test_concurrency_and_rate_fall_when_latency_climbs(local_cloud: LocalCloud, tmp_path: Path) -> None:
    # Latency climbs with the request count (20 ms for 15 requests, 150 ms, 350 ms, then 600 ms), so the climb
    # is the same whatever the crawler's own speed: the first windows (10 requests each) are fast, the later
    # ones slow against the learned baseline.
    with ProcessFixtureServer([functools.partial(latency_steps_site, pages=60, name=SITE)]) as server:
        _, records = crawl(
            local_cloud, server, tmp_path, window=10, initial_delay_ms=0, initial_concurrency=4
        )
    pages = sorted((r for r in records if r.path.startswith("/p/")), key=lambda r: r.start)
    early, late = pages[:12], pages[-12:]
    print("peak early/late", peak(early), peak(late), "rate early/late", rate(early), rate(late))
    assert peak(late) < peak(early), (peak(early), peak(late))
    assert rate(late) < rate(early), (rate(early), rate(late))


def peak(records: list[RequestRecord]) -> int:
    events = sorted(
        itertools.chain.from_iterable(
            ((r.start, 1), (r.end if r.end is not None else float("inf"), -1)) for r in records
        )
    )
    current = best = 0
    for _, step in events:
        current += step
        best = max(best, current)
    return best


# (e) in-flight per host


def test_in_flight_never_exceeds_the_host_concurrency(local_cloud: LocalCloud, tmp_path: Path) -> None:
    pages = NumberedPages(30)
    with ProcessFixtureServer([functools.partial(steady_latency_site, 0.3, pages=30, name=SITE)]) as server:
        crawl(local_cloud, server, tmp_path, initial_delay_ms=0, initial_concurrency=2, max_concurrency=2)
        assert fetched_pages(server, 30) == set(pages.paths())
        observed = server.peak_concurrency(SITE)
    assert observed <= 2
    assert observed == 2, "the scenario must actually use the allowed concurrency"
