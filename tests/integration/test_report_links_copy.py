"""links.jsonl from the map steps' copies of the link rows: copied by S3 where a copy is at least a part's
minimum, written through otherwise; read only when some page can make a link finding."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import pytest

from infra.local.runtime import LocalCloud
from seolens_core.bootstrap import container
from seolens_core.crawl._report import Reporter, ReportServices
from seolens_core.settings import CrawlSettings

PAD = "x" * 560  # ~600-byte rows: 10,000 of them (one map step) make a copy above S3's 5 MiB part minimum


def _crawl(app: Any, site: str, broken: bool) -> tuple[str, list[bytes]]:
    crawl_id = f"lc-{uuid.uuid4().hex[:8]}"
    urls = [f"{site}/p{i}" for i in range(50)]
    settings = CrawlSettings(start_urls=(urls[0],), allow_hosts=(site.split("//")[1],), max_pages=1000)
    app.run(app.crawls.create(crawl_id, settings, site, now=time.time()))
    pages = [
        {"url": u, "status": 404 if broken and i == 7 else 200, "outcome": "fetched", "depth": 1}
        for i, u in enumerate(urls)
    ]
    app.run(app.results.put_part(crawl_id, "pages", f"{0:013d}-a", pages))
    links = [
        {
            "crawl_id": crawl_id,
            "source": urls[i % 50],
            "target": urls[(i * 7) % 50],
            "internal": True,
            "anchor": f"{i}{PAD}",
        }
        for i in range(25_000)
    ]
    for start in range(0, len(links), 500):
        app.run(app.results.put_part(crawl_id, "links", f"{start + 1:013d}-a", links[start : start + 500]))
    return crawl_id, [json.dumps(row).encode() for row in links]


@pytest.mark.parametrize("broken", [False, True])
def test_links_jsonl_is_every_link_row_in_order_however_it_was_assembled(
    control_cloud: LocalCloud, monkeypatch: pytest.MonkeyPatch, broken: bool
) -> None:
    del control_cloud
    app = container()
    base = app.reporter.s
    crawl_id, rows = _crawl(app, f"https://l{uuid.uuid4().hex[:6]}.test", broken)
    read: list[str] = []
    real_range = type(app.results).get_range

    async def get_range(self: Any, key: str, start: int, length: int) -> bytes:
        read.append(key)
        return await real_range(self, key, start, length)

    monkeypatch.setattr(type(app.results), "get_range", get_range)
    services = ReportServices(base.crawls, base.urls, base.results, None, None, inlink_edge_budget=10_000)
    report = app.run(Reporter(services).run(crawl_id, "report"))
    body = app.run(app.results.get_file(report["outputs"]["links.jsonl"]))
    assert [json.loads(line) for line in body.splitlines()] == [json.loads(row) for row in rows]
    summary = json.loads(app.run(app.results.get_file(report["outputs"]["report.json"])))["summary"]
    assert summary["links"] == 25_000
    links_read = {key.rsplit("/", 1)[1] for key in read if "/inlinks/rows/links/" in key}
    if broken:  # a 404 page: every link row is read for the link rules (copied or not)
        assert links_read == {"000000.jsonl", "000001.jsonl", "000002.jsonl"}
        findings = json.loads(app.run(app.results.get_file(report["outputs"]["report.json"])))[
            "findings_by_code"
        ]
        assert findings["ALERT_BROKEN_INTERNAL_LINK"] >= 1
    else:  # no page can make a link finding: only the last step's copy, under a part's minimum, is read
        assert links_read == {"000002.jsonl"}


def test_a_report_that_fails_while_links_jsonl_is_assembled_leaves_no_upload(
    control_cloud: LocalCloud, monkeypatch: pytest.MonkeyPatch
) -> None:
    """links.jsonl is assembled while the report goes on: a later failure cancels it and aborts its upload."""
    import boto3

    from seolens_core.crawl import _report

    app = container()
    base = app.reporter.s
    crawl_id, _ = _crawl(app, f"https://l{uuid.uuid4().hex[:6]}.test", broken=False)
    real_put_run = _report._Work.put_run

    async def put_run(self: Any, name: str, shard: int, items: list[Any]) -> None:
        if name == "final":
            raise RuntimeError("the report failed after links.jsonl was started")
        await real_put_run(self, name, shard, items)

    monkeypatch.setattr(_report._Work, "put_run", put_run)
    services = ReportServices(base.crawls, base.urls, base.results, None, None, inlink_edge_budget=10_000)
    with pytest.raises(RuntimeError, match="after links"):
        app.run(Reporter(services).run(crawl_id, "report"))
    assert app.run(app.results.get_object(f"crawls/{crawl_id}/report/links.jsonl")) is None
    s3 = boto3.client("s3", endpoint_url=control_cloud.endpoint_url, region_name="us-east-1")
    uploads = s3.list_multipart_uploads(Bucket=app.resources.results_bucket, Prefix=f"crawls/{crawl_id}/")
    assert uploads.get("Uploads", []) == []


@pytest.mark.parametrize("broken", [False, True])
def test_links_jsonl_is_assembled_while_the_pages_are_reported(
    control_cloud: LocalCloud, monkeypatch: pytest.MonkeyPatch, broken: bool
) -> None:
    """The assembly starts with the pages' step (3), not after the duplicates' (4): waited for at the end, it
    was the last second or two of a 20,000-page report. With a broken link, the rules read the rows apart."""
    del control_cloud
    from seolens_core.crawl import _report

    app = container()
    base = app.reporter.s
    crawl_id, rows = _crawl(app, f"https://l{uuid.uuid4().hex[:6]}.test", broken)
    events: list[str] = []
    real_size, real_put_run = type(app.results).size, _report._Work.put_run

    async def size(self: Any, key: str) -> int:
        if "/inlinks/rows/links/" in key:
            events.append("links")
        return await real_size(self, key)

    async def put_run(self: Any, name: str, shard: int, items: list[Any]) -> None:
        events.append(name)
        await real_put_run(self, name, shard, items)

    monkeypatch.setattr(type(app.results), "size", size)
    monkeypatch.setattr(_report._Work, "put_run", put_run)
    services = ReportServices(base.crawls, base.urls, base.results, None, None, inlink_edge_budget=10_000)
    report = app.run(Reporter(services).run(crawl_id, "report"))
    first_dup = next(i for i, e in enumerate(events) if e.startswith("dup-"))
    assert "links" in events[:first_dup], events
    body = app.run(app.results.get_file(report["outputs"]["links.jsonl"]))
    assert body.count(b"\n") == len(rows)
