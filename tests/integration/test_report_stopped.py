"""The report of a crawl that ended early (page budget): every URL it knew of is listed once, whether queued,
finished unfetched by a worker, held in a batch journal still publishing, or listed in a sitemap and never
queued; none of them is judged (orphan, non-indexable, pending), and one finding says the crawl ended early."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from typing import Any

from infra.local.runtime import LocalCloud
from seolens_core.adapters.crawls import CrawlStatus
from seolens_core.adapters.urls import Journal
from seolens_core.bootstrap import container
from seolens_core.crawl._report import stop_reason
from seolens_core.frontier import FrontierMessage
from seolens_core.settings import CrawlSettings
from seolens_core.urls import url_key_hex


def _msg(crawl_id: str, url: str, depth: int = 1) -> FrontierMessage:
    return FrontierMessage(crawl_id=crawl_id, url=url, key=url_key_hex(url), depth=depth)


def _page(crawl_id: str, url: str) -> dict[str, Any]:
    # The https test site sends HSTS (else its pages would get ALERT_HSTS_MISSING, not what these tests are about).
    row = {"crawl_id": crawl_id, "url": url, "depth": 1, "status": 200, "outcome": "fetched", "title": url}
    return {**row, "hsts": "max-age=31536000"}


def _report_of(app: Any, crawl_id: str) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    app.run(app.reporter.run(crawl_id, "report"))
    base = f"crawls/{crawl_id}/report/"
    report = json.loads(app.run(app.results.get_file(base + "report.json")))
    body = app.run(app.results.get_file(base + "pages.jsonl"))
    pages = {row["url"]: row for row in map(json.loads, body.splitlines())}
    csv_rows = app.run(app.results.get_file(base + "findings.csv")).decode().splitlines()
    return report, pages, csv_rows


def test_an_early_end_lists_every_url_once_and_judges_none_it_did_not_fetch(
    control_cloud: LocalCloud,
) -> None:
    del control_cloud
    app = container()
    crawl_id = f"stop-{uuid.uuid4().hex[:8]}"
    site = f"https://s{uuid.uuid4().hex[:6]}.test"
    host = site
    settings = CrawlSettings(start_urls=(f"{site}/",), max_pages=2)
    now = time.time()
    app.run(app.crawls.create(crawl_id, settings, site, now=now - 10))
    home, fetched, queued, dropped, journaled, unclaimed = (
        f"{site}/",
        f"{site}/fetched",
        f"{site}/queued",
        f"{site}/left-by-a-worker",
        f"{site}/in-a-journal",
        f"{site}/never-queued",
    )
    claimed = [_msg(crawl_id, home, 0)] + [_msg(crawl_id, u) for u in (fetched, queued, dropped, journaled)]
    app.run(app.urls.claim(claimed, [host] * len(claimed), now, consistent=True))
    # Fetched and published: the home page (linking to nothing listed) and one sitemap page.
    app.run(app.results.put_part(crawl_id, "pages", f"{int(now * 1000):013d}-a", [_page(crawl_id, home)]))
    app.run(app.results.put_part(crawl_id, "pages", f"{int(now * 1000):013d}-b", [_page(crawl_id, fetched)]))
    app.run(app.urls.finish([(claimed[0], host, "fetched"), (claimed[1], host, "fetched")], now))
    # A worker saw the budget reached and finished this one unfetched.
    app.run(app.urls.finish([(claimed[3], host, "not_crawled_budget")], now))
    # A batch that fetched a page and marked it done, its rows still in its journal (not yet in S3).
    journal = Journal.build(crawl_id, "0000000000001-j", {"pages": [_page(crawl_id, journaled)], "links": []})
    app.run(app.urls.finish([(claimed[4], host, "fetched")], now, [journal]))
    sitemap = [
        {"url": u, "sitemap": f"{site}/sitemap.xml"} for u in (fetched, queued, dropped, journaled, unclaimed)
    ]
    app.run(app.results.put_part(crawl_id, "sitemap", "s1", sitemap))
    app.run(app.crawls.add_counters(crawl_id, {"n_fetched": 3}))
    app.run(app.crawls.set_status(crawl_id, CrawlStatus.FINISHING, allowed_from=(CrawlStatus.QUEUED,)))
    assert stop_reason(app.run(app.crawls.get(crawl_id))) == "page budget"

    report, pages, csv_rows = _report_of(app, crawl_id)

    assert {u: p["outcome"] for u, p in pages.items()} == {
        home: "fetched",
        fetched: "fetched",
        journaled: "fetched",
        queued: "not_crawled",
        dropped: "not_crawled",
        unclaimed: "not_crawled",
    }
    assert all(pages[u]["alerts"] == [] for u in (queued, dropped, unclaimed))
    assert all(pages[u]["is_sitemap_url"] for u in (fetched, queued, dropped, journaled, unclaimed))
    summary = report["summary"]
    assert (summary["stopped"], summary["not_crawled"], summary["pending"]) == ("page budget", 3, 0)
    assert (summary["orphans_assessed"], summary["not_in_sitemap_assessed"]) == (False, True)
    # Unlinked sitemap pages would be orphans in a drained crawl; here no page of the site was judged so.
    assert report["findings_by_code"] == {"ALERT_CRAWL_STOPPED": 1}
    (stopped,) = [row for row in csv_rows if "ALERT_CRAWL_STOPPED" in row]
    assert "3 URLs discovered but not crawled" in stopped


def test_a_drained_crawl_still_reports_its_orphans_and_held_back_urls(control_cloud: LocalCloud) -> None:
    """The same rules on a crawl that drained: a fetched, unlinked sitemap page is an orphan; a URL its host
    held back is pending (a finding) and, never fetched, is neither an orphan nor a non-indexable URL."""
    del control_cloud
    app = container()
    crawl_id = f"drained-{uuid.uuid4().hex[:8]}"
    site = f"https://d{uuid.uuid4().hex[:6]}.test"
    now = time.time()
    app.run(app.crawls.create(crawl_id, CrawlSettings(start_urls=(f"{site}/",)), site, now=now - 10))
    fetched, held = f"{site}/only-in-sitemap", f"{site}/held-back"
    claimed = [_msg(crawl_id, fetched), _msg(crawl_id, held)]
    app.run(app.urls.claim(claimed, [site, site], now, consistent=True))
    app.run(app.results.put_part(crawl_id, "pages", f"{int(now * 1000):013d}-a", [_page(crawl_id, fetched)]))
    app.run(app.urls.finish([(claimed[0], site, "fetched")], now))
    app.run(app.results.put_part(crawl_id, "sitemap", "s1", [{"url": fetched}, {"url": held}]))

    report, pages, _ = _report_of(app, crawl_id)

    assert (pages[fetched]["outcome"], pages[held]["outcome"]) == ("fetched", "pending")
    assert report["summary"]["stopped"] is None and report["summary"]["orphans_assessed"] is True
    assert report["findings_by_code"] == {"ALERT_GRAPH_ORPHAN_PAGE": 1, "ALERT_URL_PENDING": 1}


def test_page_budget_units_are_never_granted_past_the_budget(control_cloud: LocalCloud) -> None:
    """`reserve_pages` from many workers at once: exactly the budget is granted, and a unit given back (a
    record that did not fetch) can be taken again."""
    del control_cloud
    app = container()
    crawl_id = f"units-{uuid.uuid4().hex[:8]}"
    settings = CrawlSettings(start_urls=("https://units.test/",), max_pages=7)
    app.run(app.crawls.create(crawl_id, settings, "https://units.test", now=time.time()))

    async def many() -> list[int]:
        return list(
            await asyncio.gather(*(app.crawls.reserve_pages(crawl_id, k, 7) for k in (3, 1, 2, 3, 1, 2)))
        )

    granted = app.run(many())
    assert sum(granted) == 7 and all(0 <= g <= k for g, k in zip(granted, (3, 1, 2, 3, 1, 2), strict=True))
    assert app.run(app.crawls.reserve_pages(crawl_id, 1, 7)) == 0
    app.run(app.crawls.add_counters(crawl_id, {"n_reserved": -2}))  # two records did not fetch
    assert app.run(app.crawls.reserve_pages(crawl_id, 5, 7)) == 2
    record = app.run(app.crawls.get(crawl_id))
    assert (record.counters["n_reserved"], record.pages_taken) == (7, 7)
