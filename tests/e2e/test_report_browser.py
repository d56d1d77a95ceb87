"""report.html in a real browser: headless Debian chromium driven over the DevTools protocol.

Checks that the inline script runs under the page's CSP, that the charts draw as many bars as the data
has (with non-zero size), that typing in the filter box leaves fewer rows, that a hostile title cannot
execute, that the page makes no network request, and saves a screenshot to test-artifacts/report.png.
Install the browser with scripts/install-browser.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import json
import random
import shutil
import subprocess
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from seolens_core.report_html import render_report_html, ttfb_histogram

CHROMIUM = Path("/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
HOSTILE_TITLE = "</script><script>alert(1)</script>"

pytestmark = [
    pytest.mark.browser,
    pytest.mark.timeout(120),
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs /usr/bin/chromium: run scripts/install-browser"),
]


# --- a realistic synthetic crawl ------------------------------------------------------------------------


def _synthetic() -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]]:
    rng = random.Random(7)
    base = "https://shop.example"
    pages: list[dict[str, Any]] = []
    for i in range(240):
        depth = 0 if i == 0 else min(1 + i // 40, 5)
        status = rng.choices([200, 301, 404, 500], weights=[88, 6, 4, 2])[0]
        pages.append(
            {
                "url": f"{base}/" if i == 0 else f"{base}/category-{i % 7}/product-{i}?ref=nav",
                "status": status,
                "depth": depth,
                "ttfb_ms": round(rng.lognormvariate(5.0, 0.8), 1),
                "outcome": "fetched",
                "title": HOSTILE_TITLE if i == 3 else f"Product {i} \u2014 Example Shop & <Co>",
                "alerts": [],
                "inlinks": rng.randint(0, 30),
                "request_headers": {"Cookie": "session=SECRET-COOKIE"},
            }
        )
    pages += [
        {"url": f"{base}/later-{i}", "status": None, "depth": 5, "outcome": "pending"} for i in range(6)
    ]
    codes = [
        ("ALERT_HTTP_4XX", "critical"),
        ("ALERT_HTTP_5XX", "critical"),
        ("ALERT_TITLE_MISSING", "warning"),
        ("ALERT_META_DESC_MISSING", "warning"),
        ("ALERT_H1_MULTIPLE", "notice"),
        ("ALERT_SLOW_TTFB", "notice"),
        ("ALERT_GRAPH_ORPHAN_PAGE", "info"),
    ]
    findings: list[dict[str, Any]] = []
    for page in pages[:200]:
        code, severity = rng.choice(codes)
        findings.append(
            {"code": code, "severity": severity, "url": page["url"], "detail": f"detail for {code}"}
        )
    findings.append(
        {
            "code": "ALERT_TITLE_DUPLICATE",
            "severity": "warning",
            "url": pages[3]["url"],
            "detail": HOSTILE_TITLE,
            "related_url": "javascript:alert(2)",
        }
    )
    findings.append(
        {
            "code": "ALERT_WAF_BOT_CHALLENGE",
            "severity": "critical",
            "url": f"{base}/checkout",
            "detail": "Blocked by Cloudflare WAF challenge. Whitelist the crawler IP or supply a session cookie.",
        }
    )
    by_status: dict[str, int] = {}
    by_depth: dict[str, int] = {}
    for page in pages:
        by_status[str(page["status"])] = by_status.get(str(page["status"]), 0) + 1
        by_depth[str(page["depth"])] = by_depth.get(str(page["depth"]), 0) + 1
    t0 = 1_764_400_000.0
    timelines: dict[str, list[dict[str, Any]]] = {}
    for h, host in enumerate((base, "https://cdn.example")):
        delay, conc, samples = 250.0, 2, []
        for k in range(80):
            err = 0.2 if 30 <= k < 36 and h == 0 else 0.0
            if err:
                delay, conc = min(delay * 2, 8000.0), 1
            else:
                delay, conc = max(delay - 25, 50.0), min(conc + (k % 5 == 0), 8)
            samples.append({"t": t0 + 3 * k + h, "delay_ms": delay, "concurrency": conc, "error_rate": err})
        timelines[host] = samples
    report: dict[str, Any] = {
        "crawl_id": "demo-7f3a",
        "site": base,
        "status": "COMPLETED",
        "created_at": "2026-11-29T10:00:00Z",
        "finished_at": "2026-11-29T10:04:02Z",
        "duration_s": 242.4,
        "settings": {"start_urls": [f"{base}/"], "max_pages": 10000, "cookie": "***"},
        "summary": {
            "urls": len(pages),
            "fetched": 240,
            "by_outcome": {"fetched": 240, "pending": 6},
            "by_status": by_status,
            "by_depth": by_depth,
            "links": 4312,
            "sitemap_urls": 180,
            "pending": 6,
            "dead_letters": 0,
        },
        "findings_by_code": {},
        "host_timelines": timelines,
    }
    return report, pages, findings


# --- a minimal DevTools protocol client ---------------------------------------------------------------


class Cdp:
    def __init__(self, ws: aiohttp.ClientWebSocketResponse) -> None:
        self.ws = ws
        self.events: list[dict[str, Any]] = []
        self._next = 0
        self._waiting: dict[int, asyncio.Future[dict[str, Any]]] = {}
        self._reader = asyncio.create_task(self._read())

    async def _read(self) -> None:
        async for msg in self.ws:
            data = json.loads(msg.data)
            if "id" in data and data["id"] in self._waiting:
                self._waiting.pop(data["id"]).set_result(data)
            else:
                self.events.append(data)

    async def send(self, method: str, **params: Any) -> dict[str, Any]:
        self._next += 1
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._waiting[self._next] = future
        await self.ws.send_json({"id": self._next, "method": method, "params": params})
        reply = await asyncio.wait_for(future, 30)
        if "error" in reply:
            raise RuntimeError(f"{method}: {reply['error']}")
        result: dict[str, Any] = reply["result"]
        return result

    async def js(self, expression: str) -> Any:
        reply = await self.send(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in reply:
            raise AssertionError(f"JS error: {reply['exceptionDetails']}")
        return reply["result"].get("value")

    async def wait_event(self, method: str, timeout: float = 30) -> dict[str, Any]:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while loop.time() < deadline:
            for event in self.events:
                if event.get("method") == method:
                    return event
            await asyncio.sleep(0.05)
        raise TimeoutError(method)

    def close(self) -> None:
        self._reader.cancel()


@contextlib.asynccontextmanager
async def browser_page() -> AsyncIterator[Cdp]:
    profile = Path(tempfile.mkdtemp(prefix="seolens-chromium-"))
    proc = subprocess.Popen(
        [
            str(CHROMIUM),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--no-default-browser-check",
            "--hide-scrollbars",
            f"--user-data-dir={profile}",
            "--remote-debugging-address=127.0.0.1",
            "--remote-debugging-port=0",
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        port_file = profile / "DevToolsActivePort"
        for _ in range(300):
            if port_file.exists() and port_file.read_text().strip():
                break
            await asyncio.sleep(0.1)
        port = int(port_file.read_text().split()[0])
        async with aiohttp.ClientSession() as http:
            async with http.get(f"http://127.0.0.1:{port}/json/list") as resp:
                targets = await resp.json()
            page_ws = next(t["webSocketDebuggerUrl"] for t in targets if t["type"] == "page")
            async with http.ws_connect(page_ws, max_msg_size=0) as ws:
                cdp = Cdp(ws)
                try:
                    yield cdp
                finally:
                    cdp.close()
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        shutil.rmtree(profile, ignore_errors=True)


# --- the test ----------------------------------------------------------------------------------------

CHART_FACTS = """(() => {
  const out = {};
  for (const svg of document.querySelectorAll("svg.chart")) {
    const r = svg.getBoundingClientRect();
    const shapes = [...svg.querySelectorAll("rect.bar, path.series")].map(e => {
      const b = e.getBBox();
      return {label: e.getAttribute("data-label"), value: e.getAttribute("data-value"),
              points: e.getAttribute("data-points"), w: b.width, h: b.height};
    });
    const host = svg.closest(".host");
    out[svg.dataset.chart] = {w: r.width, h: r.height, shapes, host: host ? host.dataset.host : null};
  }
  return out;
})()"""

TABLE_FACTS = """(() => {
  const s = document.getElementById(%s);
  return {rows: s.querySelectorAll("tbody tr").length, matching: Number(s.dataset.matching),
          count: s.querySelector(".count").textContent};
})()"""


def _type(section: str, text: str) -> str:
    return (
        f"(() => {{ const i = document.querySelector('#{section} input.filter'); i.value = {json.dumps(text)};"
        " i.dispatchEvent(new Event('input', {bubbles: true})); return true; })()"
    )


async def _exercise(
    html_path: Path, report: dict[str, Any], pages: list[dict[str, Any]], findings: list[dict[str, Any]]
) -> dict[str, Any]:
    async with browser_page() as cdp:
        await cdp.send("Page.enable")
        await cdp.send("Runtime.enable")
        await cdp.send("Network.enable")
        await cdp.send("Log.enable")
        # Installed by the DevTools (outside the page's CSP): records any alert() a hostile string managed to run.
        await cdp.send(
            "Page.addScriptToEvaluateOnNewDocument",
            source="window.__alerts = []; window.alert = (m) => window.__alerts.push(String(m));",
        )
        await cdp.send(
            "Emulation.setDeviceMetricsOverride", width=1280, height=900, deviceScaleFactor=1, mobile=False
        )
        cdp.events.clear()
        await cdp.send("Page.navigate", url=html_path.as_uri())
        await cdp.wait_event("Page.loadEventFired")
        facts: dict[str, Any] = {"ready": await cdp.js("document.body.dataset.ready || null")}
        facts["alerts"] = await cdp.js("window.__alerts")
        facts["script_count"] = await cdp.js("document.scripts.length")
        facts["charts"] = await cdp.js(CHART_FACTS)
        facts["findings_before"] = await cdp.js(TABLE_FACTS % '"findings"')
        facts["pages_before"] = await cdp.js(TABLE_FACTS % '"pages"')
        facts["hostile_cell"] = await cdp.js(
            "[...document.querySelectorAll('#pages td')].some(td => td.textContent === "
            + json.dumps(HOSTILE_TITLE)
            + ")"
        )
        height = await cdp.js("Math.ceil(document.documentElement.scrollHeight)")
        await cdp.send(
            "Emulation.setDeviceMetricsOverride",
            width=1280,
            height=min(int(height), 4000),
            deviceScaleFactor=1,
            mobile=False,
        )
        await asyncio.sleep(0.2)
        shot = await cdp.send("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        facts["screenshot"] = shot["data"]
        facts["hrefs"] = await cdp.js("[...document.querySelectorAll('#findings td a')].map(a => a.href)")
        await cdp.js(_type("findings", "title_missing"))
        facts["findings_filtered"] = await cdp.js(TABLE_FACTS % '"findings"')
        await cdp.js(
            "(() => { const s = document.querySelector('#findings select.severity');"
            " s.value = 'critical'; s.dispatchEvent(new Event('change')); return true; })()"
        )
        facts["findings_title_critical"] = await cdp.js(TABLE_FACTS % '"findings"')
        await cdp.js(_type("findings", ""))
        facts["findings_critical"] = await cdp.js(TABLE_FACTS % '"findings"')
        await cdp.js("document.querySelector('#findings th[data-key=url]').click(); true")
        facts["first_url_sorted"] = await cdp.js(
            "document.querySelector('#findings tbody tr td.url').textContent"
        )
        await cdp.js(
            "(() => { const s = document.querySelector('#findings select.severity');"
            " s.value = ''; s.dispatchEvent(new Event('change')); return true; })()"
        )
        await cdp.js(_type("pages", "product-1"))
        facts["pages_filtered"] = await cdp.js(TABLE_FACTS % '"pages"')
        await cdp.js(_type("pages", ""))
        facts["alerts_after"] = await cdp.js("window.__alerts")
        facts["requests"] = [
            e["params"]["request"]["url"]
            for e in cdp.events
            if e.get("method") == "Network.requestWillBeSent"
        ]
        facts["dialogs"] = [e for e in cdp.events if e.get("method") == "Page.javascriptDialogOpening"]
        facts["console_errors"] = [
            e["params"]["entry"]["text"]
            for e in cdp.events
            if e.get("method") == "Log.entryAdded" and e["params"]["entry"]["level"] == "error"
        ]
        return facts


def test_report_renders_filters_and_stays_inert_in_chromium(tmp_path: Path) -> None:
    report, pages, findings = _synthetic()
    html_path = tmp_path / "report.html"
    html_path.write_bytes(render_report_html(report, pages, findings))

    facts = asyncio.run(_exercise(html_path, report, pages, findings))

    ARTIFACTS.mkdir(exist_ok=True)
    (ARTIFACTS / "report.png").write_bytes(base64.b64decode(facts["screenshot"]))

    # The inline script ran (its CSP hash matched) and nothing hostile did.
    assert facts["ready"] == "1", facts["console_errors"]
    assert facts["script_count"] == 2
    assert facts["alerts"] == [] and facts["alerts_after"] == [] and facts["dialogs"] == []
    assert facts["hostile_cell"] is True  # the title is shown as text
    assert not any(h.startswith("javascript:") for h in facts["hrefs"])
    assert all(h.startswith("https://shop.example/") for h in facts["hrefs"])
    # Self-contained: the only request is the file itself.
    assert facts["requests"] == [html_path.as_uri()], facts["requests"]

    # Charts: one bar per status / depth value, every TTFB bucket, 4 severities, 2 series per host (+ errors).
    charts = facts["charts"]
    for name in ("status", "depth", "ttfb", "severity"):
        assert charts[name]["w"] > 300 and charts[name]["h"] > 100, name
    summary = report["summary"]
    assert sorted(s["value"] for s in charts["status"]["shapes"]) == sorted(
        str(v) for v in summary["by_status"].values()
    )
    assert [s["label"] for s in charts["depth"]["shapes"]] == sorted(summary["by_depth"])
    expected_ttfb = ttfb_histogram(p["ttfb_ms"] for p in pages if p.get("ttfb_ms") is not None)
    assert [(s["label"], int(s["value"])) for s in charts["ttfb"]["shapes"]] == expected_ttfb
    severities = {s["label"]: int(s["value"]) for s in charts["severity"]["shapes"]}
    assert severities == {
        sev: sum(f["severity"] == sev for f in findings) for sev in ("critical", "warning", "notice", "info")
    }
    for chart in ("status", "depth", "severity"):
        assert all(s["w"] > 0 and s["h"] > 0 for s in charts[chart]["shapes"]), chart
    per_host: dict[str, dict[str, Any]] = {}
    for name, chart in charts.items():
        if chart["host"]:
            per_host.setdefault(chart["host"], {})[name.split("-")[0]] = chart
    assert set(per_host) == set(report["host_timelines"])
    assert set(per_host["https://shop.example"]) == {"delay", "concurrency", "errors"}
    assert set(per_host["https://cdn.example"]) == {"delay", "concurrency"}  # the CDN never errored: no panel
    for panels in per_host.values():
        for chart in panels.values():
            (series,) = chart["shapes"]
            assert series["points"] == "80" and series["w"] > 300 and series["h"] > 0

    # Tables: every row is there, filters reduce them, severity + text filters combine, sorting works.
    assert facts["findings_before"]["rows"] == len(findings) == facts["findings_before"]["matching"]
    assert facts["pages_before"]["rows"] == len(pages)
    title_missing = sum(f["code"] == "ALERT_TITLE_MISSING" for f in findings)
    assert 0 < facts["findings_filtered"]["rows"] == title_missing < len(findings)
    assert facts["findings_filtered"]["count"] == f"{title_missing} of {len(findings)} rows"
    assert facts["findings_title_critical"]["rows"] == 0
    assert facts["findings_critical"]["rows"] == sum(f["severity"] == "critical" for f in findings)
    critical_urls = sorted(f["url"] for f in findings if f["severity"] == "critical")
    assert facts["first_url_sorted"] == critical_urls[0]
    product_1 = sum("product-1" in p["url"] for p in pages)
    assert 0 < facts["pages_filtered"]["rows"] == product_1 < len(pages)


# --- the same checks on a real crawl of the demo shop (about a minute: heavy) ---------------------------


async def _load(html_path: Path, shot: Path) -> dict[str, Any]:
    async with browser_page() as cdp:
        await cdp.send("Page.enable")
        await cdp.send("Network.enable")
        await cdp.send(
            "Emulation.setDeviceMetricsOverride", width=1280, height=2400, deviceScaleFactor=1, mobile=False
        )
        cdp.events.clear()
        await cdp.send("Page.navigate", url=html_path.as_uri())
        await cdp.wait_event("Page.loadEventFired")
        facts: dict[str, Any] = {
            "ready": await cdp.js("document.body.dataset.ready || null"),
            "charts": await cdp.js(CHART_FACTS),
            "findings": await cdp.js(TABLE_FACTS % '"findings"'),
            "pages": await cdp.js(TABLE_FACTS % '"pages"'),
        }
        await cdp.js(_type("findings", "orphan"))
        facts["orphans"] = await cdp.js(TABLE_FACTS % '"findings"')
        await cdp.js(_type("findings", ""))
        facts["requests"] = [
            e["params"]["request"]["url"]
            for e in cdp.events
            if e.get("method") == "Network.requestWillBeSent"
        ]
        png = await cdp.send("Page.captureScreenshot", format="png", captureBeyondViewport=True)
        shot.write_bytes(base64.b64decode(png["data"]))
        return facts


@pytest.mark.heavy
@pytest.mark.timeout(300)
def test_report_of_a_real_demo_crawl_in_chromium(local_cloud: Any, tmp_path: Path) -> None:
    import csv
    from collections import Counter

    from infra.fixture_site import FixtureServer
    from infra.fixture_site._demo import demo_sites
    from infra.local.runtime import run_crawl
    from seolens_core.settings import CrawlSettings

    server = FixtureServer(demo_sites())
    server.start()
    try:
        allow = tuple(f"{h}:{p}" for h, p in (server.host_port("demo"), server.host_port("partner")))
        settings = CrawlSettings(
            start_urls=(server.base_url("demo") + "/",),
            progress_poll_s=1,
            robots_retry_base_s=1,
            allow_hosts=allow,
        )
        run = run_crawl(local_cloud, settings, workers=4, out_dir=tmp_path)
    finally:
        server.stop()
    assert run.execution.status == "SUCCEEDED"
    report = json.loads(run.outputs["report.json"].read_text())
    pages = [json.loads(line) for line in run.outputs["pages.jsonl"].read_text().splitlines() if line]
    with run.outputs["findings.csv"].open(newline="") as fh:
        findings = [{k: (v or None) for k, v in row.items()} for row in csv.DictReader(fh)]
    html_path = tmp_path / "report.html"
    html_path.write_bytes(render_report_html(report, pages, findings))
    ARTIFACTS.mkdir(exist_ok=True)

    facts = asyncio.run(_load(html_path, ARTIFACTS / "report-demo.png"))

    assert facts["ready"] == "1"
    assert facts["requests"] == [html_path.as_uri()]
    assert facts["findings"]["rows"] == len(findings) > 0
    assert facts["pages"]["rows"] == len(pages)
    orphans = sum(f["code"] == "ALERT_GRAPH_ORPHAN_PAGE" for f in findings)
    assert 0 < facts["orphans"]["rows"] == orphans < len(findings)
    statuses = Counter("none" if p.get("status") is None else str(p["status"]) for p in pages)
    assert {s["label"]: int(s["value"]) for s in facts["charts"]["status"]["shapes"]} == dict(statuses)
    assert all(s["w"] > 0 and s["h"] > 0 for s in facts["charts"]["status"]["shapes"])
