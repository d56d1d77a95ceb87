"""report.html's search engine signals section: a line per check with its count, indexability by reason."""

from __future__ import annotations

import re

from seolens_core.audit import CATALOGUE
from seolens_core.report_html import render_report_html
from seolens_core.report_html._signals import SIGNAL_LINES, signals_section


def _line_count(html: str, code: str) -> int:
    match = re.search(rf'<tr data-code="{code}">.*?<td>([\d,]+)</td></tr>', html)
    assert match, code
    return int(match.group(1).replace(",", ""))


def test_every_line_is_a_catalogue_code_counted_from_findings_by_code() -> None:
    import seolens_core.crawl._findings  # noqa: F401  (the pipeline's codes)

    codes = [code for _, lines in SIGNAL_LINES for code, _ in lines]
    assert all(code in CATALOGUE for code in codes)
    report = {"findings_by_code": {"ALERT_CANONICAL_MULTIPLE": 3, "ALERT_NOINDEX": 1200}, "summary": {}}
    html = signals_section(report)
    assert _line_count(html, "ALERT_CANONICAL_MULTIPLE") == 3
    assert _line_count(html, "ALERT_NOINDEX") == 1200
    assert _line_count(html, "ALERT_CANONICAL_RELATIVE") == 0


def test_indexability_by_reason_and_hostile_text_is_escaped() -> None:
    report = {
        "findings_by_code": {},
        "summary": {"by_indexability": {"indexable": 7, "noindex": 2, "<script>": 1}},
    }
    html = render_report_html(report, [], []).decode()
    section = html[html.index('<section id="signals">') :]
    assert '<li data-indexability="indexable"><span>indexable</span><b>7</b></li>' in section
    assert "&lt;script&gt;" in section and "<script>" not in section.split("</section>")[0]
    assert signals_section({}) == ""


def test_hreflang_matrix_has_a_row_per_page_and_a_column_per_language() -> None:
    pairs = [
        ["https://a.test/en", "de", "https://a.test/de", "ALERT_HREFLANG_NO_RETURN"],
        ["https://a.test/en", "fr", "https://a.test/fr", "ALERT_HREFLANG_TO_NON_200"],
        ["https://a.test/de", "fr", "https://a.test/fr", "ALERT_HREFLANG_TO_NON_CANONICAL"],
        ["https://a.test/<x>", "<b>", 'https://a.test/"q', "ALERT_HREFLANG_NO_RETURN"],
    ]
    report = {"findings_by_code": {}, "hreflang_matrix": {"broken_pairs": 4, "pairs": pairs}}
    html = signals_section(report)
    matrix = html[html.index('<table class="hreflang-matrix">') :]
    assert matrix.count('<tr><th scope="row"') == 3
    assert "<th>de</th><th>fr</th><th>&lt;b&gt;</th>" in matrix
    assert '<td title="https://a.test/de" data-problem="no return">no return</td>' in matrix
    assert 'data-problem="non-canonical"' in matrix and "&quot;q" in matrix and "<b>" not in matrix
    assert "4 broken pairs" in html


def test_redirects_by_type() -> None:
    report = {"findings_by_code": {}, "summary": {"by_redirect_type": {"permanent": 4, "temporary": 2}}}
    html = signals_section(report)
    assert '<li data-redirect-type="permanent"><span>permanent</span><b>4</b></li>' in html
    assert '<li data-redirect-type="temporary"><span>temporary</span><b>2</b></li>' in html


def test_sitemap_quality_lines_and_reasons() -> None:
    report = {
        "findings_by_code": {"ALERT_SITEMAP_LASTMOD_FUTURE": 1},
        "summary": {"sitemap_non_indexable": {"redirect": 3, "noindex": 1}},
    }
    html = signals_section(report)
    assert _line_count(html, "ALERT_SITEMAP_LASTMOD_FUTURE") == 1
    assert '<li data-sitemap-non-indexable="redirect"><span>redirect</span><b>3</b></li>' in html
