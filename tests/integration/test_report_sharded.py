"""The sharded Report step (page rows spooled by URL shard, k-way merges) writes exactly what the Reporter
that held every page in memory wrote (commit 6b32cb7), on a small crawl with every site rule firing, with
tiny spool buffers and merge reads so that every shard is spooled in several objects and read in pieces."""

from __future__ import annotations

import csv
import importlib.util
import io
import json
import random
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from infra.local.runtime import LocalCloud
from seolens_core.bootstrap import container
from seolens_core.crawl import _report
from seolens_core.crawl._report import Reporter, ReportServices
from seolens_core.settings import CrawlSettings

REPO = Path(__file__).resolve().parents[2]
OLD_REV = "6b32cb7"  # the last Reporter that held the page rows, findings and comparison in memory
OUTPUTS = ("pages.jsonl", "links.jsonl", "findings.csv", "report.json", "report.html")
# Issue 47 added rules and columns OLD_REV does not know: the comparison with it leaves them out, and the
# sharded run is compared whole with the same Reporter on one shard with its default buffers.
NEWER_CODES = frozenset(
    {
        "ALERT_HSTS_MISSING",
        "ALERT_HREFLANG_TO_NON_200",
        "ALERT_HREFLANG_TO_NON_CANONICAL",
        "ALERT_CANONICAL_TO_NOINDEX",
    }
)
NEWER_DETAILS = frozenset(
    {"ALERT_SITEMAP_NON_INDEXABLE", "ALERT_CANONICAL_NON_200", "ALERT_HREFLANG_NO_RETURN"}
)
NEWER_COLUMNS = ("indexability", "indexability_status")
BUFFERS = {
    name: getattr(_report, name) for name in ("SPOOL_BUFFER", "MERGE_READ", "MERGE_BUFFER", "STREAM_READ")
}


def _old_reporter_module(tmp_path: Path) -> Any:
    try:
        text = subprocess.run(
            ["git", "show", f"{OLD_REV}:seolens_core/crawl/_report.py"],
            cwd=REPO,
            check=True,
            capture_output=True,
            text=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip(f"git history with {OLD_REV} not available")
    path = tmp_path / "old_report.py"
    path.write_text(text)
    spec = importlib.util.spec_from_file_location("old_report_for_test", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["old_report_for_test"] = module
    spec.loader.exec_module(module)
    return module


def _crawl(
    crawl_id: str, site: str, rng: random.Random, n: int, sep: str = ""
) -> tuple[list[dict[str, Any]], list[Any]]:
    """Page rows (some URLs twice, with different outcomes) and link rows exercising every site rule.
    `sep` goes into some titles (U+2028: the old Reporter could not read such a previous pages.jsonl back)."""
    urls = [f"{site}/p{i}" for i in range(n)]
    urls[0] = f"{site}/"
    rows: list[dict[str, Any]] = []
    for i, url in enumerate(urls):
        row: dict[str, Any] = {
            "crawl_id": crawl_id,
            "url": url,
            "depth": min(i, 1 + i % 4),
            "status": 200,
            "outcome": "fetched",
            "is_html": True,
            "internal": True,
            "title": f"T{i % 37}" if i % 3 else f"Title {i}{sep}",
            "meta_desc": f"D{i % 53}" if i % 5 else None,
            "content_hash": f"h{i % 71}",
            "canonical": url,
            "ttfb_ms": rng.uniform(10, 3000),
            "alerts": ["ALERT_META_DESC_SHORT"] if i % 7 == 0 else [],
        }
        if i % 11 == 3:
            row.update(status=301, outcome="fetched", redirect_to=urls[(i + 11) % n], title=None)
        elif i % 13 == 4:
            row.update(status=404, title=None)
        elif i % 17 == 5:
            row.update(status=None, outcome="error", error="timeout", title=None)
        elif i % 19 == 6:
            row["canonical"] = urls[(i + 1) % n]
        elif i % 23 == 7:
            row["hreflang"] = [["de", urls[(i + 2) % n]], ["fr", urls[(i + 3) % n]]]
        elif i % 29 == 8:
            row["noindex"] = True
        elif i % 31 == 9:
            row["waf_provider"] = "cloudflare"
        rows.append(row)
        if i % 9 == 2:  # the same URL again: a lower rank never replaces, a higher one does
            rows.append({**row, "outcome": "pruned", "title": "late"})
            rows.append({**row, "title": "second copy"})  # a tie: the first seen wins
        if i % 10 == 1:
            rows.insert(max(0, len(rows) - 3), {**row, "outcome": "disallowed", "title": "early"})
    loop_a, loop_b = f"{site}/loop-a", f"{site}/loop-b"
    rows.append({"url": loop_a, "status": 302, "outcome": "fetched", "redirect_to": loop_b, "depth": 2})
    rows.append({"url": loop_b, "status": 302, "outcome": "fetched", "redirect_to": loop_a, "depth": 2})
    links: list[Any] = []
    for i, url in enumerate(urls):
        if i and i % 41 == 0:
            continue  # a few pages linked from nowhere
        src = urls[(i - 1) // 3] if i else urls[0]
        links.append({"crawl_id": crawl_id, "source": src, "target": url, "internal": True})
        links.append(
            {"crawl_id": crawl_id, "source": url, "target": urls[rng.randrange(n)], "internal": True}
        )
    links.append({"crawl_id": crawl_id, "source": urls[1], "target": loop_a, "internal": True})
    links.append({"crawl_id": crawl_id, "source": urls[2], "target": "https://ext.test/x", "internal": False})
    return rows, links


def _write(app: Any, crawl_id: str, site: str, rows: list[Any], links: list[Any], created: float) -> None:
    settings = CrawlSettings(start_urls=(f"{site}/",), allow_hosts=(site.split("//")[1],), max_pages=1000)
    app.run(app.crawls.create(crawl_id, settings, site, now=created))
    # Pages found only in the sitemap: seeded, fetched, linked from nowhere (orphans).
    only = [f"{site}/only-in-sitemap-{i}" for i in range(5)]
    rows = rows + [{"url": u, "status": 200, "outcome": "fetched", "depth": 1, "title": u} for u in only]
    for part in range(0, len(rows), 7):
        app.run(app.results.put_part(crawl_id, "pages", f"{part:013d}-a", rows[part : part + 7]))
    for part in range(0, len(links), 25):
        app.run(app.results.put_part(crawl_id, "links", f"{part:013d}-a", links[part : part + 25]))
    sitemap = [{"url": r["url"], "lastmod": "2026-01-02"} for r in rows[::4]]
    sitemap += [{"url": u} for u in only]
    app.run(app.results.put_part(crawl_id, "sitemap", "s1", sitemap))
    seed = [
        {"code": "ALERT_SITEMAP_MALFORMED", "url": f"{site}/sitemap.xml", "detail": 'bad\ntail\r\n\nend, "q"'}
    ]
    app.run(app.results.put_part(crawl_id, "seed", "s1", seed))


def _outputs(app: Any, crawl_id: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in OUTPUTS:
        body = app.run(app.results.get_file(f"crawls/{crawl_id}/report/{name}"))
        # The same rows in the same order; the lines' spacing is the JSON writer's (compact since orjson).
        out[name] = (
            [json.loads(line) for line in body.split(b"\n") if line] if name.endswith(".jsonl") else body
        )
    report = json.loads(out["report.json"])
    for volatile in ("finished_at", "duration_s"):
        report.pop(volatile)
    out["report.json"] = report
    html = out["report.html"].decode()
    out["report.html"] = len(html)  # holds the finishing time; its size and the rows it embeds must match
    return out


def _older_findings(body: bytes) -> list[tuple[str, ...]]:
    """findings.csv rows of the codes OLD_REV knew, in order (details of the codes issue 47 reworded left out)."""
    rows = csv.DictReader(io.StringIO(body.decode()))
    return [
        (r["code"], r["severity"], r["url"])
        + (() if r["code"] in NEWER_DETAILS else (r["detail"], r["related_url"]))
        for r in rows
        if r["code"] not in NEWER_CODES
    ]


def test_sharded_report_writes_what_the_in_memory_reporter_wrote(
    control_cloud: LocalCloud, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    del control_cloud
    old = _old_reporter_module(tmp_path)
    app = container()
    _ = (app.crawls, app.results, app.reporter)
    base = app.reporter.s
    site = f"https://r{uuid.uuid4().hex[:6]}.test"
    rng = random.Random(5)
    previous = f"prev-{uuid.uuid4().hex[:8]}"
    rows, links = _crawl(previous, site, rng, 240)
    _write(app, previous, site, rows, links, created=time.time() - 60)
    monkeypatch.setattr(_report, "SPOOL_BUFFER", 2_000)
    monkeypatch.setattr(_report, "MERGE_READ", 700)
    monkeypatch.setattr(_report, "MERGE_BUFFER", 700)  # reads end mid-line in every run
    monkeypatch.setattr(_report, "STREAM_READ", 900)  # and in the link rows read through
    monkeypatch.setattr(_report, "HTML_MAX_ROWS", 50)  # report.html's bounded selections are exercised too

    def services(module: Any) -> Any:
        return module.ReportServices(
            base.crawls,
            base.urls,
            base.results,
            None,
            None,
            inlink_shards=4,
            extra_outputs=base.extra_outputs,
        )

    app.run(Reporter(services(_report)).run(previous, "report"))

    current = f"cur-{uuid.uuid4().hex[:8]}"
    rows, links = _crawl(current, site, random.Random(6), 260, sep=" \u2028 ")
    _write(app, current, site, rows, links, created=time.time() - 30)
    monkeypatch.setattr(old, "HTML_MAX_ROWS", 50)
    app.run(old.Reporter(services(old)).run(current, "report"))
    expected = _outputs(app, current)
    with monkeypatch.context() as unsharded:  # the same Reporter, one shard, its default buffers
        for name, value in BUFFERS.items():
            unsharded.setattr(_report, name, value)
        one_shard = ReportServices(
            base.crawls,
            base.urls,
            base.results,
            None,
            None,
            inlink_shards=1,
            extra_outputs=base.extra_outputs,
        )
        app.run(Reporter(one_shard).run(current, "report"))
    reference = _outputs(app, current)
    assert isinstance(services(_report), ReportServices)
    new = Reporter(services(_report))
    app.run(new.run(current, "report"))
    got = _outputs(app, current)
    for name in OUTPUTS:
        assert got[name] == reference[name], name

    added = {"stopped": None, "not_crawled": 0, "orphans_assessed": True, "not_in_sitemap_assessed": True}
    assert {k: got["report.json"]["summary"].pop(k) for k in added} == added  # fields newer than OLD_REV
    for name in ("pages.jsonl", "links.jsonl"):
        rows = [{k: v for k, v in row.items() if k not in NEWER_COLUMNS} for row in got[name]]
        assert rows == expected[name], name
    assert _older_findings(got["findings.csv"]) == _older_findings(expected["findings.csv"])
    report = got["report.json"]
    assert report["comparison"]["previous_crawl_id"] == previous
    assert report["comparison"]["summary"]["new_urls"] > 0
    codes = set(report["findings_by_code"])
    for code in (
        "ALERT_TITLE_DUPLICATE",
        "ALERT_DUPLICATE_CONTENT",
        "ALERT_REDIRECT_LOOP",
        "ALERT_GRAPH_ORPHAN_PAGE",
        "ALERT_NOT_IN_SITEMAP",
        "ALERT_BROKEN_INTERNAL_LINK",
        "ALERT_CANONICAL_NON_200",
        "ALERT_HREFLANG_NO_RETURN",
    ):
        assert code in codes, code
    work = app.run(app.results.list_keys(f"crawls/{current}/reportwork/"))
    assert len([k for k in work if "/spool/rows/0000/" in k]) > 1  # the spool really was split
