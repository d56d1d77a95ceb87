"""Issue 8: several crawls share the frontier without cross-talk but share each host's politeness budget;
pause keeps every URL and resume continues; cancel stops fetching. Evidence: the fixture server's log."""

from __future__ import annotations

import functools
import json
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Any

from infra.fixture_site import FixtureServer, LogQueries, ProcessFixtureServer
from infra.fixture_site.sites import NumberedPages, crawl_delay_site, numbered_site
from infra.local.runtime import CrawlRun, LocalCloud, run_crawl
from seolens_core.adapters.crawls import CrawlStatus
from seolens_core.bootstrap import container
from seolens_core.settings import CrawlSettings


def _settings(base: str) -> CrawlSettings:
    return CrawlSettings(start_urls=(base + "/",), progress_poll_s=1)


def _page_requests(server: LogQueries, site: str) -> list[Any]:
    return [r for r in server.log(site) if r.path.startswith("/p/") or r.path == "/"]


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line]


class _Background:
    def __init__(self, cloud: LocalCloud, settings: CrawlSettings, out: Path, crawl_id: str) -> None:
        self.result: dict[str, CrawlRun] = {}
        self.thread = threading.Thread(
            target=lambda: self.result.setdefault(
                "run", run_crawl(cloud, settings, workers=2, out_dir=out, crawl_id=crawl_id)
            ),
            daemon=True,
        )
        self.thread.start()

    def join(self, timeout: float = 240) -> CrawlRun:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "crawl did not finish"
        return self.result["run"]


def _wait_for(predicate: Any, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.1)


def _set_status(crawl_id: str, status: CrawlStatus) -> None:
    app = container()
    app.run(app.crawls.set_status(crawl_id, status, now=time.time()))


def test_crawls_are_isolated_but_share_the_host_budget(local_cloud: LocalCloud, tmp_path: Path) -> None:
    shared = functools.partial(crawl_delay_site, 0.3, pages=12, name="shared")
    other = functools.partial(numbered_site, "other", pages=8, ip="127.0.0.5")
    # Its own process: arrival times not bunched by pauses of this one (see ProcessFixtureServer).
    with ProcessFixtureServer([shared, other]) as server:
        jobs = {
            "a1": _Background(local_cloud, _settings(server.base_url("shared")), tmp_path / "a1", "iso-a1"),
            "a2": _Background(local_cloud, _settings(server.base_url("shared")), tmp_path / "a2", "iso-a2"),
            "b": _Background(local_cloud, _settings(server.base_url("other")), tmp_path / "b", "iso-b"),
        }
        runs = {name: job.join() for name, job in jobs.items()}
        shared_requests = _page_requests(server, "shared")
        gaps = server.gaps("shared")
    for run in runs.values():
        assert run.execution.status == "SUCCEEDED", run.execution.cause
    pages_a = set(NumberedPages(12).paths()) | {"/"}
    # Each crawl of the shared site fetched every page once: twice in all, never more.
    assert Counter(r.path for r in shared_requests) == Counter({p: 2 for p in pages_a})
    # One politeness budget per host across crawls: no two starts closer than its Crawl-delay.
    assert min(gaps) >= 0.3, sorted(gaps)[:3]
    # No cross-talk: each crawl's results hold only its own site.
    for name, base in (
        ("a1", server.base_url("shared")),
        ("a2", server.base_url("shared")),
        ("b", server.base_url("other")),
    ):
        urls = {row["url"] for row in _rows(tmp_path / name / "pages.jsonl")}
        assert urls and all(u.startswith(base) for u in urls), (name, urls)


def test_pause_keeps_urls_and_resume_continues(local_cloud: LocalCloud, tmp_path: Path) -> None:
    with FixtureServer([crawl_delay_site(0.3, pages=25, name="pausable")]) as server:
        job = _Background(local_cloud, _settings(server.base_url("pausable")), tmp_path, "pause-1")
        _wait_for(lambda: len(_page_requests(server, "pausable")) >= 5)
        _set_status("pause-1", CrawlStatus.PAUSED)
        time.sleep(4)  # workers see the status within their 2 s cache; in-flight fetches finish
        paused_at = len(_page_requests(server, "pausable"))
        time.sleep(5)
        assert len(_page_requests(server, "pausable")) == paused_at, "fetching went on while paused"
        app = container()
        pending, _ = app.run(app.urls.pending("pause-1"))
        assert len(pending) == 26 - paused_at  # every URL not fetched is still queued: nothing lost
        _set_status("pause-1", CrawlStatus.RUNNING)
        run = job.join()
        requests = Counter(r.path for r in _page_requests(server, "pausable"))
    assert run.execution.status == "SUCCEEDED"
    assert requests == Counter(dict.fromkeys([*NumberedPages(25).paths(), "/"], 1))


def test_cancel_stops_fetching(local_cloud: LocalCloud, tmp_path: Path) -> None:
    with FixtureServer([crawl_delay_site(0.3, pages=40, name="cancellable")]) as server:
        job = _Background(local_cloud, _settings(server.base_url("cancellable")), tmp_path, "cancel-1")
        _wait_for(lambda: len(_page_requests(server, "cancellable")) >= 5)
        _set_status("cancel-1", CrawlStatus.CANCELLED)
        run = job.join()
        time.sleep(3)
        after = len(_page_requests(server, "cancellable"))
        time.sleep(3)
        assert len(_page_requests(server, "cancellable")) == after
    assert run.record.status is CrawlStatus.CANCELLED
    assert after < 41
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["status"] == "CANCELLED"
    summary = report["summary"]
    by_outcome = summary["by_outcome"]
    # Every URL is accounted for: fetched, or not crawled (the crawl ended first), never silently gone.
    assert by_outcome.get("fetched", 0) + by_outcome.get("not_crawled", 0) == summary["urls"] == 41
    assert (summary["stopped"], summary["not_crawled"], summary["pending"]) == (
        "cancelled",
        41 - by_outcome["fetched"],
        0,
    )
    assert report["findings_by_code"]["ALERT_CRAWL_STOPPED"] == 1


def test_operator_switch_pauses_every_crawl(local_cloud: LocalCloud, tmp_path: Path) -> None:
    app = container()
    with FixtureServer([crawl_delay_site(0.3, pages=25, name="switch")]) as server:
        job = _Background(local_cloud, _settings(server.base_url("switch")), tmp_path, "switch-1")
        _wait_for(lambda: len(_page_requests(server, "switch")) >= 2)
        app.run(app.crawls.set_frontier_paused(True))
        try:
            time.sleep(4)  # workers read the switch within their 2 s cache; in-flight fetches finish
            held_at = len(_page_requests(server, "switch"))
            time.sleep(4)
            assert len(_page_requests(server, "switch")) == held_at, (
                "fetching went on with the frontier paused"
            )
        finally:
            app.run(app.crawls.set_frontier_paused(False))
        run = job.join()
        requests = Counter(r.path for r in _page_requests(server, "switch"))
    assert run.execution.status == "SUCCEEDED"
    assert requests == Counter(dict.fromkeys([*NumberedPages(25).paths(), "/"], 1))
