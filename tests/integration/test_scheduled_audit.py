"""The scheduled-audit handler with an EventBridge scheduled event against the template's tables in moto."""

from __future__ import annotations

import json
import os
import time
from typing import Any

import boto3
import pytest

from seolens_core.adapters.crawls import CrawlStatus, stored_settings
from seolens_core.bootstrap import container
from seolens_core.control import FakeStarter
from seolens_core.settings import CrawlSettings
from tests.integration.conftest import LambdaContextStub

# EventBridge delivers the rule's constant Input (template: '{"source": "schedule"}') instead of the event.
SCHEDULE_INPUT: dict[str, Any] = {"source": "schedule"}


def _item(crawl_id: str) -> dict[str, Any]:
    item: dict[str, Any] = boto3.client("dynamodb").get_item(
        TableName=os.environ["CRAWLS_TABLE"], Key={"crawl_id": {"S": crawl_id}}, ConsistentRead=True
    )["Item"]
    return item


def _run(monkeypatch: pytest.MonkeyPatch, sites: str) -> dict[str, Any]:
    from functions.scheduled_audit import handler

    monkeypatch.setenv("SCHEDULED_SITES", sites)
    context: Any = LambdaContextStub(function_name="seolens-ScheduledAudit")
    result: dict[str, Any] = handler(SCHEDULE_INPUT, context)
    return result


def test_one_crawl_per_site_bad_sites_reported(starter: FakeStarter, monkeypatch: pytest.MonkeyPatch) -> None:
    result = _run(
        monkeypatch,
        " https://a.example.com/ ,https://b.example.net/shop,,https://a.example.com/,ftp://c.example/",
    )
    started = {r["start_url"]: r for r in result["started"]}
    assert set(started) == {"https://a.example.com/", "https://b.example.net/shop"}
    assert [f["site"] for f in result["failed"]] == ["ftp://c.example/"]
    assert "http(s)" in result["failed"][0]["error"]
    assert sorted(starter.started) == sorted(r["crawl_id"] for r in result["started"])
    for url, row in started.items():
        item = _item(row["crawl_id"])
        assert item["status"]["S"] == "QUEUED"
        assert json.loads(stored_settings(item))["start_urls"] == [url]
        assert item["site"]["S"] == row["site"]
    assert started["https://b.example.net/shop"]["site"] == "https://b.example.net:443"


def test_no_sites_starts_nothing(starter: FakeStarter, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _run(monkeypatch, "") == {"started": [], "failed": []}
    assert starter.started == []


def test_refused_start_does_not_stop_the_other_sites(
    starter: FakeStarter, monkeypatch: pytest.MonkeyPatch
) -> None:
    starter.fail_with = RuntimeError("throttled")
    result = _run(monkeypatch, "https://first.example.com/,https://second.example.com/")
    assert [f["site"] for f in result["failed"]] == ["https://first.example.com/"]
    assert [r["start_url"] for r in result["started"]] == ["https://second.example.com/"]
    assert len(starter.started) == 1


def test_previous_completed_crawl_of_the_same_site_is_named(
    starter: FakeStarter, monkeypatch: pytest.MonkeyPatch
) -> None:
    site_url = f"https://audit-{int(time.time() * 1000)}.example.com/"
    app = container()
    settings = CrawlSettings.model_validate({"start_urls": (site_url,)})
    site = site_url.rstrip("/") + ":443"
    # Two older crawls of the site: the completed one is the comparison base, the cancelled one is not.
    app.run(app.crawls.create("prevcompleted01", settings, site, time.time() - 7200))
    app.run(app.crawls.set_status("prevcompleted01", CrawlStatus.COMPLETED, now=time.time() - 7000))
    app.run(app.crawls.create("prevcancelled01", settings, site, time.time() - 3600))
    app.run(app.crawls.set_status("prevcancelled01", CrawlStatus.CANCELLED, now=time.time() - 3500))
    result = _run(monkeypatch, f"{site_url},https://never-crawled-{int(time.time())}.example.org/")
    by_url = {r["start_url"]: r for r in result["started"]}
    assert by_url[site_url]["site"] == site
    assert by_url[site_url]["previous_crawl_id"] == "prevcompleted01"
    assert all(r["previous_crawl_id"] is None for u, r in by_url.items() if u != site_url)
