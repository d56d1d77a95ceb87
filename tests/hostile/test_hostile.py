"""Hostile inputs through the real fetch + parse path: no crash, bounded time, an outcome recorded for each.

Peak memory of the big cases is measured in a fresh subprocess (VmHWM), marked heavy.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from seolens_core.crawl._pages import HTML_PARSE_CAP
from seolens_core.fetch import AddressPolicy, Fetcher, FetchErrorKind, FetchResult
from seolens_core.html import extract_page
from seolens_core.robots import RobotsRules
from seolens_core.sitemaps import parse_sitemap
from tests.hostile._raw_server import RawServer
from tests.hostile.cases import CASES, Case, warm

TOTAL_TIMEOUT_S = 4.0
TIME_BOUND_S = 15.0  # fetch deadline + parse, on a shared 2-core machine
RSS_BOUND_MB = 256


def outcomes(case: Case, result: FetchResult) -> set[str]:
    """What the crawler records for this response (the same calls the worker makes)."""
    if result.error is not None:
        return {"timeout" if result.error.kind is FetchErrorKind.TIMEOUT else "protocol"}
    found: set[str] = {"truncated"} if result.truncated else set()
    if case.kind == "page":
        facts = extract_page(
            result.body[:HTML_PARSE_CAP],
            url=result.url,
            content_type=result.content_type,
            headers=result.headers,
        )
        if not facts.is_html:
            found.add("not_html")
        else:
            found.add("parsed")
            if facts.links_truncated:
                found.add("parsed:links_capped")
    elif case.kind == "robots":
        rules = RobotsRules.parse(result.body)
        found.add("parsed")
        if not rules.can_fetch("/private"):
            found.add("parsed:disallows_private")
    else:
        _, summary = parse_sitemap(result.body)
        found.add("parsed")
        found.update(f"finding:{f.code}" for f in summary.findings)
    return found


def run_case(case: Case, port: int) -> tuple[set[str], float]:
    async def go() -> FetchResult:
        fetcher = Fetcher(
            user_agent="SEOLensTest/1",
            policy=AddressPolicy.for_hosts([f"127.0.0.1:{port}"]),
            http2=False,
            connect_timeout_s=2,
            read_timeout_s=TOTAL_TIMEOUT_S,
            total_timeout_s=TOTAL_TIMEOUT_S,
        )
        try:
            return await fetcher.fetch(f"http://127.0.0.1:{port}/{case.name}")
        finally:
            await fetcher.aclose()

    started = time.monotonic()
    result = asyncio.run(go())
    found = outcomes(case, result)
    return found, time.monotonic() - started


@pytest.fixture(scope="module")
def server() -> Iterator[RawServer]:
    warm()
    with RawServer({f"/{c.name}": c.serve for c in CASES}) as srv:
        yield srv


def test_corpus_has_at_least_50_cases() -> None:
    assert len(CASES) >= 50
    assert len({c.name for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", [c for c in CASES if not c.heavy], ids=lambda c: c.name)
def test_hostile_case(case: Case, server: RawServer) -> None:
    found, seconds = run_case(case, server.port)
    assert server.requests.get(f"/{case.name}") == 1  # it really was served (and only once)
    assert found & case.expect, f"{case.name}: got {sorted(found)}, expected one of {sorted(case.expect)}"
    assert seconds < TIME_BOUND_S


_CHILD = """
import json, sys
def peak_mb():
    # VmHWM is this process's own peak; ru_maxrss would carry the parent's peak across fork and exec.
    for line in open("/proc/self/status"):
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0
from tests.hostile.cases import CASES
from tests.hostile.test_hostile import run_case
case = next(c for c in CASES if c.name == sys.argv[1])
found, seconds = run_case(case, int(sys.argv[2]))
print(json.dumps({"found": sorted(found), "seconds": seconds,
                  "peak_mb": peak_mb()}))
"""

BIG = [c for c in CASES if c.heavy or "MB" in c.name or "million" in c.name or "100k" in c.name]


@pytest.mark.heavy
@pytest.mark.parametrize("case", BIG, ids=lambda c: c.name)
def test_big_case_peak_rss_in_subprocess(case: Case, server: RawServer) -> None:
    """The client (fetch + parse) runs in a fresh interpreter; its own peak RSS must stay under the bound."""
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD, case.name, str(server.port)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    report = json.loads(proc.stdout.strip().splitlines()[-1])
    assert set(report["found"]) & case.expect, report
    assert report["peak_mb"] < RSS_BOUND_MB, report
    assert server.requests.get(f"/{case.name}", 0) >= 1
