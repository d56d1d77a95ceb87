"""Issue 2's proof: the demo shop crawled through SQS -> worker -> DynamoDB -> SQS on the embedded moto server
with 4 concurrent pollers; the fixture server's request log is the evidence."""

from __future__ import annotations

import csv
import json
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest

from infra.fixture_site import FixtureServer, SiteSpec, html, not_found, text
from infra.fixture_site.sites import DEMO_EXPECTED, demo_sites
from infra.local.iam_audit import IamAudit
from infra.local.runtime import LocalCloud, run_crawl
from seolens_core.adapters._stored_units import write_units
from seolens_core.bootstrap import container
from seolens_core.settings import CrawlSettings
from tests.e2e.conftest import translated_template

E = DEMO_EXPECTED
NOT_PAGES = {"/robots.txt", "/sitemap.xml", "/sitemap_index.xml", "/wp-sitemap.xml"}


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def _path(url: str, base: str) -> str:
    assert url.startswith(base), url
    return url[len(base) :] or "/"


@pytest.fixture(scope="module")
def demo_crawl(local_cloud: LocalCloud, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    server = FixtureServer(demo_sites())
    server.start()
    try:
        base = server.base_url("demo")
        partner_host, partner_port = server.host_port("partner")
        settings = CrawlSettings(
            start_urls=(base + "/",),
            allow_hosts=(f"{partner_host}:{partner_port}",),
            progress_poll_s=1,
            start_metadata={"campaign": "audit-q4"},
        )
        out = tmp_path_factory.mktemp("demo")
        assert local_cloud.stack is not None
        audit = IamAudit(local_cloud.stack)
        with audit.recording():
            run = run_crawl(local_cloud, settings, workers=4, out_dir=out)
        yield {
            "iam": audit,
            "run": run,
            "base": base,
            "partner": server.base_url("partner"),
            "log": server.log("demo"),
            "partner_log": server.log("partner"),
            "pages": _rows(out / "pages.jsonl"),
            "links": _rows(out / "links.jsonl"),
            "report": json.loads((out / "report.json").read_text()),
        }
    finally:
        server.stop()


def test_report_carries_the_crawl_cost(demo_crawl: dict[str, Any]) -> None:
    cost = demo_crawl["report"]["cost"]
    calls = cost["aws_calls"]
    # Every layer is metered: the event source mapping's receives, the workers' writes, the report's reads.
    assert calls["sqs.ReceiveMessage"] > 0 and calls["dynamodb.PutItem"] > 0 and calls["s3.GetObject"] > 0
    assert cost["aws_calls_total"] == sum(calls.values())
    assert cost["cost_usd"]["total"] > 0 and cost["cost_per_100k_pages_usd"] > 0
    assert cost["state_transitions"] > 5 and cost["lambda_gb_seconds"] > 0


def test_each_worker_batch_wrote_one_results_object_and_the_crawl_item_one_write_unit(
    local_cloud: LocalCloud, demo_crawl: dict[str, Any]
) -> None:
    """What the stack holds after the crawl: one object per worker batch under `parts/` (none per kind), whose
    page sections are exactly the worker's pages; the crawl item with compressed settings, under one KB."""
    run = demo_crawl["run"]
    assert local_cloud.stack is not None
    app = container()
    keys = app.run(app.results.list_keys(f"crawls/{run.crawl_id}/"))
    assert not [k for k in keys if k.split("/")[2] in ("pages", "links", "pacing")], keys
    parts = [k for k in keys if k.split("/")[2] == "parts"]
    assert 0 < len(parts) <= run.worker_invocations
    urls = [row["url"] for key in parts for row in app.run(app.results.batch_rows(key, "pages"))]
    fetched = {r["url"] for r in demo_crawl["pages"] if r.get("outcome") == "fetched"}
    assert fetched and fetched <= set(urls), fetched - set(urls)
    client = boto3.client(
        "dynamodb", endpoint_url=local_cloud.endpoint_url, region_name=local_cloud.stack.region
    )
    table = local_cloud.stack.table_names["CrawlsTable"]
    item = client.get_item(TableName=table, Key={"crawl_id": {"S": run.crawl_id}})["Item"]
    assert "B" in item["settings"] and len(item) > 8  # compressed, counters included
    assert write_units(item) == 1


def test_every_call_a_function_made_is_granted_by_its_role(demo_crawl: dict[str, Any]) -> None:
    """The emulator does not enforce IAM: this is where a call the template does not grant shows up."""
    translated = translated_template()
    audit: IamAudit = demo_crawl["iam"]
    functions = {a.function for a in audit.accesses}
    assert {"FetchWorkerFunction", "SeedFunction", "ReportFunction"} <= functions, functions
    assert audit.unresolved == set()
    violations = audit.violations(translated)
    assert violations == [], "\n".join(violations)


def test_crawl_succeeds_and_drains(demo_crawl: dict[str, Any]) -> None:
    run = demo_crawl["run"]
    assert run.execution.status == "SUCCEEDED", (run.execution.error, run.execution.cause)
    assert run.record.status.value == "COMPLETED"
    assert demo_crawl["report"]["summary"]["pending"] == 0
    counters = run.record.counters
    # Every queue counter is back to zero: link depths, and the sitemap URLs' own (`qs`, used by this crawl).
    queues = {k: v for k, v in counters.items() if k[:1] == "q"}
    assert "qs" in queues and set(queues.values()) == {0}, queues


def test_every_crawlable_page_fetched_exactly_once(demo_crawl: dict[str, Any]) -> None:
    requested = [r.path for r in demo_crawl["log"] if r.path not in NOT_PAGES]
    pages = [p for p in requested if not p.startswith(E.trap_prefix)]
    counts = Counter(pages)
    assert {p: n for p, n in counts.items() if n > 1} == {}
    assert set(pages) == set(E.crawlable)
    assert not set(pages) & set(E.disallowed)


def test_robots_fetched_once_before_any_page(demo_crawl: dict[str, Any]) -> None:
    log = sorted(demo_crawl["log"], key=lambda r: r.start)
    assert log[0].path == "/robots.txt"
    assert [r.path for r in log].count("/robots.txt") == 1


def test_boundary_external_checked_never_expanded(demo_crawl: dict[str, Any]) -> None:
    partner_paths = [r.path for r in demo_crawl["partner_log"]]
    linked = {path for source, site, path in E.external}
    assert Counter(p for p in partner_paths if p != "/robots.txt") == Counter(linked)
    pages = {p["url"]: p for p in demo_crawl["pages"]}
    for path in linked:
        row = pages[demo_crawl["partner"] + path]
        assert row["external"] is True and row["status"] == 200


def test_pages_rows_and_link_edges(demo_crawl: dict[str, Any]) -> None:
    base = demo_crawl["base"]
    pages = {p["url"]: p for p in demo_crawl["pages"]}
    fetched = {_path(u, base) for u, r in pages.items() if u.startswith(base) and r["outcome"] == "fetched"}
    assert fetched - {p for p in fetched if p.startswith(E.trap_prefix)} == set(E.crawlable)
    for path in E.disallowed:
        assert pages[base + path]["outcome"] == "disallowed"
    for path in E.orphans:
        assert pages[base + path]["is_sitemap_url"] is True
    orphans = {_path(u, base) for u, r in pages.items() if "ALERT_GRAPH_ORPHAN_PAGE" in r["alerts"]}
    assert orphans == set(E.orphans)  # the five sitemap-only pages, and nothing else
    depths = {_path(u, base): r["depth"] for u, r in pages.items() if u.startswith(base)}
    assert {p: d for p, d in depths.items() if p in E.depth} == dict(E.depth)
    for row in pages.values():
        for key in ("url", "status", "depth", "title", "is_sitemap_url", "alerts"):
            assert key in row, (key, row["url"])
    edges = {
        (_path(link["source"], base), _path(link["target"], base))
        for link in demo_crawl["links"]
        if link["internal"] and not link.get("redirect")
    }
    expected = {
        (s, t) for s, t in E.edges if not s.startswith(E.trap_prefix) and not t.startswith(E.trap_prefix)
    }
    crawl_edges = {
        (s, t) for s, t in edges if not s.startswith(E.trap_prefix) and not t.startswith(E.trap_prefix)
    }
    assert crawl_edges == expected


def _page(*links: tuple[str | None, str]) -> Any:
    """A route whose links are (site or None for this one, path), rendered with the live ports."""

    def route(request: Any, ctx: Any) -> Any:
        hrefs = [ctx.url(path, site=site) if site else path for site, path in links]
        body = "".join(f'<a href="{href}">{href}</a>' for href in hrefs)
        return html(f"<html><head><title>chain page title here ok</title></head><body>{body}</body></html>")

    return route


def test_depth_limit_and_boundary(local_cloud: LocalCloud, tmp_path: Path) -> None:
    chain = SiteSpec(
        "chain",
        {
            "/robots.txt": text("User-agent: *\nAllow: /\n"),
            "/sitemap.xml": not_found(),
            "/": _page((None, "/a1"), (None, "/b1"), ("outside", "/x")),
            "/a1": _page((None, "/a2")),
            "/a2": _page((None, "/a3")),
            "/a3": _page((None, "/a4")),
            "/a4": _page(),
            "/b1": _page(("blocked", "/secret")),
        },
    )
    outside = SiteSpec(
        "outside", {"/robots.txt": text(""), "/x": _page((None, "/y")), "/y": _page()}, ip="127.0.0.3"
    )
    blocked = SiteSpec("blocked", {"/robots.txt": text(""), "/secret": _page()}, ip="127.0.0.4")
    server = FixtureServer([chain, outside, blocked])
    server.start()
    try:
        base = server.base_url("chain")
        out_host, out_port = server.host_port("outside")
        settings = CrawlSettings(
            start_urls=(base + "/",), max_depth=2, allow_hosts=(f"{out_host}:{out_port}",), progress_poll_s=1
        )
        run = run_crawl(local_cloud, settings, workers=4, out_dir=tmp_path)
        assert run.execution.status == "SUCCEEDED", run.execution.cause
        chain_paths = Counter(r.path for r in server.log("chain") if r.path not in NOT_PAGES)
        assert chain_paths == Counter({"/": 1, "/a1": 1, "/b1": 1, "/a2": 1})
        assert [r.path for r in server.log("outside") if r.path != "/robots.txt"] == ["/x"]
        assert server.log("blocked") == []
        links = _rows(tmp_path / "links.jsonl")
        beyond = [link for link in links if link["target"] == base + "/a3"]
        assert beyond and beyond[0]["depth"] == 3
        pages = {p["url"]: p for p in _rows(tmp_path / "pages.jsonl")}
        assert base + "/a3" not in pages
        blocked_row = pages[server.base_url("blocked") + "/secret"]
        assert "ALERT_SSRF_BLOCKED" in blocked_row["alerts"]
    finally:
        server.stop()


DEFECT_CODES = {
    "missing_title": "ALERT_TITLE_MISSING",
    "duplicate_title": "ALERT_TITLE_DUPLICATE",
    "missing_h1": "ALERT_H1_MISSING",
    "multiple_h1": "ALERT_H1_MULTIPLE",
    "thin_content": "ALERT_THIN_CONTENT",
    "noindex": "ALERT_NOINDEX",
    "canonical_elsewhere": "ALERT_CANONICAL_ELSEWHERE",
    "missing_meta_description": "ALERT_META_DESC_MISSING",
    "title_too_short": "ALERT_TITLE_TOO_SHORT",
    "title_too_long": "ALERT_TITLE_TOO_LONG",
    "meta_description_too_short": "ALERT_META_DESC_TOO_SHORT",
    "meta_description_too_long": "ALERT_META_DESC_TOO_LONG",
    "duplicate_meta_description": "ALERT_META_DESC_DUPLICATE",
}


def _expected_findings() -> set[tuple[str, str]]:
    """Every finding the demo shop must produce, derived from its one page table (DEMO_EXPECTED)."""
    expected = {(DEFECT_CODES[name], path) for name, paths in E.defects.items() for path in paths}
    expected |= {("ALERT_WAF_BOT_CHALLENGE", p) for p in E.waf}
    expected |= {("ALERT_GRAPH_ORPHAN_PAGE", p) for p in E.orphans}
    expected |= {("ALERT_ROBOTS_DISALLOWED", p) for p in E.disallowed}
    expected |= {("ALERT_HTTP_4XX", p) for p in E.broken}
    expected |= {("ALERT_BROKEN_INTERNAL_LINK", s) for s, t in E.edges if t in E.broken}
    expected |= {("ALERT_INTERNAL_LINK_TO_REDIRECT", s) for s, t in E.edges if t in E.redirects}
    expected |= {
        ("ALERT_REDIRECT_CHAIN", start) for start, chain in E.redirect_chains.items() if len(chain) > 1
    }
    # The demo's sitemap gives every entry the same lastmod: a generation time, not a modification time.
    expected.add(("ALERT_SITEMAP_LASTMOD_UNIFORM", "/sitemap.xml"))
    indexable = set(E.ok_pages) - E.defects["noindex"] - E.defects["canonical_elsewhere"] - set(E.waf)
    expected |= {("ALERT_NOT_IN_SITEMAP", p) for p in indexable - set(E.sitemap)}
    return {(code, path) for code, path in expected if not path.startswith(E.trap_prefix)}


def test_findings_exactly_as_designed(demo_crawl: dict[str, Any]) -> None:
    base = demo_crawl["base"]
    out = demo_crawl["run"].outputs["findings.csv"]
    with out.open() as fh:
        found = {
            (row["code"], _path(row["url"], base))
            for row in csv.DictReader(fh)
            if row["url"].startswith(base) and not _path(row["url"], base).startswith(E.trap_prefix)
        }
    assert found == _expected_findings()


def test_per_url_metadata_travels_with_its_url_only(demo_crawl: dict[str, Any]) -> None:
    pages = {p["url"]: p for p in demo_crawl["pages"]}
    assert pages[demo_crawl["base"] + "/"]["meta"] == {"campaign": "audit-q4"}
    assert all(not row.get("meta") for url, row in pages.items() if url != demo_crawl["base"] + "/")
