"""The monitor loop's wait between progress checks: each check is three state transitions, so it grows."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from seolens_core.adapters.crawls import CrawlRecord, CrawlStatus
from seolens_core.adapters.urls import JOURNAL_MARK, Journal, PendingUrl
from seolens_core.crawl._progress import (
    MAX_PROGRESS_WAIT_S,
    ORPHAN_JOURNAL_S,
    ProgressChecker,
    ProgressServices,
    expected_drain_s,
    journal_age_s,
    progress_wait_s,
)
from seolens_core.crawl._worker import part_id
from seolens_core.settings import CrawlSettings


def test_a_young_crawl_is_checked_at_its_base_interval() -> None:
    assert progress_wait_s(1, 0.0) == 1
    assert progress_wait_s(1, 19.0) == 1
    assert progress_wait_s(10, 100.0) == 10


def test_the_wait_grows_with_the_crawls_age_up_to_the_cap() -> None:
    assert progress_wait_s(1, 200.0) == 10
    assert progress_wait_s(1, 599.0) == 30
    assert progress_wait_s(1, 86_400.0) == MAX_PROGRESS_WAIT_S


def test_a_base_above_the_cap_is_kept() -> None:
    assert progress_wait_s(120, 86_400.0) == 120


def test_a_time_budget_is_checked_when_it_ends() -> None:
    assert progress_wait_s(1, 1_000.0, budget_left_s=4.2) == 5
    assert progress_wait_s(1, 1_000.0, budget_left_s=-3.0) == 1


@pytest.mark.parametrize("seconds", [600, 1_500, 7_200])
def test_transitions_of_a_long_crawl_are_a_fraction_of_one_check_a_second(seconds: int) -> None:
    t, checks = 0.0, 0
    while t < seconds:
        t += progress_wait_s(1, t)
        checks += 1
    assert checks < seconds / 5


class _Crawl:
    def __init__(self, settings: CrawlSettings, started: float) -> None:
        self.record = CrawlRecord("c1", CrawlStatus.RUNNING, settings, "shop.example", "", started)

    async def get(self, crawl_id: str) -> CrawlRecord:
        return self.record


class _OnePending:
    async def pending(
        self, crawl_id: str, limit: int = 1000, urls_hint: int = 0
    ) -> tuple[list[PendingUrl], bool]:
        return [PendingUrl("http://shop.example/a", "k", 1, "http://shop.example")], False


class _NoRobotsTrouble:
    async def stored_decision(self, host: str) -> None:
        return None


@pytest.mark.parametrize(
    ("max_seconds", "expected_wait"),
    [(None, 20), (403.0, 3)],  # 5% of 400 s; or the 3 s left of the time budget
)
def test_the_monitor_is_told_the_grown_wait(max_seconds: float | None, expected_wait: int) -> None:
    """What the state machine's Wait state reads: a running crawl 400 s old polled every second."""
    settings = CrawlSettings(start_urls=("http://shop.example/",), progress_poll_s=1, max_seconds=max_seconds)
    services = ProgressServices(
        crawls=cast(Any, _Crawl(settings, started=1_000.0)),
        urls=cast(Any, _OnePending()),
        robots=cast(Any, _NoRobotsTrouble()),
        clock=lambda: 1_400.0,
    )
    out = asyncio.run(ProgressChecker(services).check("c1"))
    assert out["state"] == "RUNNING"
    assert out["wait_seconds"] == expected_wait


def test_a_crawl_about_to_drain_is_checked_when_it_should_be_done() -> None:
    assert progress_wait_s(1, 400.0, drain_s=3.2) == 4  # not 5% of its age (20 s)
    assert progress_wait_s(1, 400.0, drain_s=0.2) == 1  # never below the base
    assert progress_wait_s(5, 400.0, drain_s=0.2) == 5
    assert progress_wait_s(1, 400.0, drain_s=500.0) == 20  # never later than the grown wait


def test_the_drain_is_expected_at_the_rate_since_the_last_check() -> None:
    previous = {"counters": {"n_fetched": 900}, "checked_at": 990.0}
    assert expected_drain_s(50, 1_000, 1_000.0, previous) == pytest.approx(5.0)  # 10 pages/s
    assert expected_drain_s(50, 900, 1_000.0, previous) is None  # nothing fetched since: no rate to trust
    assert expected_drain_s(0, 1_000, 1_000.0, previous) is None
    assert expected_drain_s(50, 1_000, 1_000.0, None) is None  # the first check
    assert (
        expected_drain_s(50, 1_000, 1_000.0, {"state": "STARTING", "checked_at": 0, "counters": {}}) is None
    )
    for hostile in (
        {"counters": "x", "checked_at": 1.0},
        {"counters": {"n_fetched": "many"}, "checked_at": 1.0},
        {"counters": {}, "checked_at": "soon"},
        {"counters": {}, "checked_at": 2_000.0},
    ):
        assert expected_drain_s(50, 1_000, 1_000.0, hostile) is None


class _Pending:
    def __init__(self, n: int, more: bool = False) -> None:
        self.n, self.more = n, more

    async def pending(
        self, crawl_id: str, limit: int = 1000, urls_hint: int = 0
    ) -> tuple[list[PendingUrl], bool]:
        urls = [
            PendingUrl(f"http://shop.example/{i}", f"k{i}", 1, "http://shop.example") for i in range(self.n)
        ]
        return urls, self.more


@pytest.mark.parametrize(
    ("fetched_before", "pending", "more", "expected_wait"),
    [
        (8_000, 30, False, 1),  # 200 pages/s since the last check, 30 left: check again at the base
        (9_000, 150, False, 2),  # 100 pages/s: 1.5 s
        (9_999, 150, False, 20),  # the tail is one slow host (0.1 page/s): the grown wait, not one a second
        (8_000, 30, True, 20),  # more pending than the sample shows: no estimate
    ],
)
def test_the_monitor_checks_the_last_urls_when_they_should_be_done(
    fetched_before: int, pending: int, more: bool, expected_wait: int
) -> None:
    """At 6,000 pages the crawl sat idle ~4 s between its last fetch and the check that saw it drained (5% of
    its age); at 20,000 pages up to 17 s."""
    settings = CrawlSettings(start_urls=("http://shop.example/",), progress_poll_s=1, max_pages=None)
    crawl = _Crawl(settings, started=1_000.0)
    crawl.record.counters["n_fetched"] = 10_000
    services = ProgressServices(
        crawls=cast(Any, crawl),
        urls=cast(Any, _Pending(pending, more)),
        robots=cast(Any, _NoRobotsTrouble()),
        clock=lambda: 1_400.0,
    )
    previous = {"state": "RUNNING", "counters": {"n_fetched": fetched_before}, "checked_at": 1_390.0}
    out = asyncio.run(ProgressChecker(services).check("c1", previous))
    assert out["state"] == "RUNNING"
    assert out["wait_seconds"] == expected_wait
    assert out["checked_at"] == 1_400.0


class _CountedPending(_Pending):
    """`_Pending` that counts how often the URLs table is read."""

    def __init__(self, n: int, more: bool = False) -> None:
        super().__init__(n, more)
        self.reads = 0

    async def pending(
        self, crawl_id: str, limit: int = 1000, urls_hint: int = 0
    ) -> tuple[list[PendingUrl], bool]:
        self.reads += 1
        return await super().pending(crawl_id, limit)


def _check_with_counters(
    queued: dict[str, int], fetched_before: int, in_table: int
) -> tuple[dict[str, Any], int]:
    """One check of a crawl that fetched 10,000 pages, whose counters say `queued` and whose table holds
    `in_table` pending URLs; returns the answer and how many times the table was read."""
    settings = CrawlSettings(start_urls=("http://shop.example/",), progress_poll_s=1, max_pages=None)
    crawl = _Crawl(settings, started=1_000.0)
    crawl.record.counters.update({"n_fetched": 10_000, "n_discovered": 12_000, **queued})
    urls = _CountedPending(in_table)
    services = ProgressServices(
        crawls=cast(Any, crawl),
        urls=cast(Any, urls),
        robots=cast(Any, _NoRobotsTrouble()),
        clock=lambda: 1_400.0,
    )
    previous = {"state": "RUNNING", "counters": {"n_fetched": fetched_before}, "checked_at": 1_390.0}
    return asyncio.run(ProgressChecker(services).check("c1", previous)), urls.reads


def test_a_crawl_running_by_its_counters_is_not_read_from_the_table() -> None:
    """Queue counters above zero and pages fetched since the last check: running, without a partition read."""
    out, reads = _check_with_counters(
        {"q2": 1_500, "q3": 400, "qs": 100}, fetched_before=9_000, in_table=2_000
    )
    assert out["state"] == "RUNNING" and out["queued"] == 2_000
    assert reads == 0


def test_the_last_counted_urls_are_checked_when_they_should_be_done() -> None:
    out, reads = _check_with_counters({"q5": 30}, fetched_before=8_000, in_table=30)
    assert reads == 0 and out["state"] == "RUNNING"
    assert out["wait_seconds"] == 1  # 200 pages/s since the last check, 30 left
    # 1,000 queued at 200 pages/s: in 5 s, not at the grown wait (20 s at 400 s of age)
    out, reads = _check_with_counters({"q5": 1_000}, fetched_before=8_000, in_table=1_000)
    assert reads == 0 and out["wait_seconds"] == 5
    out, _ = _check_with_counters({"q5": 10_000}, fetched_before=8_000, in_table=10_000)
    assert out["wait_seconds"] == 20  # 50 s away: the grown wait


@pytest.mark.parametrize(
    ("queued", "fetched_before"),
    [
        ({"q2": 3}, 10_000),  # counters say queued, but nothing was fetched since the last check
        ({"q2": 0, "qs": 0}, 9_000),  # counters say nothing is queued
        ({"q2": 5, "qs": -5}, 9_000),  # off by a crashed flush: the sum is what counts
    ],
)
def test_only_a_read_of_the_table_calls_a_crawl_drained(queued: dict[str, int], fetched_before: int) -> None:
    out, reads = _check_with_counters(queued, fetched_before, in_table=0)
    assert reads == 1 and out["state"] == "DRAINED"
    out, reads = _check_with_counters(queued, fetched_before, in_table=4)
    assert reads == 1 and out["state"] == "RUNNING" and out["pending_sample"] == 4


@pytest.mark.parametrize(("in_table", "ahead"), [(4, ["c1"]), (0, [])])
def test_a_running_crawl_gets_the_reports_work_done_ahead_a_drained_one_does_not(
    in_table: int, ahead: list[str]
) -> None:
    settings = CrawlSettings(start_urls=("http://shop.example/",), progress_poll_s=1, max_pages=None)
    crawl = _Crawl(settings, started=1_000.0)
    reads: list[str] = []
    read = crawl.get

    async def counted_get(crawl_id: str) -> CrawlRecord:
        reads.append(crawl_id)
        return await read(crawl_id)

    crawl.get = counted_get  # type: ignore[method-assign]
    done: list[str] = []

    async def premap(record: CrawlRecord) -> None:
        done.append(record.crawl_id)

    services = ProgressServices(
        crawls=cast(Any, crawl),
        urls=cast(Any, _CountedPending(in_table)),
        robots=cast(Any, _NoRobotsTrouble()),
        clock=lambda: 1_400.0,
        premap=premap,
    )
    out = asyncio.run(ProgressChecker(services).check("c1"))
    assert out["state"] == ("RUNNING" if in_table else "DRAINED")
    assert done == ahead
    assert reads == ["c1"]  # the work ahead is given the record the check read: one read a check


def test_work_ahead_that_fails_leaves_the_check_answered(caplog: pytest.LogCaptureFixture) -> None:
    """The report does whatever the work ahead did not: a failure there never fails the monitor loop."""
    settings = CrawlSettings(start_urls=("http://shop.example/",), progress_poll_s=1, max_pages=None)

    async def premap(record: CrawlRecord) -> None:
        raise OSError("S3 unavailable")

    services = ProgressServices(
        crawls=cast(Any, _Crawl(settings, started=1_000.0)),
        urls=cast(Any, _CountedPending(4)),
        robots=cast(Any, _NoRobotsTrouble()),
        clock=lambda: 1_400.0,
        premap=premap,
    )
    assert asyncio.run(ProgressChecker(services).check("c1"))["state"] == "RUNNING"
    assert "work ahead of the report failed" in caplog.text


def test_the_first_check_reads_the_table() -> None:
    settings = CrawlSettings(start_urls=("http://shop.example/",), progress_poll_s=1, max_pages=None)
    crawl = _Crawl(settings, started=1_000.0)
    crawl.record.counters.update({"n_fetched": 10, "q1": 40})
    urls = _CountedPending(0)
    services = ProgressServices(
        crawls=cast(Any, crawl),
        urls=cast(Any, urls),
        robots=cast(Any, _NoRobotsTrouble()),
        clock=lambda: 1_400.0,
    )
    assert asyncio.run(ProgressChecker(services).check("c1"))["state"] == "DRAINED"
    assert urls.reads == 1


class _Journals:
    """A URLs table holding only open batch journals (and, with `url`, one queued URL)."""

    def __init__(self, parts: list[str], url: bool = False, bodiless: tuple[str, ...] = ()) -> None:
        self.parts, self.url, self.bodiless = list(parts), url, bodiless
        self.asked: list[tuple[str, str]] = []
        self.dropped: list[str] = []

    async def pending(
        self, crawl_id: str, limit: int = 1000, urls_hint: int = 0
    ) -> tuple[list[PendingUrl], bool]:
        rows = [PendingUrl("", JOURNAL_MARK + p, 0, "") for p in self.parts]
        if self.url:
            rows.append(PendingUrl("http://shop.example/a", "0a", 1, "http://shop.example"))
        return rows, False

    async def unpublished(self, parts: list[tuple[str, str]]) -> list[Journal]:
        self.asked += parts
        return [Journal.build(c, p, {"pages": []}) for c, p in parts if p not in self.bodiless]

    async def drop_journal(self, crawl_id: str, part: str) -> None:
        self.dropped.append(part)
        self.parts.remove(part)


def _check_journals(urls: _Journals, now: float) -> tuple[dict[str, Any], list[str]]:
    published: list[str] = []

    async def publish(journal: Journal) -> None:
        published.append(journal.part)
        urls.parts.remove(journal.part)  # its close deletes the marker

    settings = CrawlSettings(start_urls=("http://shop.example/",), progress_poll_s=1, max_pages=None)
    services = ProgressServices(
        crawls=cast(Any, _Crawl(settings, started=now - 600)),
        urls=cast(Any, urls),
        robots=cast(Any, _NoRobotsTrouble()),
        clock=lambda: now,
        publish_journal=publish,
    )
    return asyncio.run(ProgressChecker(services).check("c1")), published


def test_journals_left_open_with_nothing_else_pending_are_published_and_the_crawl_drains() -> None:
    """Seen in the crash e2e test: a journal whose URLs a later finish re-pointed stayed open for ever."""
    now = 2_000_000_000.0
    old = [f"{int((now - ORPHAN_JOURNAL_S - 5) * 1000):013d}-aaaa", f"{int((now - 900) * 1000):013d}-bbbb"]
    out, published = _check_journals(_Journals(old), now)
    assert published == old and out["state"] == "DRAINED"


def test_an_old_marker_whose_body_never_landed_is_dropped_and_the_crawl_drains() -> None:
    """A flush that died between its journal's two items left a marker alone: nothing to publish, and no URL
    points to it (the URLs are written after both); it must not hold the crawl for ever."""
    now = 2_000_000_000.0
    old = [f"{int((now - ORPHAN_JOURNAL_S - 5) * 1000):013d}-aaaa", f"{int((now - 900) * 1000):013d}-bbbb"]
    urls = _Journals(old, bodiless=(old[1],))
    out, published = _check_journals(urls, now)
    assert published == [old[0]] and urls.dropped == [old[1]] and out["state"] == "DRAINED"


@pytest.mark.parametrize(
    ("ages", "with_url"),
    [
        ([ORPHAN_JOURNAL_S + 5, 10.0], False),  # one may still be closed by its own batch
        ([ORPHAN_JOURNAL_S + 5], True),  # a URL is still pending: the crawl runs anyway
    ],
)
def test_young_journals_or_pending_urls_leave_journals_to_their_batches(
    ages: list[float], with_url: bool
) -> None:
    now = 2_000_000_000.0
    urls = _Journals([f"{int((now - age) * 1000):013d}-cccc{i}" for i, age in enumerate(ages)], url=with_url)
    out, published = _check_journals(urls, now)
    assert published == [] and urls.asked == [] and urls.dropped == [] and out["state"] == "RUNNING"


def test_a_journal_age_comes_from_its_part_id() -> None:
    assert journal_age_s(JOURNAL_MARK + "1796223886529-f15e43343eb3", 1796223896.529) == pytest.approx(10.0)
    assert journal_age_s(JOURNAL_MARK + "not-a-time", 0.0) is None


class _Listed:
    """The URLs table of a stopping crawl: `pending` answers what is listed, `status` is the crawl's."""

    def __init__(self, items: list[PendingUrl]) -> None:
        self.items = items

    async def pending(
        self, crawl_id: str, limit: int = 1000, urls_hint: int = 0, not_crawled: bool = False
    ) -> tuple[list[PendingUrl], bool]:
        return list(self.items), False

    async def unpublished(self, parts: Any) -> list[Journal]:
        return []


class _Stopping(_Crawl):
    def __init__(self, status: CrawlStatus, settings: CrawlSettings) -> None:
        super().__init__(settings, started=1_000.0)
        self.record = CrawlRecord("c1", status, settings, "shop.example", "", 1_000.0, {"n_fetched": 20})
        self.statuses: list[CrawlStatus] = []

    async def set_status(self, crawl_id: str, status: CrawlStatus, **_: Any) -> None:
        self.statuses.append(status)
        self.record = CrawlRecord(
            "c1", status, self.record.settings, "shop.example", "", 1_000.0, self.record.counters
        )


@pytest.mark.parametrize("status", [CrawlStatus.CANCELLED, CrawlStatus.RUNNING])
def test_a_stopping_crawl_is_reported_only_once_its_fetches_in_flight_are_done(status: CrawlStatus) -> None:
    """A cancel, or the page budget (20 of 20 fetched): while a fetch holds a live lease or a batch's journal
    is open, the check answers RUNNING (its report would miss those pages); then CANCELLED / BUDGET_REACHED."""
    settings = CrawlSettings(start_urls=("http://shop.example/",), progress_poll_s=2, max_pages=20)
    crawl = _Stopping(status, settings)
    queued = PendingUrl("http://shop.example/q", "k1", 1, "http://shop.example")
    leased = PendingUrl("http://shop.example/l", "k2", 1, "http://shop.example", leased_until=1_460.0)
    journal = PendingUrl("", JOURNAL_MARK + part_id(1_455.0), 0, "")
    urls = _Listed([queued, leased, journal])
    services = ProgressServices(
        crawls=cast(Any, crawl),
        urls=cast(Any, urls),
        robots=cast(Any, _NoRobotsTrouble()),
        clock=lambda: 1_456.0,
    )
    final = "CANCELLED" if status is CrawlStatus.CANCELLED else "BUDGET_REACHED"
    for listed in ([queued, leased, journal], [queued, leased], [queued]):
        urls.items = listed
        out = asyncio.run(ProgressChecker(services).check("c1"))
        settled = listed == [queued]
        assert (out["state"], out.get("settling")) == ((final, None) if settled else ("RUNNING", True))
        if not settled:
            assert out["wait_seconds"] == 2
    # The budget's FINISHING is set once, whatever the number of checks while its crawl settles.
    assert crawl.statuses == ([] if status is CrawlStatus.CANCELLED else [CrawlStatus.FINISHING])
