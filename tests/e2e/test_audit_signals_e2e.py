"""Issue 47: the signals search engines read, crawled end to end on the signals fixture site (one page per
signal): each family's findings are exactly the declared ones, and the columns carry the verdicts. The https
checks crawl two TLS hosts on the default ports (secure.test with HSTS and an http to https redirect, lax.test
with neither), asserted on the outputs and on the fixture server's record of plain and TLS requests."""

from __future__ import annotations

import csv
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from infra.fixture_site import FixtureServer, RequestRecord
from infra.fixture_site._signals import (
    FAMILY_CODES,
    HTTPS_EXPECTED,
    HTTPS_NAMES,
    HTTPS_REDIRECT_TYPES,
    INDEXABILITY_OF,
    LAX,
    LAX_NAME,
    SECURE,
    SECURE_NAME,
    SIGNALS,
    SIGNALS_EXPECTED,
    SIGNALS_OTHER,
    TRANSPORT,
    https_signals_sites,
    signals_sites,
)
from infra.fixture_site._tls import TlsFixture
from infra.local.runtime import LocalCloud, run_crawl
from seolens_core.fetch import _pool, _stream
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
        yield {"run": run, "base": base, **_outputs(out, base)}


def _outputs(out: Path, base: str) -> dict[str, Any]:
    pages = [json.loads(line) for line in (out / "pages.jsonl").read_text().splitlines() if line]
    with (out / "findings.csv").open() as fh:
        findings = list(csv.DictReader(fh))
    return {
        "pages": {row["url"].removeprefix(base) or "/": row for row in pages},
        "findings": findings,
        "report": json.loads((out / "report.json").read_text()),
        "html": (out / "report.html").read_text(),
    }


def _default_ports(monkeypatch: pytest.MonkeyPatch, server: FixtureServer) -> None:
    """secure.test and lax.test resolve to their fixture addresses, whose ports 443 and 80 lead to the one
    port the fixture site answers TLS and plain http on (as a real site's two ports would)."""
    real_resolve = socket.getaddrinfo
    real_connect = _stream.AsyncioBackend.connect_tcp
    ports: dict[tuple[str, int], int] = {}
    for site in (SECURE, LAX):
        ip, port = server.host_port(site)
        ports.update({(ip, 443): port, (ip, 80): port})

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        return real_resolve(HTTPS_NAMES.get(host, host), *args, **kwargs)

    async def connect_tcp(self: Any, host: str, port: int, *args: Any, **kwargs: Any) -> Any:
        return await real_connect(self, host, ports.get((host, port), port), *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(_stream.AsyncioBackend, "connect_tcp", connect_tcp)


@pytest.fixture(scope="module")
def https_crawl(
    local_cloud: LocalCloud, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    tls = TlsFixture.for_names(list(HTTPS_NAMES))
    with FixtureServer(https_signals_sites(tls.server())) as server, pytest.MonkeyPatch.context() as patch:
        patch.setattr(_pool, "crawler_ssl_context", tls.client)
        _default_ports(patch, server)
        other_host, other_port = server.host_port(SIGNALS_OTHER)
        settings = CrawlSettings.model_validate(
            {
                "start_urls": [f"https://{SECURE_NAME}/", f"https://{LAX_NAME}/"],
                "allow_hosts": [f"{other_host}:{other_port}"],
                "progress_poll_s": 1,
                "politeness": {"initial_delay_ms": 0, "initial_concurrency": 4},
            }
        )
        out = tmp_path_factory.mktemp("signals-https")
        run = run_crawl(local_cloud, settings, workers=2, out_dir=out)
        logs = {site: server.log(site) for site in (SECURE, LAX)}
    yield {"run": run, "logs": logs, **_outputs(out, "")}


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


def test_https_crawl_finds_exactly_the_declared_transport_findings(https_crawl: dict[str, Any]) -> None:
    run = https_crawl["run"]
    assert run.execution.status == "SUCCEEDED", (run.execution.error, run.execution.cause)
    found = {(r["code"], r["url"]) for r in https_crawl["findings"] if r["code"] in FAMILY_CODES[TRANSPORT]}
    assert found == set(HTTPS_EXPECTED)


def test_https_columns_say_how_pages_were_served(https_crawl: dict[str, Any]) -> None:
    pages = https_crawl["pages"]
    got = {url: pages[url].get("redirect_type") for url in HTTPS_REDIRECT_TYPES}
    assert got == dict(HTTPS_REDIRECT_TYPES)  # the http to https redirect is a 308: permanent
    assert pages[f"https://{SECURE_NAME}/mixed"]["http_subresources"] == 2  # the relative stylesheet is https
    assert pages[f"https://{SECURE_NAME}/"]["hsts"].startswith("max-age=31536000")
    assert pages[f"https://{LAX_NAME}/"]["hsts"] is None
    details = {(r["code"], r["url"]): r["detail"] for r in https_crawl["findings"]}
    assert details[("ALERT_HSTS_MISSING", f"https://{LAX_NAME}/")].startswith(f"2 https pages of {LAX_NAME}")


def test_one_probe_of_the_http_twin_per_https_start_url(https_crawl: dict[str, Any]) -> None:
    logs: dict[str, list[RequestRecord]] = https_crawl["logs"]
    for site, name in ((SECURE, SECURE_NAME), (LAX, LAX_NAME)):
        log = [r for r in logs[site] if r.host_header == name]
        plain = sorted(r.path for r in log if not r.tls)
        over_tls = sorted(r.path for r in log if r.tls)
        assert over_tls.count("/") == 1 and plain.count("/") == 1, (site, plain)
        if site == LAX:  # the probe's page is audited, its links are not followed over http
            assert plain == ["/", "/legacy", "/robots.txt"]
    # secure.test's twin and its http link were answered with a redirect, and followed to https only.
    secure = [r for r in logs[SECURE] if not r.tls]
    assert {r.status for r in secure} == {308}
