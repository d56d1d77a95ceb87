"""SSRF guard end to end: a host on 127.0.0.0/8 that is neither a start URL nor --allow-host gets zero requests.

The start site reaches the forbidden host every way a crawl connects: a page link, a redirect hop, a sitemap
entry, robots.txt's Sitemap line and an external link check. The evidence is the fixture server's request log.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from infra.fixture_site import FixtureServer, SiteSpec
from infra.fixture_site._http import Request, Response
from infra.fixture_site._routes import RouteContext, html, redirect, text, xml
from infra.local.runtime import LocalCloud, run_crawl
from seolens_core.settings import CrawlSettings


def _home(request: Request, ctx: RouteContext) -> Response:
    inner = ctx.url("/linked", site="inner")
    return html(
        "<html><head><title>Start page of the SSRF scenario</title></head><body><h1>Start</h1>"
        f"<p>Links everywhere.</p><a href='{inner}'>inner</a> <a href='/go'>go</a> <a href='/ok'>ok</a>"
        "</body></html>"
    )


def _sitemap(request: Request, ctx: RouteContext) -> Response:
    return xml(
        "<?xml version='1.0'?><urlset xmlns='http://www.sitemaps.org/schemas/sitemap/0.9'>"
        f"<url><loc>{ctx.url('/ok')}</loc></url><url><loc>{ctx.url('/from-sitemap', site='inner')}</loc></url>"
        "</urlset>"
    )


@pytest.fixture(scope="module")
def server() -> Iterator[FixtureServer]:
    start = SiteSpec(
        "start",
        {
            "/": _home,
            "/go": lambda req, ctx: redirect(ctx.url("/redirected", site="inner"), 302),
            "/ok": html("<html><head><title>An ordinary page</title></head><body><h1>OK</h1></body></html>"),
            "/robots.txt": lambda req, ctx: text(
                f"User-agent: *\nAllow: /\nSitemap: {ctx.url('/sitemap.xml')}\n"
                f"Sitemap: {ctx.url('/robots-sitemap.xml', site='inner')}\n"
            ),
            "/sitemap.xml": _sitemap,
        },
        ip="127.0.0.1",
    )
    inner = SiteSpec("inner", {}, fallback=html("<html><body>internal admin</body></html>"), ip="127.0.0.3")
    with FixtureServer([start, inner]) as srv:
        yield srv


def test_disallowed_loopback_host_receives_zero_requests(
    local_cloud: LocalCloud, server: FixtureServer, tmp_path: Path
) -> None:
    start = server.url("start", "/")
    run = run_crawl(
        local_cloud,
        CrawlSettings(start_urls=(start,), progress_poll_s=1, robots_retry_base_s=1),
        workers=2,
        out_dir=tmp_path,
    )
    assert run.execution.status == "SUCCEEDED"
    start_paths = {r.path for r in server.log("start")}
    assert {"/", "/go", "/ok"} <= start_paths  # the crawl did run and reached every way out
    assert server.log("inner") == []
    rows = {row["url"]: row for row in map(json.loads, run.outputs["pages.jsonl"].read_text().splitlines())}
    for path in ("/linked", "/redirected"):  # the refused URLs are recorded with a finding, not dropped
        assert "ALERT_SSRF_BLOCKED" in rows[f"{server.base_url('inner')}{path}"]["alerts"]
