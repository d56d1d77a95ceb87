"""A page budget on a site whose sitemap lists far more URLs than the budget: the seeding claims only what the
budget can use, the crawl stops at it, and the report lists every URL it did not crawl without judging any."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from infra.fixture_site import (
    FixtureServer,
    Request,
    Response,
    RouteContext,
    SiteSpec,
    html,
    not_found,
    text,
    xml,
)
from infra.local.iam_audit import IamAudit
from infra.local.runtime import LocalCloud, run_crawl
from seolens_core.crawl._seed import SEED_AHEAD_MIN
from seolens_core.settings import CrawlSettings
from tests.e2e.conftest import translated_template

LISTED = 3_000
BUDGET = 12


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _page(request: Request, ctx: RouteContext) -> Response:
    """/s/<n>: a page linked from nowhere but the sitemap; /: links five of them."""
    if request.path == "/":
        links = "".join(f'<a href="/s/{n}">{n}</a>' for n in range(1, 6))
        return html(f"<html><head><title>Home of the listed shop</title></head><body>{links}</body></html>")
    if request.path.startswith("/s/") and request.path[3:].isdigit() and 0 < int(request.path[3:]) <= LISTED:
        return html(f"<html><head><title>Listed page {request.path}</title></head><body>x</body></html>")
    return not_found()


def _site() -> SiteSpec:
    def sitemap(request: Request, ctx: RouteContext) -> Response:
        urls = "".join(f"<url><loc>{ctx.url(f'/s/{n}')}</loc></url>" for n in range(1, LISTED + 1))
        return xml(f'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>')

    robots = "User-agent: *\nAllow: /\n"
    return SiteSpec(
        "listed",
        {"/robots.txt": text(robots), "/sitemap.xml": sitemap},
        fallback=_page,
    )


def test_a_page_budget_seeds_what_it_can_use_and_reports_the_rest_unjudged(
    local_cloud: LocalCloud, tmp_path: Path
) -> None:
    server = FixtureServer([_site()])
    server.start()
    try:
        base = server.base_url("listed")
        settings = CrawlSettings.model_validate(
            {
                "start_urls": [base + "/"],
                "max_pages": BUDGET,
                "progress_poll_s": 1,
                "politeness": {"aimd": False, "initial_delay_ms": 0, "initial_concurrency": 8},
            }
        )
        assert local_cloud.stack is not None
        audit = IamAudit(local_cloud.stack)
        with audit.recording():
            run = run_crawl(local_cloud, settings, workers=4, out_dir=tmp_path)
        assert run.execution.status == "SUCCEEDED", run.execution.cause
        # The budget's calls (reservations, the held rows read back, unpublished journals) are all granted.
        assert audit.violations(translated_template()) == []
        report = json.loads((tmp_path / "report.json").read_text())
        summary, counters = report["summary"], report["counters"]

        # The seeding claimed what the budget could use (the pages it had left plus a lead of 50), not the
        # 3,000 listed URLs: it held the rest back.
        assert counters["n_discovered"] <= 1 + 2 * (BUDGET + SEED_AHEAD_MIN), counters
        assert summary["stopped"] == "page budget"

        # Every listed URL is in pages.jsonl exactly once: fetched, or not crawled. None is lost.
        pages = _rows(tmp_path / "pages.jsonl")
        urls = [p["url"] for p in pages]
        assert len(urls) == len(set(urls))
        listed = {f"{base}/s/{n}" for n in range(1, LISTED + 1)}
        assert listed <= set(urls)
        fetched = {p["url"] for p in pages if p["outcome"] == "fetched"}
        not_crawled = {p["url"] for p in pages if p["outcome"] == "not_crawled"}
        assert fetched | not_crawled == set(urls)
        assert summary["not_crawled"] == len(not_crawled) == len(urls) - len(fetched)
        asked = [r.path for r in server.log("listed") if r.path not in ("/robots.txt", "/sitemap.xml")]
        # What the site served is what the report says was fetched, each page once; and exactly the budget
        # with 4 workers fetching 8 at a time: each fetch took a unit of the budget first.
        assert {base + p for p in asked} == fetched and len(asked) == len(fetched)
        assert len(fetched) == BUDGET == counters["n_fetched"] == counters["n_reserved"]

        # No rule judged a URL it never fetched: no orphans, no non-indexable sitemap URLs, no per-URL
        # pending findings; one finding says the crawl ended early, and the summary says what was not assessed.
        codes = report["findings_by_code"]
        for code in ("ALERT_GRAPH_ORPHAN_PAGE", "ALERT_SITEMAP_NON_INDEXABLE", "ALERT_URL_PENDING"):
            assert code not in codes, code
        assert codes["ALERT_CRAWL_STOPPED"] == 1
        assert summary["orphans_assessed"] is False
        assert summary["not_in_sitemap_assessed"] is True  # its one sitemap was read
        assert all(p["alerts"] == [] for p in pages if p["outcome"] == "not_crawled")
    finally:
        server.stop()
