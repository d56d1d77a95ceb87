"""Issue 3: a calendar that links the next month forever stops at the trap guard, with a finding; depth
alone would not have stopped it (the crawl allows 500 levels). Evidence: the fixture server's log."""

from __future__ import annotations

import json
import time
from pathlib import Path

from infra.fixture_site import FixtureServer, SiteSpec, html, not_found, text
from infra.fixture_site._demo import calendar
from infra.local.runtime import LocalCloud, run_crawl
from seolens_core.settings import CrawlSettings


def test_calendar_trap_stops_at_the_guard(local_cloud: LocalCloud, tmp_path: Path) -> None:
    start_year = (
        time.gmtime().tm_year + 2
    )  # the guard allows dates up to two years ahead: 12 months, then prune
    site = SiteSpec(
        "calendar-trap",
        {
            "/robots.txt": text("User-agent: *\nAllow: /\n"),
            "/sitemap.xml": not_found(),
            "/": html(
                '<title>home of the calendar trap</title><a href="/calendar?month='
                + f"{start_year}-01"
                + '">events</a>'
            ),
            "/events": html("<title>all events of the calendar</title>"),
            "/calendar": calendar,
        },
    )
    with FixtureServer([site]) as server:
        settings = CrawlSettings.model_validate(
            {
                "start_urls": [server.base_url("calendar-trap") + "/"],
                "max_depth": 500,
                "progress_poll_s": 1,
                "politeness": {"initial_delay_ms": 0, "initial_concurrency": 4},
            }
        )
        run = run_crawl(local_cloud, settings, workers=2, out_dir=tmp_path)
        months = [r.path for r in server.log("calendar-trap") if r.path.startswith("/calendar")]
    assert run.execution.status == "SUCCEEDED"
    assert len(months) == len(set(months))  # each month once
    # The guard allows dates up to two years past the reference year, then prunes: a finite, bounded crawl.
    reference = int(run.record.created_at[:4])
    assert f"/calendar?month={reference + 2}-12" in months
    assert not any(m.endswith(f"month={reference + 3}-01") for m in months)
    assert len(months) == 12
    pruned = [
        json.loads(line)
        for line in (tmp_path / "pages.jsonl").read_text().splitlines()
        if "ALERT_TRAP_CALENDAR" in json.loads(line).get("alerts", [])
    ]
    assert [row["url"].rsplit("/", 1)[1] for row in pruned] == [f"calendar?month={reference + 3}-01"]
    assert pruned[0]["outcome"] == "pruned"
