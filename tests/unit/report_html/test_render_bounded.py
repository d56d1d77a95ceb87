"""report.html of a large crawl: only some rows are embedded; counts and charts come from the aggregates."""

from __future__ import annotations

import json
import re
from typing import Any

from seolens_core.report_html import render_report_html


def _data(html: str) -> dict[str, Any]:
    match = re.search(r'<script type="application/json" id="seolens-data">(.*?)</script>', html, re.S)
    assert match is not None
    loaded: dict[str, Any] = json.loads(match.group(1))
    return loaded


def test_tables_embed_only_the_given_rows_and_headings_give_the_totals() -> None:
    pages = [{"url": f"https://ex.test/p{i}", "status": 200, "ttfb_ms": 10.0} for i in range(3)]
    findings = [{"code": "ALERT_X", "severity": "critical", "url": "https://ex.test/p0"}]
    report = {
        "site": "https://ex.test",
        "summary": {"urls": 1_000_000},
        "aggregates": {
            "pages_total": 1_000_000,
            "findings_total": 250_000,
            "ttfb_histogram": [["<50", 999_000], ["50-100", 1_000]],
            "findings_by_severity": {"critical": 1, "warning": 249_999},
        },
    }
    html = render_report_html(report, pages, findings).decode()
    data = _data(html)
    assert len(data["pages"]) == 3 and len(data["findings"]) == 1
    assert "Pages (1,000,000)" in html and "Showing 3 of 1,000,000 rows" in html
    assert "Findings (250,000)" in html and "Showing 1 of 250,000 rows" in html
    assert "249999" in html or "249,999" in html  # the severity chart counts every finding
    assert "999000" in html or "999,000" in html  # the TTFB chart counts every page


def test_without_aggregates_nothing_changes() -> None:
    pages = [{"url": "https://ex.test/", "status": 200, "ttfb_ms": 10.0}]
    html = render_report_html({"summary": {}}, pages, []).decode()
    assert "Pages (1)" in html and "Showing" not in html
