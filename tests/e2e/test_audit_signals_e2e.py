"""Issue 47: the signals search engines read, crawled end to end on the signals fixture site (one page per
signal): each family's findings are exactly the declared ones, and the columns carry the verdicts."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from typing import Any

import pytest

from infra.fixture_site import FixtureServer
from infra.fixture_site._signals import (
    FAMILY_CODES,
    INDEXABILITY_OF,
    SIGNALS,
    SIGNALS_EXPECTED,
    SIGNALS_OTHER,
    signals_sites,
)
from infra.local.runtime import LocalCloud, run_crawl
from seolens_core.settings import CrawlSettings


@pytest.fixture(scope="module")
def signals_crawl(
    local_cloud: LocalCloud, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    with FixtureServer(signals_sites()) as server:
        base = server.base_url(SIGNALS)
        other_host, other_port = server.host_port(SIGNALS_OTHER)
        settings = CrawlSettings.model_validate(
            {
                "start_urls": [base + "/"],
                "allow_hosts": [f"{other_host}:{other_port}"],
                "progress_poll_s": 1,
                "politeness": {"initial_delay_ms": 0, "initial_concurrency": 4},
            }
        )
        out = tmp_path_factory.mktemp("signals")
        run = run_crawl(local_cloud, settings, workers=2, out_dir=out)
        pages = [json.loads(line) for line in (out / "pages.jsonl").read_text().splitlines() if line]
        with (out / "findings.csv").open() as fh:
            findings = list(csv.DictReader(fh))
        yield {
            "run": run,
            "base": base,
            "pages": {row["url"].removeprefix(base) or "/": row for row in pages},
            "findings": findings,
            "report": json.loads((out / "report.json").read_text()),
            "html": (out / "report.html").read_text(),
        }


def _found(crawl: dict[str, Any], codes: set[str]) -> set[tuple[str, str]]:
    base = crawl["base"]
    return {
        (row["code"], row["url"].removeprefix(base) or "/")
        for row in crawl["findings"]
        if row["code"] in codes and row["url"].startswith(base)
    }


def test_crawl_succeeds(signals_crawl: dict[str, Any]) -> None:
    run = signals_crawl["run"]
    assert run.execution.status == "SUCCEEDED", (run.execution.error, run.execution.cause)


@pytest.mark.parametrize("family", sorted(SIGNALS_EXPECTED.findings))
def test_each_family_finds_exactly_its_declared_findings(signals_crawl: dict[str, Any], family: str) -> None:
    assert _found(signals_crawl, set(FAMILY_CODES[family])) == set(SIGNALS_EXPECTED.findings[family])


def test_indexability_column(signals_crawl: dict[str, Any]) -> None:
    pages = signals_crawl["pages"]
    got = {
        path: (pages[path]["indexability"], pages[path]["indexability_status"]) for path in INDEXABILITY_OF
    }
    assert got == dict(INDEXABILITY_OF)
    assert pages["/idx/report.pdf"]["x_robots_tag"] == "noindex"


def test_page_findings_keep_their_detail(signals_crawl: dict[str, Any]) -> None:
    base = signals_crawl["base"]
    multiple = [r for r in signals_crawl["findings"] if r["code"] == "ALERT_CANONICAL_MULTIPLE"]
    assert multiple and multiple[0]["detail"].startswith("2 different canonicals"), multiple
    assert base + "/idx/target" in multiple[0]["detail"]


def test_report_counts_indexability_and_draws_a_line_per_check(signals_crawl: dict[str, Any]) -> None:
    summary = signals_crawl["report"]["summary"]
    assert summary["by_indexability"]["noindex"] >= 3 and summary["by_indexability"]["indexable"] >= 2
    html = signals_crawl["html"]
    assert '<section id="signals">' in html
    assert '<tr data-code="ALERT_CANONICAL_MULTIPLE"><td>several different canonicals</td>' in html


def test_hreflang_alternates_are_crawled_and_the_matrix_lists_the_broken_pairs(
    signals_crawl: dict[str, Any],
) -> None:
    base = signals_crawl["base"]
    pages = signals_crawl["pages"]
    assert pages["/hl/fr"]["status"] == 200 and pages["/hl/it-main"]["status"] == 200  # named, never linked
    assert pages["/hl/en"]["hreflang"][1] == ["de", base + "/hl/de"]
    assert pages["/hl/sm-b"]["sitemap_hreflang"] == [
        ["en", base + "/hl/sm-a"],
        ["de", base + "/hl/sm-b"],
        ["x-default", base + "/hl/sm-a"],
    ]
    matrix = signals_crawl["report"]["hreflang_matrix"]
    pairs = {(u.removeprefix(base), lang, code) for u, lang, _, code in matrix["pairs"]}
    assert ("/hl/en", "fr", "ALERT_HREFLANG_NO_RETURN") in pairs
    assert ("/hl/en", "es", "ALERT_HREFLANG_TO_NON_200") in pairs
    assert ("/hl/en", "it", "ALERT_HREFLANG_TO_NON_CANONICAL") in pairs
    assert matrix["broken_pairs"] == len(pairs) == 6
    assert '<table class="hreflang-matrix">' in signals_crawl["html"]


def test_structured_data_columns(signals_crawl: dict[str, Any]) -> None:
    product = signals_crawl["pages"]["/sd/product"]
    assert (product["jsonld_blocks"], product["jsonld_types_count"], product["jsonld_@type"]) == (
        1,
        2,
        "Offer@@Product",
    )
    assert signals_crawl["pages"]["/sd/broken"]["jsonld_invalid"] == 1


def test_redirect_kinds_and_meta_refresh_followed_as_a_redirect(signals_crawl: dict[str, Any]) -> None:
    from infra.fixture_site._signals import REDIRECT_TYPES

    pages = signals_crawl["pages"]
    assert {path: pages[path].get("redirect_type") for path in REDIRECT_TYPES} == dict(REDIRECT_TYPES)
    base = signals_crawl["base"]
    assert pages["/tr/refresh"]["meta_refresh_to"] == base + "/tr/refreshed"
    assert pages["/tr/refreshed"]["status"] == 200  # reached through the refresh only
    assert pages["/tr/refreshed"]["inlinks"] == 2  # the two refreshes are redirect hops to it
    assert pages["/tr/http-assets"]["http_subresources"] == 1  # counted, but no finding on an http site


def test_sitemap_quality_details_and_reasons(signals_crawl: dict[str, Any]) -> None:
    base = signals_crawl["base"]
    details = {(r["code"], r["url"].removeprefix(base)): r["detail"] for r in signals_crawl["findings"]}
    assert (
        details[("ALERT_SITEMAP_LASTMOD_UNIFORM", "/sitemap-dates.xml")]
        == "all 10 entries have lastmod 2024-05-01"
    )
    assert details[("ALERT_SITEMAP_LASTMOD_FUTURE", "/sitemap-mixed.xml")].startswith("1 of 3 entries")
    assert "1 of 3 URLs on other hosts" in details[("ALERT_SITEMAP_OTHER_HOSTS", "/sitemap-mixed.xml")]
    assert (
        details[("ALERT_SITEMAP_NON_INDEXABLE", "/idx/moved")]
        == f"redirects (status 301) to {base}/idx/target"
    )
    reasons = signals_crawl["report"]["summary"]["sitemap_non_indexable"]
    assert reasons == {"canonicalised": 1, "client error": 1, "noindex": 1, "redirect": 1}


def test_an_instant_meta_refresh_is_no_page_missing_from_the_sitemap(signals_crawl: dict[str, Any]) -> None:
    missing = _found(signals_crawl, {"ALERT_NOT_IN_SITEMAP"})
    assert ("ALERT_NOT_IN_SITEMAP", "/tr/refresh-delayed") in missing
    assert ("ALERT_NOT_IN_SITEMAP", "/tr/refresh") not in missing
