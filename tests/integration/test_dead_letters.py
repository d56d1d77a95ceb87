"""DeadLetterDrain on the template's stack in moto: a dead-lettered URL is redriven, then finished as
`dead_letter` (counted once, reported, no longer pending); an open journal is published; nothing is lost."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import boto3
import pytest

from infra.local.runtime import LocalCloud
from seolens_core.adapters.crawls import CrawlStatus
from seolens_core.adapters.urls import DONE, Journal
from seolens_core.bootstrap import Container, container
from seolens_core.crawl._dead_letters import MALFORMED_PREFIX, redrive_delay_s
from seolens_core.frontier import FrontierMessage
from seolens_core.settings import CrawlSettings
from seolens_core.urls import url_key_hex

SITE = "http://dead.test"


@pytest.fixture
def app(control_cloud: LocalCloud) -> Container:
    return container()


def _crawl(app: Container, **settings: Any) -> str:
    crawl_id = uuid.uuid4().hex[:16]
    config = CrawlSettings(start_urls=(f"{SITE}/",), **{"dead_letter_retry_s": 30, **settings})
    app.run(app.crawls.create(crawl_id, config, "dead.test", time.time()))
    app.run(app.crawls.set_status(crawl_id, CrawlStatus.RUNNING, now=time.time()))
    return crawl_id


def _queued(app: Container, crawl_id: str, path: str, depth: int = 1, redrives: int = 0) -> FrontierMessage:
    """A URL claimed (queued, pending) the way the worker claims a discovered link."""
    url = f"{SITE}{path}"
    msg = FrontierMessage(crawl_id, url, url_key_hex(url), depth, parent="p0", redrives=redrives)
    claimed = app.run(app.urls.claim([msg], ["http://dead.test"], time.time()))
    assert claimed.new == [msg]
    app.run(app.crawls.add_counters(crawl_id, {f"q{depth}": 1}))
    return msg


def _frontier(control_cloud: LocalCloud, crawl_id: str) -> list[dict[str, Any]]:
    """Messages of this crawl on the frontier queue, delayed ones included (consumed: tests own their crawl)."""
    assert control_cloud.stack is not None
    sqs = boto3.client("sqs", endpoint_url=control_cloud.endpoint_url, region_name="us-east-1")
    url = control_cloud.stack.queue_urls["FrontierQueue"]
    found: list[dict[str, Any]] = []
    deadline = time.time() + 40
    while time.time() < deadline:
        resp = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1)
        for m in resp.get("Messages", []):
            if json.loads(m["Body"])["crawl_id"] == crawl_id:
                found.append(json.loads(m["Body"]))
                sqs.delete_message(QueueUrl=url, ReceiptHandle=m["ReceiptHandle"])
        if found:
            return found
    return found


def _rows(app: Container, crawl_id: str, kind: str) -> list[dict[str, Any]]:
    async def collect() -> list[dict[str, Any]]:
        return [r async for r in app.results.rows(crawl_id, kind)]

    return app.run(collect())


def test_redrive_delay_doubles_up_to_the_sqs_limit() -> None:
    assert [redrive_delay_s(60, n) for n in range(5)] == [60, 120, 240, 480, 900]
    assert [redrive_delay_s(1, 0, position=n) for n in range(3)] == [1, 2, 3]  # one batch, spread out


def test_a_dead_letter_is_redriven_with_one_more_redrive_and_a_delay(
    app: Container, control_cloud: LocalCloud
) -> None:
    crawl_id = _crawl(app, dead_letter_redrives=2, dead_letter_retry_s=0)
    msg = _queued(app, crawl_id, "/a")
    assert app.run(app.dead_letter_drain.handle("m1", msg.to_json())) == "redriven"
    (back,) = _frontier(control_cloud, crawl_id)
    assert back["url"] == msg.url and back["redrives"] == 1
    pending, _ = app.run(app.urls.pending(crawl_id))
    assert [p.url for p in pending] == [msg.url]  # still queued: the crawl waits for it


def test_after_its_redrives_a_url_is_finished_as_dead_letter_once(app: Container) -> None:
    crawl_id = _crawl(app, dead_letter_redrives=2)
    msg = _queued(app, crawl_id, "/b", depth=3, redrives=2)
    assert app.run(app.dead_letter_drain.handle("m1", msg.to_json())) == "dead_letter"
    assert app.run(app.dead_letter_drain.handle("m1", msg.to_json())) == "duplicate"  # redelivered copy
    pending, _ = app.run(app.urls.pending(crawl_id))
    assert pending == []  # the crawl can drain
    assert app.run(app.urls.states([msg])) == {(crawl_id, msg.key): DONE}
    assert app.run(app.urls.outcomes(crawl_id)).get("dead_letter") == 1
    counters = app.run(app.crawls.get(crawl_id)).counters
    assert counters.get("n_dead_letter") == 1 and counters.get("q3") == 0
    (row,) = _rows(app, crawl_id, "pages")
    assert row["url"] == msg.url and row["outcome"] == "dead_letter"
    assert row["alerts"] == ["ALERT_DEAD_LETTER"] and row["dead_letter_redrives"] == 2


def test_a_stopped_crawl_finishes_its_dead_letters_without_redrive(app: Container) -> None:
    crawl_id = _crawl(app, dead_letter_redrives=5)
    msg = _queued(app, crawl_id, "/c")
    app.run(app.crawls.set_status(crawl_id, CrawlStatus.CANCELLED, now=time.time()))
    assert app.run(app.dead_letter_drain.handle("m1", msg.to_json())) == "dead_letter"


def _fetched_journal(msg: FrontierMessage, child_url: str, part: str) -> Journal:
    """The journal of a flush that fetched `msg` (status 200) and discovered `child_url`, counted once."""
    child = FrontierMessage(msg.crawl_id, child_url, url_key_hex(child_url), 2, parent=msg.key)
    body = {
        "pages": [{"url": msg.url, "status": 200, "depth": 1, "outcome": "fetched"}],
        "links": [{"from": msg.url, "to": child_url}],
        "outgoing": [[child.to_json(), 0.0]],
        "counters": {"n_fetched": 1, "q1": -1},
    }
    return Journal.build(msg.crawl_id, part, body)


def test_a_done_url_whose_flush_crashed_gets_its_journal_published(
    app: Container, control_cloud: LocalCloud
) -> None:
    crawl_id = _crawl(app)
    msg = _queued(app, crawl_id, "/d")
    child_url = f"{SITE}/child"
    journal = _fetched_journal(msg, child_url, "0000000000001-abc")
    # The flush's first write landed (URL done, journal stored), then the container died.
    app.run(app.urls.finish([(msg, "http://dead.test", "fetched")], time.time(), [journal]))
    assert app.run(app.dead_letter_drain.handle("m1", msg.to_json())) == "republished"
    assert app.run(app.dead_letter_drain.handle("m1", msg.to_json())) == "duplicate"
    assert app.run(app.urls.unpublished([(crawl_id, journal.part)])) == []
    assert [r["url"] for r in _rows(app, crawl_id, "pages")] == [msg.url]
    assert [r["to"] for r in _rows(app, crawl_id, "links")] == [child_url]
    assert [m["url"] for m in _frontier(control_cloud, crawl_id)] == [child_url]
    counters = app.run(app.crawls.get(crawl_id)).counters
    assert counters.get("n_fetched") == 1 and counters.get("q1") == 0  # applied once


def test_a_url_done_by_its_leases_journal_is_published_not_dead_lettered(
    app: Container, control_cloud: LocalCloud
) -> None:
    """The lease named the batch's journal, the flush stored it (no URL item of its own) and died: a dead-
    lettered copy publishes the journal, and the URL is never finished as a dead letter."""
    crawl_id = _crawl(app, dead_letter_redrives=0)
    msg = _queued(app, crawl_id, "/leased")
    child_url = f"{SITE}/leased-child"
    journal = _fetched_journal(msg, child_url, "0000000000002-lease")
    assert app.run(app.urls.claim_fetch(msg, time.time(), 90.0, part=journal.part)).granted
    app.run(
        app.urls.finish(
            [(msg, "http://dead.test", "fetched")], time.time(), [journal], leased={(crawl_id, msg.key)}
        )
    )
    assert app.run(app.dead_letter_drain.handle("m1", msg.to_json())) == "republished"
    assert app.run(app.dead_letter_drain.handle("m1", msg.to_json())) == "duplicate"
    assert [r["url"] for r in _rows(app, crawl_id, "pages")] == [msg.url]
    assert [m["url"] for m in _frontier(control_cloud, crawl_id)] == [child_url]
    assert app.run(app.urls.pending(crawl_id))[0] == []
    assert app.run(app.urls.outcomes(crawl_id)) == {"fetched": 1}


def test_a_journal_nothing_points_to_any_more_is_published_by_the_progress_check(
    app: Container, control_cloud: LocalCloud
) -> None:
    """The crash e2e test's stall: a flush stored its journal and died; a later finish of its URL by another
    copy of the message re-pointed the URL, so no redelivered record finds the journal. The progress check
    publishes it once it is old and nothing else is pending, and the crawl drains."""
    crawl_id = _crawl(app)
    msg = _queued(app, crawl_id, "/orphan")
    child_url = f"{SITE}/orphan-child"
    flushed_at = time.time() - 200
    journal = _fetched_journal(msg, child_url, f"{int(flushed_at * 1000):013d}-orphan")
    app.run(app.urls.finish([(msg, "http://dead.test", "fetched")], flushed_at, [journal]))
    app.run(app.urls.finish([(msg, "http://dead.test", "fetched")], time.time()))  # the other copy: no `jr`
    assert app.run(app.progress.check(crawl_id))["state"] == "DRAINED"
    assert app.run(app.urls.unpublished([(crawl_id, journal.part)])) == []
    assert [r["url"] for r in _rows(app, crawl_id, "pages")] == [msg.url]
    assert [m["url"] for m in _frontier(control_cloud, crawl_id)] == [child_url]
    counters = app.run(app.crawls.get(crawl_id)).counters
    assert counters.get("n_fetched") == 1 and counters.get("q1") == 0  # applied once


def test_a_young_journal_is_left_to_its_batch(app: Container) -> None:
    crawl_id = _crawl(app)
    msg = _queued(app, crawl_id, "/young")
    journal = Journal.build(crawl_id, f"{int(time.time() * 1000):013d}-young", {"pages": [], "counters": {}})
    app.run(app.urls.finish([(msg, "http://dead.test", "fetched")], time.time(), [journal]))
    assert app.run(app.progress.check(crawl_id))["state"] == "RUNNING"
    assert len(app.run(app.urls.unpublished([(crawl_id, journal.part)]))) == 1


def test_a_message_that_is_not_a_frontier_message_is_kept_for_inspection(app: Container) -> None:
    assert app.run(app.dead_letter_drain.handle("id/../1", "{not json")) == "malformed"
    assert app.run(app.results.get_object(f"{MALFORMED_PREFIX}id1.txt")) == b"{not json"


def test_a_message_of_a_deleted_crawl_is_acknowledged(app: Container) -> None:
    url = f"{SITE}/e"
    msg = FrontierMessage("no-such-crawl", url, url_key_hex(url), 1)
    assert app.run(app.dead_letter_drain.handle("m1", msg.to_json())) == "unknown_crawl"


def test_a_crash_between_the_row_and_the_finish_is_repaired_by_the_redelivered_copy(
    app: Container, monkeypatch: pytest.MonkeyPatch
) -> None:
    crawl_id = _crawl(app, dead_letter_redrives=0)
    msg = _queued(app, crawl_id, "/f")
    real = app.crawls.add_counters

    async def crash(*args: Any, **kwargs: Any) -> bool:
        raise RuntimeError("the container died")

    monkeypatch.setattr(app.crawls, "add_counters", crash)
    with pytest.raises(RuntimeError):
        app.run(app.dead_letter_drain.handle("m1", msg.to_json()))
    monkeypatch.setattr(app.crawls, "add_counters", real)
    assert app.run(app.dead_letter_drain.handle("m1", msg.to_json())) == "dead_letter"
    assert app.run(app.urls.pending(crawl_id))[0] == []
    assert app.run(app.crawls.get(crawl_id)).counters.get("n_dead_letter") == 1
    rows = _rows(app, crawl_id, "pages")
    assert {(r["url"], r["outcome"]) for r in rows} == {(msg.url, "dead_letter")}  # one URL, one outcome
