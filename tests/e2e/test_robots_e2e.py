"""robots.txt end to end: four hosts in one crawl, judged from the fixture server's own request log.

- robots.txt 503 for ever and robots.txt that hangs: zero page requests, robots retried with growing gaps,
  their URLs still pending (reported as such) when the crawl ends;
- robots.txt redirected twice: the target's rules applied (/blocked/ never requested);
- robots.txt 404: the host fully crawled.
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from infra.fixture_site._server import FixtureServer, RequestRecord
from infra.fixture_site.sites import (
    BLOCKED_PREFIX,
    ROBOTS_REDIRECT_CHAIN,
    crawl_delay_site,
    robots_404_site,
    robots_503_site,
    robots_hang_site,
    robots_redirect_site,
)
from infra.local.runtime import LocalCloud, run_crawl
from seolens_core.settings import CrawlSettings, FetchSettings

PAGES = 4
RETRY_BASE_S = 2.0
TIMEOUT_S = 2.0


def _pages_jsonl(outputs: dict[str, Path]) -> list[dict[str, Any]]:
    lines = outputs["pages.jsonl"].read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _robots(records: list[RequestRecord]) -> list[RequestRecord]:
    return [r for r in records if r.path == "/robots.txt"]


def _page_requests(records: list[RequestRecord]) -> list[RequestRecord]:
    return [r for r in records if r.path not in ROBOTS_REDIRECT_CHAIN]


def _schedule(name: str, i: int) -> float:
    """Least gap between robots request i and i+1: the back-off base * 2**i, plus the timeout of a hang."""
    return RETRY_BASE_S * 2.0**i + (TIMEOUT_S if name == "robots-hang" else 0.0)


def _gaps(records: list[RequestRecord]) -> list[float]:
    starts = sorted(r.start for r in records)
    return [later - earlier for earlier, later in itertools.pairwise(starts)]


@pytest.mark.timeout(120)
def test_robots_outcomes_in_one_crawl(local_cloud: LocalCloud, tmp_path: Path) -> None:
    sites = [
        robots_503_site(PAGES),
        robots_hang_site(PAGES),
        robots_redirect_site(PAGES),
        robots_404_site(PAGES),
    ]
    with FixtureServer(sites) as server:
        names = [s.name for s in sites]
        bases = {n: server.base_url(n) for n in names}
        settings = CrawlSettings(
            start_urls=tuple(b + "/" for b in bases.values()),
            allow_hosts=tuple(b.removeprefix("http://") for b in bases.values()),
            progress_poll_s=1,
            robots_retry_base_s=RETRY_BASE_S,
            check_external_links=False,
            fetch=FetchSettings(connect_timeout_s=1, read_timeout_s=TIMEOUT_S, total_timeout_s=TIMEOUT_S),
        )
        run = run_crawl(local_cloud, settings, workers=4, out_dir=tmp_path)
        log = {n: server.log(n) for n in names}

    assert run.execution.status == "SUCCEEDED", run.execution
    pages = {row["url"]: row for row in _pages_jsonl(run.outputs)}
    facts: dict[str, Any] = {"seconds": round(run.seconds, 1), "counters": run.record.counters}
    for name in names:
        facts[f"{name} log"] = [(round(r.start - log[name][0].start, 2), r.path, r.status) for r in log[name]]
    print("measured:", json.dumps(facts))

    # Unreachable robots.txt (503 for ever, or hanging past the timeout): no page request at all ...
    for name in ("robots-503", "robots-hang"):
        records = log[name]
        assert _page_requests(records) == [], f"{name}: pages fetched despite unreachable robots.txt"
        robots = _robots(records)
        gaps = _gaps(robots)
        facts[f"{name} robots requests"] = len(robots)
        facts[f"{name} gaps"] = [round(g, 2) for g in gaps]
        # ... robots.txt retried, with growing gaps (exponential back-off, measured by the server) ...
        assert len(robots) >= 3, (name, len(robots))
        # Each gap is at least the scheduled back-off (which doubles), never a reset to the base.
        assert all(g >= 0.95 * _schedule(name, i) for i, g in enumerate(gaps)), (name, gaps)
        assert gaps[-1] > gaps[0], (name, gaps)
        # ... and the host's URLs are not lost: still pending when the crawl ended, reported as such.
        home = bases[name] + "/"
        assert pages[home]["outcome"] == "pending", pages.get(home)
        assert "ALERT_URL_PENDING" in pages[home]["alerts"]
    if any(r.outcome == "ok" and r.status == 503 for r in log["robots-503"]):
        assert all(r.status == 503 for r in _robots(log["robots-503"]))
    assert all(r.status is None for r in _robots(log["robots-hang"])), "the hang host never answers"

    # Redirected twice: the rules came from the redirect target and were applied.
    redirect_log = log["robots-redirect"]
    chain_paths = [r.path for r in redirect_log if r.path in ROBOTS_REDIRECT_CHAIN]
    assert chain_paths[:3] == list(ROBOTS_REDIRECT_CHAIN), chain_paths
    assert not [r for r in redirect_log if r.path.startswith(BLOCKED_PREFIX)], (
        "a disallowed path was requested"
    )
    fetched_redirect = {r.path for r in _page_requests(redirect_log) if r.status == 200}
    assert {"/", "/open/page", *(f"/p/{n}" for n in range(1, PAGES + 1))} <= fetched_redirect
    blocked = pages[bases["robots-redirect"] + BLOCKED_PREFIX + "secret"]
    assert blocked["outcome"] == "disallowed", blocked

    # robots.txt 404: allow all, every page fetched (the /blocked/ path too).
    fetched_404 = {r.path for r in _page_requests(log["robots-404"]) if r.status == 200}
    assert {"/", f"{BLOCKED_PREFIX}secret", *(f"/p/{n}" for n in range(1, PAGES + 1))} <= fetched_404
    assert len(_robots(log["robots-404"])) == 1


@pytest.mark.timeout(60)
def test_crawl_delay_too_long_skips_host(local_cloud: LocalCloud, tmp_path: Path) -> None:
    with FixtureServer([crawl_delay_site(delay=60, pages=3)]) as server:
        base = server.base_url("crawl-delay")
        settings = CrawlSettings(
            start_urls=(base + "/",),
            allow_hosts=(base.removeprefix("http://"),),
            progress_poll_s=1,
            check_external_links=False,
        )
        run = run_crawl(local_cloud, settings, workers=2, out_dir=tmp_path)
        records = server.log("crawl-delay")

    assert run.execution.status == "SUCCEEDED", run.execution
    assert [r.path for r in records] == ["/robots.txt"], "only robots.txt may be requested"
    home = {row["url"]: row for row in _pages_jsonl(run.outputs)}[base + "/"]
    assert home["outcome"] == "disallowed", home
    assert "ALERT_ROBOTS_CRAWL_DELAY_TOO_LONG" in home["alerts"], home
