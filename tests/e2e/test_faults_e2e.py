"""The demo crawl under faults gives the same answer as without them (issue 10, part 1).

Faults: 10% of worker invocations crash at a random point (start, after fetch, after results, after enqueue,
before delete), every batch is delivered twice, 5% of DynamoDB/SQS/S3 requests are throttled. Evidence is the
fixture server's request log and the stored outputs, never the crawler's own counters.
"""

from __future__ import annotations

import csv
import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from infra.fixture_site import FixtureServer
from infra.fixture_site._demo import DEMO_EXPECTED, demo_sites
from infra.fixture_site.sites import NumberedPages, numbered_site
from infra.local.faults import FaultLog, FaultSettings, inject
from infra.local.iam_audit import IamAudit
from infra.local.runtime import LocalCloud, run_crawl
from seolens_core.settings import CrawlSettings
from tests.e2e.conftest import translated_template

NOT_PAGES = ("/robots.txt", "/sitemap")
FAULTS = FaultSettings(crash_rate=0.10, duplicate_delivery=True, aws_throttle_rate=0.05, seed=10)


@dataclass
class Outcome:
    requests: Counter[str]  # path+query -> times the demo site served it
    pages: frozenset[tuple[str, str]]  # (path, outcome) from pages.jsonl, demo site only
    findings: frozenset[tuple[str, str]]  # (code, path) from findings.csv
    execution: str
    faults: FaultLog | None = None


def _path(url: str) -> str:
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


def _crawl(cloud: LocalCloud, out: Path, faults: FaultSettings | None) -> Outcome:
    server = FixtureServer(demo_sites())
    server.start()
    try:
        base = server.base_url("demo")
        host, port = server.host_port("partner")
        settings = CrawlSettings(
            start_urls=(base + "/",),
            progress_poll_s=1,
            robots_retry_base_s=1,
            allow_hosts=(f"{host}:{port}",),
        )
        log: FaultLog | None = None
        if faults is None:
            run = run_crawl(cloud, settings, workers=4, out_dir=out)
        else:
            with inject(faults) as injector:
                run = run_crawl(cloud, settings, workers=4, out_dir=out)
            log = injector.log
        requests = Counter(r.path for r in server.log("demo"))
    finally:
        server.stop()
    rows = [json.loads(line) for line in run.outputs["pages.jsonl"].read_text().splitlines() if line.strip()]
    pages = frozenset((_path(r["url"]), str(r.get("outcome"))) for r in rows if r["url"].startswith(base))
    with run.outputs["findings.csv"].open() as fh:
        findings = frozenset(
            (r["code"], _path(r["url"])) for r in csv.DictReader(fh) if r["url"].startswith(base)
        )
    return Outcome(requests, pages, findings, run.execution.status, log)


@pytest.mark.heavy
@pytest.mark.timeout(1200)
def test_demo_crawl_survives_crashes_duplicates_and_throttling(
    local_cloud: LocalCloud, tmp_path: Path
) -> None:
    clean = _crawl(local_cloud, tmp_path / "clean", None)
    faulty = _crawl(local_cloud, tmp_path / "faulty", FAULTS)
    assert faulty.faults is not None
    print("injected:", faulty.faults)
    assert sum(faulty.faults.crashes.values()) > 0 and sum(faulty.faults.throttles.values()) > 0
    assert clean.execution == faulty.execution == "SUCCEEDED"

    fetched_clean = {p for p in clean.requests if not p.startswith(NOT_PAGES)}
    fetched_faulty = {p for p in faulty.requests if not p.startswith(NOT_PAGES)}
    # zero lost URLs: every crawlable URL was fetched in both runs, and the sets are the same
    assert DEMO_EXPECTED.crawlable <= fetched_clean
    assert sorted(DEMO_EXPECTED.crawlable - fetched_faulty) == []
    assert fetched_faulty == fetched_clean
    # every URL ends recorded with the same outcome, and the same findings are reported
    assert faulty.pages == clean.pages
    assert faulty.findings == clean.findings
    # politeness under redelivery: at most 1% of the URLs fetched more than once
    twice = {p: n for p, n in faulty.requests.items() if n > 1 and not p.startswith(NOT_PAGES)}
    print("fetched more than once:", twice)
    assert len(twice) <= 0.01 * len(fetched_faulty), twice  # strict: with 47 URLs, none


@pytest.mark.heavy
@pytest.mark.timeout(900)
def test_crashes_after_the_fetch_republish_instead_of_refetching(
    local_cloud: LocalCloud, tmp_path: Path
) -> None:
    """Half the worker invocations die at a point after their fetches (before the first publish, after a results
    part, after enqueueing): every page is still fetched exactly once, the batch's journal is republished."""
    after = ("after_fetch", "after_results", "after_enqueue")
    faulty = _crawl(local_cloud, tmp_path, FaultSettings(crash_rate=0.5, crash_points=after, seed=3))
    assert faulty.faults is not None
    print("injected:", faulty.faults)
    assert faulty.execution == "SUCCEEDED"
    assert all(faulty.faults.crashes[p] > 0 for p in after), faulty.faults.crashes
    fetched = {p for p in faulty.requests if not p.startswith(NOT_PAGES)}
    assert sorted(DEMO_EXPECTED.crawlable - fetched) == []
    twice = {p: n for p, n in faulty.requests.items() if n > 1 and not p.startswith(NOT_PAGES)}
    assert twice == {}


@pytest.mark.timeout(300)
def test_a_page_that_kills_its_worker_is_dead_lettered_and_the_crawl_still_drains(
    local_cloud: LocalCloud, tmp_path: Path
) -> None:
    """Every worker invocation that carries /p/5 dies: its messages (batch-mates included) reach the
    dead-letter queue. The drain redrives them twice; batch-mates get through, /p/5 ends as `dead_letter`,
    and the crawl finishes: no URL left pending, none lost, each one either fetched or reported."""
    server = FixtureServer([numbered_site("poison", pages=12)])
    server.start()
    try:
        base = server.base_url("poison")
        settings = CrawlSettings(
            start_urls=(base + "/",),
            progress_poll_s=1,
            robots_retry_base_s=1,
            dead_letter_redrives=2,
            dead_letter_retry_s=1,
        )
        assert local_cloud.stack is not None
        audit = IamAudit(local_cloud.stack)
        with audit.recording(), inject(FaultSettings(poison_urls=(base + "/p/5",))) as injector:
            run = run_crawl(local_cloud, settings, workers=4, out_dir=tmp_path)
        requested = Counter(r.path for r in server.log("poison"))
    finally:
        server.stop()
    assert run.execution.status == "SUCCEEDED"
    assert injector.log.crashes["start"] >= 15  # 5 receives per attempt, 3 attempts
    rows = {_path(r["url"]): r for r in map(json.loads, run.outputs["pages.jsonl"].read_text().splitlines())}
    expected = set(NumberedPages(12).paths())
    assert expected <= set(rows)
    assert rows["/p/5"]["outcome"] == "dead_letter" and rows["/p/5"]["alerts"] == ["ALERT_DEAD_LETTER"]
    assert requested["/p/5"] == 0
    dead = {p for p in expected if rows[p]["outcome"] == "dead_letter"}
    fetched = {p for p in expected if rows[p]["outcome"] == "fetched"}
    assert dead | fetched == expected, {p: rows[p]["outcome"] for p in expected - dead - fetched}
    assert all(requested[p] == 1 for p in fetched)
    report = json.loads(run.outputs["report.json"].read_text())
    assert report["summary"]["pending"] == 0
    assert report["summary"]["dead_letters"] == len(dead) == run.record.counters.get("n_dead_letter")
    assert dead == {"/p/5"}  # its batch-mates came back one second apart, each in a batch of its own
    # The emulator does not enforce IAM: every call the drain made must be granted by its role.
    assert "DeadLetterFunction" in {a.function for a in audit.accesses}
    assert audit.violations(translated_template()) == []
