"""report.html renderer: self-contained, escaped, charts that match the data, no secrets."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from html.parser import HTMLParser
from typing import Any

import pytest

from seolens_core.report_html import render_report_html, ttfb_histogram

HOSTILE = "</script><script>alert(1)</script>"


def _report(**extra: Any) -> dict[str, Any]:
    report: dict[str, Any] = {
        "crawl_id": "c-1",
        "site": "http://shop.test",
        "status": "COMPLETED",
        "created_at": "2026-11-29T10:00:00Z",
        "finished_at": "2026-11-29T10:02:05Z",
        "duration_s": 125.0,
        "settings": {
            "start_urls": ["http://shop.test/"],
            "max_pages": 100,
            "cookie": "***",
            "extra_headers": {"Authorization": "***"},
        },
        "summary": {
            "urls": 5,
            "fetched": 4,
            "by_outcome": {"fetched": 4, "pending": 1},
            "by_status": {"200": 3, "404": 1, "None": 1},
            "by_depth": {"0": 1, "1": 3, "2": 1},
            "links": 12,
            "sitemap_urls": 2,
            "pending": 1,
            "dead_letters": 0,
        },
        "findings_by_code": {"ALERT_HTTP_4XX": 1, "ALERT_TITLE_MISSING": 2},
        "error": None,
    }
    report.update(extra)
    return report


def _pages() -> list[dict[str, Any]]:
    return [
        {
            "url": "http://shop.test/",
            "status": 200,
            "depth": 0,
            "ttfb_ms": 30,
            "outcome": "fetched",
            "title": "Home",
            "alerts": [],
            "request_headers": {"Cookie": "session=SECRET-COOKIE"},
        },
        {
            "url": "http://shop.test/a",
            "status": 200,
            "depth": 1,
            "ttfb_ms": 120.5,
            "outcome": "fetched",
            "title": HOSTILE,
            "alerts": ["ALERT_TITLE_MISSING"],
        },
        {
            "url": "http://shop.test/b",
            "status": 200,
            "depth": 1,
            "ttfb_ms": 700,
            "outcome": "fetched",
            "title": None,
        },
        {"url": "http://shop.test/missing", "status": 404, "depth": 1, "ttfb_ms": 8000, "outcome": "fetched"},
        {"url": "http://shop.test/later", "status": None, "depth": 2, "outcome": "pending"},
    ]


def _findings() -> list[dict[str, Any]]:
    return [
        {
            "code": "ALERT_HTTP_4XX",
            "severity": "critical",
            "url": "http://shop.test/missing",
            "detail": "404",
        },
        {
            "code": "ALERT_TITLE_MISSING",
            "severity": "warning",
            "url": 'http://shop.test/a"><img src=x onerror=alert(2)>',
            "detail": HOSTILE,
            "related_url": "javascript:alert(3)",
        },
        {
            "code": "ALERT_TITLE_MISSING",
            "severity": "warning",
            "url": "http://shop.test/b",
            "detail": "no title",
        },
    ]


class _Scan(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.scripts: list[dict[str, str | None]] = []
        self.script_text: list[str] = []
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self._in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))
        if tag == "script":
            self.scripts.append(dict(attrs))
            self._in_script = True
            self.script_text.append("")

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._in_script = False

    def handle_data(self, data: str) -> None:
        if self._in_script:
            self.script_text[-1] += data


def _render(report: dict[str, Any] | None = None) -> tuple[str, _Scan]:
    html = render_report_html(report or _report(), _pages(), _findings()).decode("utf-8")
    scan = _Scan()
    scan.feed(html)
    return html, scan


def test_exactly_two_script_elements_and_hostile_strings_never_form_tags() -> None:
    html, scan = _render()
    # One data block and one script: the hostile title did not open a third <script>.
    assert [s.get("type") for s in scan.scripts] == ["application/json", None]
    assert "alert(1)" not in html.replace("alert(1)\\u003c", "")  # only appears \u-escaped in the JSON block
    assert "<img" not in html and "<script>alert" not in html
    # The data block round-trips to the original hostile strings.
    data = json.loads(scan.script_text[0])
    titles = {p["url"]: p["title"] for p in data["pages"]}
    assert titles["http://shop.test/a"] == HOSTILE
    assert (
        data["findings"][1]["related_url"] == "javascript:alert(3)"
    )  # kept as text; the script refuses the href


def test_no_network_and_only_the_known_script_may_run() -> None:
    html, scan = _render()
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html), "no external resource references"
    assert "@import" not in html and "url(" not in html
    csp = next(
        a["content"] for t, a in scan.tags if t == "meta" and a.get("http-equiv") == "Content-Security-Policy"
    )
    assert csp is not None and "default-src 'none'" in csp
    digest = base64.b64encode(hashlib.sha256(scan.script_text[1].encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in csp


def test_secrets_and_unknown_fields_are_not_copied() -> None:
    report = _report(counters={"x": 1}, aws_calls={"sqs": 3})
    report["settings"]["cookie"] = "session=SECRET-COOKIE"
    report["settings"]["extra_headers"] = {"Authorization": "Bearer SECRET-TOKEN"}
    html, _ = _render(report)
    assert "SECRET" not in html
    assert "request_headers" not in html


def test_charts_match_the_data() -> None:
    _html, scan = _render()
    bars: dict[str, list[tuple[str | None, str | None]]] = {}
    current = None
    for tag, attrs in scan.tags:
        if tag == "svg":
            current = attrs.get("data-chart")
        elif tag == "rect" and "bar" in (attrs.get("class") or "") and current:
            bars.setdefault(current, []).append((attrs.get("data-label"), attrs.get("data-value")))
    assert bars["status"] == [("200", "3"), ("404", "1"), ("none", "1")]
    assert bars["depth"] == [("0", "1"), ("1", "3"), ("2", "1")]
    assert bars["severity"] == [("critical", "1"), ("warning", "2"), ("notice", "0"), ("info", "0")]
    ttfb = dict(bars["ttfb"])
    assert ttfb["<50"] == "1" and ttfb["100-200"] == "1" and ttfb["500-1k"] == "1" and ttfb["\u22655k"] == "1"
    assert sum(int(v or 0) for _, v in bars["ttfb"]) == 4  # the pending page has no ttfb


def test_overview_figures() -> None:
    html, _ = _render()
    for key, value in [
        ("status", "COMPLETED"),
        ("duration", "2 min 05 s"),
        ("urls", "5"),
        ("fetched", "4"),
        ("links", "12"),
        ("pending", "1"),
        ("findings", "3"),
    ]:
        assert re.search(rf'data-kpi="{key}"><div class="v">{re.escape(value)}</div>', html), key


def test_an_early_end_says_what_was_not_crawled_or_assessed() -> None:
    html, _ = _render()
    assert "data-stopped" not in html  # a drained crawl has no notice
    summary = {**_report()["summary"], "stopped": "page budget", "not_crawled": 1234}
    html, _ = _render(_report(summary={**summary, "not_in_sitemap_assessed": False}))
    assert re.search(r'data-kpi="not crawled"><div class="v">1,234</div>', html)
    notice = re.search(r'<p class="notice" data-stopped="page budget">(.*?)</p>', html)
    assert notice is not None
    assert notice.group(1) == (
        "The crawl ended early (page budget): 1,234 URLs were not crawled; orphan pages and pages missing from"
        " the sitemaps were not assessed."
    )


def test_host_timelines_draw_one_series_per_metric() -> None:
    samples = [
        {"t": 1000.0 + i, "delay_ms": 250 + 50 * i, "concurrency": 2 + i % 3, "error_rate": 0.0}
        for i in range(10)
    ]
    hostile_host = 'http://x.test"><script>alert(4)</script>'
    html, scan = _render(_report(host_timelines={"http://shop.test": samples, hostile_host: samples[:3]}))
    charts = [a.get("data-chart") for t, a in scan.tags if t == "svg"]
    assert {"delay-0", "concurrency-0", "delay-1", "concurrency-1"} <= set(charts)
    assert not any(c and c.startswith("errors-") for c in charts)  # error rate all zero: no panel
    paths = [a for t, a in scan.tags if t == "path" and a.get("class") == "series"]
    assert sorted(a.get("data-points") or "" for a in paths) == ["10", "10", "3", "3"]
    assert "<script>alert(4)" not in html


def test_without_timelines_or_data_the_page_still_renders() -> None:
    html = render_report_html({"summary": {}}, [], []).decode()
    assert "Politeness per host" not in html
    assert html.count('class="chart empty"') == 4


@pytest.mark.parametrize(
    ("values", "expected"),
    [
        ([], [0] * 8),
        ([0, 49.9, 50, 99, 100, 5000, 10**6], [2, 2, 1, 0, 0, 0, 0, 2]),
    ],
)
def test_ttfb_histogram_buckets(values: list[float], expected: list[int]) -> None:
    assert [n for _, n in ttfb_histogram(values)] == expected
