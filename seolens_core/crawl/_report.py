"""Post-crawl analysis and the outputs people open: pages.jsonl, links.jsonl, findings.csv, report.json.

Inlinks and click depths are computed from the link parts by a bounded map/reduce and a sharded
breadth-first search (_inlinks.py), driven by the state machine's Orphans loop and finished here if needed;
a sitemap URL with none from crawled HTML pages is an orphan.

Memory is bounded by one shard of pages (the inlink shards, ~4,000 pages each), not by the crawl. All
scratch objects live under `crawls/{id}/reportwork/{run}/` (`_Work`):

1. Spool: page rows (the inlink map's copies of the batch parts' rows, read through in a few large pieces,
   after any parts of one kind), pending URLs and dead letters (tagged with a global sequence number, the
   first-seen order) and sitemap URLs are appended to per-shard spools (`shard_of(url)`), written out
   whenever `SPOOL_BUFFER` bytes are buffered.
2. Per shard: dedupe by outcome rank (first seen wins a tie, pending only fills a gap, a dead letter wins),
   fold in the sitemap flag and lastmod, the shard's inlink counts and click depths, sort by
   (depth is None, depth, url) and write the shard's run; its orphans (sitemap URLs without inlinks) too.
3. A k-way merge of the runs (ranged GETs of `MERGE_BUFFER` bytes over all runs, at least `MERGE_READ` a
   run) gives the pages in pages.jsonl order: their own alerts become findings, `SiteAudit.add_page` sees
   them in order, and their title/description/hash are spooled by `shard_of(value)` for the duplicate
   rules.
4. Duplicates per value shard (`duplicate_groups`), merged across shards in group order; then the other
   page-level site rules, the link rules on the link rows the inlink map copied (a few large objects, read
   in `STREAM_READ` pieces that go to links.jsonl as they are), the orphans merged in URL order. Each site
   finding's (url, code) is spooled by URL shard.
5. Per shard: the site findings' codes are joined to their rows, then ALERT_NOT_IN_SITEMAP (its findings
   merged later in first-seen order); a last merge writes pages.jsonl and counts the summary.

Findings go to findings.csv as they come (`_FindingSink`: counts, the most severe `HTML_MAX_ROWS` for
report.html, a JSON copy for the comparison). The comparison with the previous crawl runs per URL shard
(`merge_comparisons`). What `SiteAudit` still holds grows with some pages, not all: 8 bytes per plain 2xx
page, a summary of each non-2xx/canonicalised/hreflang/WAF page, and the redirect, canonical and hreflang
pages for their rules (docs/PERFORMANCE.md "Report step memory").
"""

from __future__ import annotations

import asyncio
import csv
import heapq
import io
import json
import time
import uuid
from collections import Counter, deque
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

from seolens_core.adapters._gather import all_or_cancel, read_ahead
from seolens_core.adapters._json import dump_lines, dumps, lines_where, load_lines, loads
from seolens_core.adapters.crawls import PAGES_RESERVED, CrawlRecord, CrawlStatus, CrawlStore
from seolens_core.adapters.frontier_queue import FrontierQueue
from seolens_core.adapters.results import ResultsStore, StreamingUpload
from seolens_core.adapters.urls import JOURNAL_MARK, UrlStore
from seolens_core.audit import (
    DUPLICATE_KINDS,
    HREFLANG_PAIR_CODES,
    UNATTEMPTED_OUTCOMES,
    Finding,
    FindingCode,
    PageRow,
    SiteAudit,
    duplicate_findings,
    duplicate_groups,
    duplicate_values,
    indexability,
    make_finding,
    pair_lang,
)
from seolens_core.crawl._findings import ALERT_CRAWL_STOPPED, ALERT_SITEMAP_NOT_READ, describe
from seolens_core.crawl._inlinks import (
    DEFAULT_EDGE_BUDGET,
    InlinkCounter,
    rows_keys,
    shard_of,
    start_cursor,
)
from seolens_core.crawl._pacing import PacingGate
from seolens_core.crawl._pages import dead_letter_row
from seolens_core.frontier import FrontierMessage
from seolens_core.report_html import ttfb_histogram
from seolens_core.urls import NormalizedURL, normalize

_OUTCOME_RANK = {"fetched": 5, "error": 4, "disallowed": 3, "pruned": 2, "dead_letter": 1}
HTML_MAX_ROWS = 5_000  # pages and findings embedded in report.html (all rows are in the jsonl/csv files)
_CHUNK = 1 << 20  # serialized bytes handed to an upload at a time
SPOOL_BUFFER = 16 << 20  # bytes of spooled rows buffered (all shards together) before they are written out
MERGE_READ = 128 << 10  # the fewest bytes read at a time from each shard run during a k-way merge
# Bytes read at a time from all the runs of one merge together (when more than MERGE_READ a run).
MERGE_BUFFER = 32 << 20
# Bytes read at a time from one object read through (link rows, a previous crawl's files).
STREAM_READ = 8 << 20


@dataclass
class ReportServices:
    crawls: CrawlStore
    urls: UrlStore
    results: ResultsStore
    dead_letters: FrontierQueue | None
    pacing: PacingGate | None = None
    clock: Callable[[], float] = time.time
    inlink_shards: int = 1
    """The fewest inlink/depth shards; more are used as the crawl's size asks (`inlink_shards()`)."""
    inlink_edge_budget: int = DEFAULT_EDGE_BUDGET
    orphans_budget_s: float = 240.0  # work per Orphans invocation before handing back to the loop
    premap_budget_s: float = 3.0
    """Inlink map work per progress check while the crawl runs (`Reporter.premap`); 0 turns it off."""
    # Delete the scratch objects under crawls/{id}/reportwork/ at the end (the ReportRole grants s3:DeleteObject
    # there and only there).
    clean_work: bool = False
    extra_outputs: list[
        Callable[[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]]], dict[str, bytes]]
    ] = field(default_factory=list)


class Reporter:
    def __init__(self, services: ReportServices) -> None:
        self.s = services
        self.inlinks = InlinkCounter(services.results, edge_budget=services.inlink_edge_budget)

    async def run(self, crawl_id: str, action: str, error: Any = None) -> dict[str, Any]:
        s = self.s
        record = await s.crawls.get(crawl_id)
        if action == "orphans":
            cursor = await self._inlink_cursor(crawl_id, budget_s=s.orphans_budget_s, record=record)
            done = cursor["phase"] == "done"
            return {"crawl_id": crawl_id, "ok": True, "done": done, "phase": cursor["phase"]}
        final_status = {
            "fail": CrawlStatus.FAILED,
            "report": CrawlStatus.CANCELLED
            if record.status is CrawlStatus.CANCELLED
            else CrawlStatus.COMPLETED,
        }.get(action, CrawlStatus.COMPLETED)
        work = _Work(s.results, f"crawls/{crawl_id}/reportwork/{uuid.uuid4().hex[:12]}/")
        try:
            report = await self.build(record, work, error=error)
            report["status"] = final_status.value
            if final_status is CrawlStatus.COMPLETED:
                report["comparison"] = await self._compare_with_previous(record, work, report.pop("_shards"))
            keys = report.pop("_keys")
            report.pop("_shards", None)
            keys.update(await self.write_outputs(crawl_id, report))
        finally:
            if s.clean_work:
                await work.clean()
        if not record.status.terminal or record.status is not final_status:
            await s.crawls.set_status(
                crawl_id, final_status, now=s.clock(), error=_error_text(error) if action == "fail" else None
            )
        return {"crawl_id": crawl_id, "ok": action != "fail", "status": final_status.value, "outputs": keys}

    async def build(self, record: CrawlRecord, work: _Work, error: Any = None) -> dict[str, Any]:
        """Write links.jsonl, pages.jsonl and findings.csv; return the report dict plus `_keys` (those
        outputs), `_shown_pages`, `_shown_findings` and `_aggregates` (for report.html). Memory is bounded
        by one shard of pages, not by the crawl (module docstring)."""
        s = self.s
        crawl_id = record.crawl_id
        cursor = await self._inlink_cursor(crawl_id, budget_s=None, record=record)
        shards: int = cursor["shards"]
        keys: dict[str, str] = {}

        # 1. Spool page, pending and dead-letter rows, and sitemap URLs, by URL shard (seq = first-seen order).
        rows_spool = work.spool("rows")
        sitemap_spool = work.spool("sitemap")
        seq = 0
        timelines: dict[str, dict[float, dict[str, Any]]] = {}
        stopped = stop_reason(record, error)
        # The unfetched URLs before the page rows, and the rows of batches still publishing (a crawl that
        # stopped early is reported while its workers finish): a URL a late batch finishes meanwhile is read
        # twice (the page row wins), never missed.
        pending, more_pending = await s.urls.pending(
            crawl_id, limit=100_000, urls_hint=record.counters.get("n_discovered", 0), not_crawled=True
        )
        if stopped is None and any(p.outcome == "not_crawled_budget" for p in pending):
            stopped = "page budget"  # drained, but workers turned URLs away: the budget was all taken
        publishing = [
            (crawl_id, p.key[len(JOURNAL_MARK) :]) for p in pending if p.key.startswith(JOURNAL_MARK)
        ]
        for journal in await s.urls.unpublished(publishing) if publishing else ():
            for row in journal.body().get("pages", []):
                await rows_spool.add(shard_of(row["url"], shards), [seq, "p", row])
                seq += 1
        async for kind, row in self._page_and_pacing_rows(crawl_id, cursor):
            if kind == "pages":
                await rows_spool.add(shard_of(row["url"], shards), [seq, "p", row])
                seq += 1
            else:
                timelines.setdefault(row["origin"], {})[row["t"]] = {
                    k: row.get(k)
                    for k in ("t", "delay_ms", "concurrency", "error_rate", "n", "p95_ms", "verdict")
                }
        async for row in s.results.rows(crawl_id, "sitemap"):
            await sitemap_spool.add(
                shard_of(row["url"], shards), [row["url"], row.get("lastmod"), row.get("hreflang")]
            )
        await sitemap_spool.flush()
        seed_findings = [row async for row in s.results.rows(crawl_id, "seed")]
        n_pending = 0
        for p in pending:
            if p.key.startswith(JOURNAL_MARK):  # a batch still publishing: its URLs are done, no row of ours
                continue
            if p.outcome is None and stopped is None:  # the crawl drained: a URL its host held back
                row = {"url": p.url, "status": None, "depth": p.depth, "outcome": "pending"}
                row["alerts"] = ["ALERT_URL_PENDING"]
                n_pending += 1
            else:  # the crawl stopped before it got to this URL: listed, not a finding of its own
                row = {"url": p.url, "status": None, "depth": p.depth, "outcome": "not_crawled", "alerts": []}
            await rows_spool.add(shard_of(p.url, shards), [seq, "q", row])
            seq += 1
        del pending
        dead = await self._dead_letters(crawl_id)
        for msg in dead:
            await rows_spool.add(shard_of(msg.url, shards), [seq, "d", dead_letter_row(msg)])
            seq += 1
        del dead
        await rows_spool.flush()

        # Sitemaps the seeding never read (the crawl stopped first): a page may be listed in one of them.
        sitemaps_whole = not any(f.get("code") == ALERT_SITEMAP_NOT_READ for f in seed_findings)

        # 2. Per shard: dedupe, annotate (sitemap, inlinks, depth), sort by (depth, url); orphans of the shard.
        n_sitemap = 0
        for shard in range(shards):
            pages = await _dedupe(rows_spool.read(shard))
            sitemap: dict[str, Any] = {}
            sitemap_hreflang: dict[str, Any] = {}
            async for url, lastmod, *hreflang in sitemap_spool.read(shard):
                sitemap.setdefault(url, lastmod)
                if hreflang and hreflang[0]:
                    sitemap_hreflang.setdefault(url, hreflang[0])
            n_sitemap += len(sitemap)
            counts = await self.inlinks.shard_counts(crawl_id, shard)
            for url in sitemap:  # listed, never claimed (seeding stopped, or max_depth 0)
                if url not in pages:
                    pages[url] = (seq, {"url": url, "status": None, "outcome": "not_crawled", "alerts": []})
                    seq += 1
            for url, (_, row) in pages.items():
                row["is_sitemap_url"] = url in sitemap
                row["inlinks"] = counts.get(url, 0)
                if url in sitemap and row.get("lastmod") is None:
                    row["lastmod"] = sitemap[url]
                if url in sitemap_hreflang:
                    row["sitemap_hreflang"] = sitemap_hreflang[url]
            for _, row in pages.values():
                row["crawl_depth"] = row.get("depth")
                row["depth"] = None
                for key in ("status", "title", "alerts"):
                    row.setdefault(key, [] if key == "alerts" else None)
                row["indexability"], row["indexability_status"] = indexability(row)
            for url, depth in (await self.inlinks.depths(crawl_id, cursor, shard)).items():
                if url in pages:
                    pages[url][1]["depth"] = depth
            await work.put_run(
                "sorted", shard, sorted([*_sort_key(row), first, row] for first, row in pages.values())
            )
            # An orphan is a sitemap page the crawl fetched and no crawled page links to: known only when the
            # crawl drained (stopped early, the pages linking to it may never have been fetched).
            orphans = (
                []
                if stopped is not None
                else [
                    [u]
                    for u in sitemap
                    if counts.get(u, 0) == 0 and pages[u][1].get("outcome") not in UNATTEMPTED_OUTCOMES
                ]
            )
            await work.put_run("orphans", shard, sorted(orphans))
            del pages, sitemap, sitemap_hreflang, counts

        findings = _FindingSink(s.results.open_file(crawl_id, "findings.csv", "text/csv"), work)
        links_file: asyncio.Future[str] | None = None
        alerts_spool = work.spool("alerts")
        hreflang = _HreflangPairs()
        sitemap_non_indexable: dict[str, int] = {}
        try:
            # links.jsonl, assembled (mostly by S3, server side) while the report goes on: waited for at the
            # end, it was the report's last second or two.
            links_file = asyncio.ensure_future(self._links_file(crawl_id, cursor))
            # 3. Pages in (depth, url) order: page findings, then the site rules fed page by page.
            audit = SiteAudit((), count_links=False, duplicates=False, orphans=False)
            dups_spool = work.spool("dups")
            async for _, _, url, _, row in work.merge("sorted", 3):
                for f in _page_findings([row]):
                    await findings.add(f)
                page = PageRow.from_mapping(row)
                audit.add_page(page)
                for kind, value in duplicate_values(page):
                    await dups_spool.add(shard_of(value, shards), [kind, value, url])
            await dups_spool.flush()

            async def site_finding(finding: Finding) -> None:
                hreflang.add(finding)
                row = finding.to_row()
                await findings.add(row)
                await alerts_spool.add(shard_of(finding.url, shards), [finding.url, finding.code])

            # 4. Duplicates, by a second partition keyed by the shared value.
            for shard in range(shards):
                groups: dict[tuple[str, str], list[str]] = {}
                async for kind, value, url in dups_spool.read(shard):
                    groups.setdefault((kind, value), []).append(url)
                for kind, _, _ in DUPLICATE_KINDS:
                    runs = duplicate_groups(urls for (k, _), urls in groups.items() if k == kind)
                    await work.put_run(f"dup-{kind}", shard, [[urls] for urls in runs])
                del groups
            for kind, code, what in DUPLICATE_KINDS:
                async for (urls,) in work.merge(f"dup-{kind}"):
                    for finding in duplicate_findings([urls], code, what):
                        await site_finding(finding)
            for finding in audit.page_findings():
                await site_finding(finding)
            sitemap_non_indexable = dict(sorted(audit.sitemap_non_indexable.items()))

            # 5. Links: the link rules see the rows linking to a page that can make a finding (a redirect hop
            # is not a link on a page: chains come from the pages' redirect_to). Only those rows are decoded
            # (most links go to 2xx pages); with no such page, none is read and the map steps' count stands.
            targets = {dumps(url)[1:-1] for url in audit.link_targets()}
            if targets:
                await self._link_rules(crawl_id, cursor, targets, audit, site_finding)
            del audit
            async for (url,) in work.merge("orphans"):
                await site_finding(
                    make_finding(FindingCode.GRAPH_ORPHAN_PAGE, url, "in sitemap, 0 internal inlinks")
                )
            await alerts_spool.flush()

            # 6. Per shard: the site findings' codes joined to their pages, then ALERT_NOT_IN_SITEMAP.
            for shard in range(shards):
                joined: dict[str, list[str]] = {}
                async for url, code in alerts_spool.read(shard):
                    joined.setdefault(url, []).append(code)
                final: list[list[Any]] = []
                not_in_sitemap: list[list[Any]] = []
                for depth_none, depth, url, first, row in await work.read_run("sorted", shard):
                    for code in joined.get(url, ()):
                        if code not in row["alerts"]:
                            row["alerts"].append(code)
                    if sitemaps_whole and n_sitemap and _not_in_sitemap(row):
                        row["alerts"].append("ALERT_NOT_IN_SITEMAP")
                        not_in_sitemap.append([first, url])
                    final.append([depth_none, depth, url, row])
                await work.put_run("final", shard, final)
                await work.put_run("nis", shard, sorted(not_in_sitemap))
                del joined, final, not_in_sitemap

            # 7. pages.jsonl by a k-way merge of the shard runs, with the summary counted on the way.
            stats = _PageStats()
            pages_out = s.results.open_file(crawl_id, "pages.jsonl", "application/x-ndjson")
            try:
                buf: list[bytes] = []
                size = 0
                async for _, _, _, row in work.merge("final", 3):
                    stats.add(row)
                    line = dumps(row, default=str) + b"\n"
                    buf.append(line)
                    size += len(line)
                    if size >= _CHUNK:
                        await pages_out.write(b"".join(buf))
                        buf, size = [], 0
                if buf:
                    await pages_out.write(b"".join(buf))
                del buf
                keys["pages.jsonl"] = await pages_out.close()
            except BaseException:
                await pages_out.abort()
                raise
            async for _, url in work.merge("nis"):
                await findings.add(
                    {
                        "code": "ALERT_NOT_IN_SITEMAP",
                        "severity": describe("ALERT_NOT_IN_SITEMAP")[0],
                        "url": url,
                        "detail": "indexable page linked from the site but missing from its sitemaps",
                    }
                )
            for f in seed_findings:
                severity, title = describe(f["code"])
                await findings.add({**f, "severity": severity, "detail": f.get("detail") or title})
            if stopped is not None:
                await findings.add(
                    _stopped_finding(record, stopped, stats.by_outcome.get("not_crawled", 0), sitemaps_whole)
                )
            keys["findings.csv"] = await findings.close()
            keys["links.jsonl"] = await links_file
        except BaseException:
            await findings.abort()
            raise
        finally:
            if links_file is not None and not links_file.done():  # the report failed: the upload goes too
                links_file.cancel()
                await asyncio.gather(links_file, return_exceptions=True)
        report = {
            "crawl_id": crawl_id,
            "site": record.site,
            "settings": record.public_settings(),
            "created_at": record.created_at,
            "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(s.clock())),
            "duration_s": round(s.clock() - record.started_epoch, 1),
            "summary": {
                "urls": stats.urls,
                "fetched": stats.fetched,
                "by_outcome": dict(stats.by_outcome),
                "by_status": {str(k): v for k, v in stats.by_status.items()},
                "by_depth": {str(k): v for k, v in stats.by_depth.items()},
                "by_indexability": dict(sorted(stats.by_indexability.items())),
                "by_redirect_type": dict(sorted(stats.by_redirect_type.items())),
                "links": int(cursor["links"]),
                "sitemap_urls": n_sitemap,
                "sitemap_non_indexable": sitemap_non_indexable,
                "pending": n_pending,
                "pending_truncated": more_pending,
                "stopped": stopped,
                "not_crawled": stats.by_outcome.get("not_crawled", 0),
                "orphans_assessed": stopped is None,
                "not_in_sitemap_assessed": sitemaps_whole,
                # URLs finished by the dead-letter drain and messages still waiting in the queue, once each
                "dead_letters": stats.by_outcome.get("dead_letter", 0),
            },
            "counters": record.counters,
            "host_timelines": {
                origin: [points[t] for t in sorted(points)] for origin, points in sorted(timelines.items())
            },
            "findings_by_code": dict(sorted(findings.by_code.items())),
            "hreflang_matrix": hreflang.view(),
            "error": _error_text(error),
        }
        report["_keys"] = keys
        report["_shards"] = shards
        report["_shown_pages"] = stats.shown
        report["_shown_findings"] = findings.top()
        report["_aggregates"] = {
            "pages_total": stats.urls,
            "findings_total": findings.total,
            "ttfb_histogram": stats.ttfb_histogram(),
            "findings_by_severity": dict(findings.by_severity),
        }
        return report

    async def write_outputs(self, crawl_id: str, report: dict[str, Any]) -> dict[str, str]:
        """report.json and the extra outputs (report.html: at most `HTML_MAX_ROWS` pages and findings)."""
        shown_rows = report.pop("_shown_pages")
        shown_findings = report.pop("_shown_findings")
        aggregates = report.pop("_aggregates")
        keys: dict[str, str] = {}
        keys["report.json"] = await self.s.results.put_file(
            crawl_id, "report.json", json.dumps(report, indent=2, default=str).encode(), "application/json"
        )
        if self.s.extra_outputs:
            html_report = {**report, "aggregates": aggregates}
            for extra in self.s.extra_outputs:
                for name, body in extra(html_report, shown_rows, shown_findings).items():
                    ctype = "text/html" if name.endswith(".html") else "application/octet-stream"
                    keys[name] = await self.s.results.put_file(crawl_id, name, body, ctype)
        return keys

    async def _compare_with_previous(
        self, record: CrawlRecord, work: _Work, shards: int
    ) -> dict[str, Any] | None:
        """New and fixed findings and status changes since the last completed crawl of the same site, one
        URL shard at a time: both crawls' pages (as url, status, outcome) and findings are spooled by
        `shard_of(url)`, compared per shard, and the sorted results merged (`merge_comparisons`)."""
        previous = await self.s.crawls.previous_of_site(record.site, record.created_at)
        if previous is None:
            return None
        from seolens_core.control._compare import (  # control imports the composition root
            compare_crawls,
            merge_comparisons,
        )

        base = f"crawls/{previous.crawl_id}/report/"
        results = self.s.results
        spool = work.spool("compare")
        try:
            async for line in _lines(results, base + "pages.jsonl"):
                await _spool_page(spool, shards, 0, loads(line))
            async for row in _csv_rows(results, base + "findings.csv"):
                await spool.add(shard_of(str(row.get("url", "")), shards), [1, row])
        except Exception:  # the previous crawl's outputs expired or were never written
            return {"previous_crawl_id": previous.crawl_id, "error": "previous outputs not available"}
        async for line in _lines(results, f"crawls/{record.crawl_id}/report/pages.jsonl"):
            await _spool_page(spool, shards, 2, loads(line))
        async for line in _lines(results, work.findings_key):
            finding = loads(line)
            await spool.add(shard_of(str(finding.get("url", "")), shards), [3, finding])
        await spool.flush()
        parts = []
        for shard in range(shards):
            lists: tuple[list[Any], ...] = ([], [], [], [])
            async for which, item in spool.read(shard):
                lists[which].append(item)
            parts.append(compare_crawls(*lists))
        return {"previous_crawl_id": previous.crawl_id, **merge_comparisons(parts)}

    async def premap(self, record: CrawlRecord) -> None:
        """While the crawl runs (`record`, as the progress check read it), map the link parts written so far
        (bounded by `premap_budget_s`): the Orphans step after the crawl then maps only the rest. Sharded by
        the URLs discovered so far; a crawl that finishes larger than that is mapped again from the start
        (`_inlink_cursor`)."""
        if self.s.premap_budget_s <= 0 or record.status is not CrawlStatus.RUNNING:
            return
        crawl_id = record.crawl_id
        cursor = await self.inlinks.load(crawl_id) or start_cursor(
            inlink_shards(self.s.inlink_shards, record.counters.get("n_discovered", 0))
        )
        if cursor["phase"] == "map":
            await self.inlinks.premap(crawl_id, cursor, budget_s=self.s.premap_budget_s, clock=self.s.clock)

    async def _inlink_cursor(
        self, crawl_id: str, budget_s: float | None, record: CrawlRecord
    ) -> dict[str, Any]:
        """Resume the inlink map/reduce and depth search from the checkpoint; to the end when `budget_s` is None.
        A checkpoint premapped with fewer shards than the finished crawl needs is started over (the objects it
        left hold true edges only, so a union with them stays exact)."""
        shards = inlink_shards(self.s.inlink_shards, _urls_finished(record))
        cursor = await self.inlinks.load(crawl_id)
        premapped = cursor is not None and cursor.get("premapped_to") is not None
        if cursor is None or (
            premapped and cursor["phase"] in ("map", "sweep") and cursor["shards"] < shards
        ):
            cursor = start_cursor(shards)
        return await self.inlinks.run(
            crawl_id, cursor, budget_s=budget_s, clock=self.s.clock, starts=_start_urls(record)
        )

    async def _links_file(self, crawl_id: str, cursor: dict[str, Any]) -> str:
        """links.jsonl from the map steps' copies of the link rows, in order: each copied by S3 where it is at
        least a part's minimum, written through otherwise. Its key."""
        results = self.s.results
        out = results.open_file(crawl_id, "links.jsonl", "application/x-ndjson")
        try:
            for key in rows_keys(crawl_id, "links", cursor):
                size = await results.size(key)
                if await out.copy(key, size):
                    continue
                async for block in _blocks(results, key, size, STREAM_READ, ahead=1):
                    await out.write(block)
            return await out.close()
        except BaseException:
            await out.abort()
            raise

    async def _link_rules(
        self,
        crawl_id: str,
        cursor: dict[str, Any],
        targets: set[bytes],
        audit: SiteAudit,
        site_finding: Callable[[Finding], Awaitable[None]],
    ) -> None:
        """The link rules over the rows linking to `targets` (step 5 of `build`)."""
        results = self.s.results
        for key in rows_keys(crawl_id, "links", cursor):
            async for block in _blocks(results, key, await results.size(key), STREAM_READ, ahead=1):
                links = (loads(line) for line in lines_where(block, "target", targets))
                for link_finding in audit.link_rows(link for link in links if not link.get("redirect")):
                    await site_finding(link_finding)

    async def _page_and_pacing_rows(
        self, crawl_id: str, cursor: dict[str, Any]
    ) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        """(kind, row) of every page and pacing row: those of parts of one kind (written before batch parts),
        then the copies the inlink map made of the batch parts' rows (a few large objects)."""
        async for kind, row in self.s.results.rows_of(crawl_id, ("pages", "pacing"), batch_parts=False):
            yield kind, row
        for kind in ("pages", "pacing"):
            async for block in _read_through(self.s.results, rows_keys(crawl_id, kind, cursor)):
                for row in load_lines(block):
                    yield kind, row

    async def _dead_letters(self, crawl_id: str) -> list[FrontierMessage]:
        """Peek at the dead-letter queue for this crawl's URLs (left in place for the redrive command)."""
        dlq = self.s.dead_letters
        if dlq is None:
            return []
        found: dict[str, FrontierMessage] = {}
        for message in await dlq.peek(max_messages=1000):
            try:
                msg = FrontierMessage.from_json(message)
            except ValueError:
                continue
            if msg.crawl_id == crawl_id:
                found[msg.key] = msg
        return list(found.values())


class _Spool:
    """JSON items appended by shard and written to `{prefix}{shard:04d}/{flush:06d}.jsonl` whenever
    `SPOOL_BUFFER` bytes are buffered; `read(shard)` gives a shard's items back in the order they were added,
    from the objects this spool wrote (a report run's own prefix: nothing else writes there, so no listing)."""

    def __init__(self, results: ResultsStore, prefix: str) -> None:
        self._results = results
        self._prefix = prefix
        # Lines are copied into one buffer per shard: a list of `dumps` results held ~4 KB a line whatever its
        # length (orjson 3.13 returns its output buffer; a 100-byte line costs 40x, and the 100,000-page report
        # peaked at ~1 GB holding 16 MB of spooled lines).
        self._buffer: dict[int, bytearray] = {}
        self._size = 0
        self._flushes = 0
        self._written: dict[int, list[str]] = {}

    async def add(self, shard: int, item: Any) -> None:
        line = dumps(item)
        buffer = self._buffer.get(shard)
        if buffer is None:
            buffer = self._buffer[shard] = bytearray()
        buffer += line
        buffer += b"\n"
        self._size += len(line) + 1
        if self._size >= SPOOL_BUFFER:
            await self.flush()

    async def flush(self) -> None:
        """Write every shard's buffer, the writes at once (each buffer is freed as its bytes are made)."""
        shards = sorted(self._buffer)
        bodies = [
            (f"{self._prefix}{shard:04d}/{self._flushes:06d}.jsonl", bytes(self._buffer.pop(shard)))
            for shard in shards
        ]
        await all_or_cancel(
            *(self._results.put_object(key, body, "application/x-ndjson") for key, body in bodies)
        )
        for shard, (key, _) in zip(shards, bodies, strict=True):
            self._written.setdefault(shard, []).append(key)
        self._size = 0
        self._flushes += 1

    async def read(self, shard: int) -> AsyncIterator[Any]:
        for key in self._written.get(shard, ()):
            raw = await self._results.get_object(key) or b""
            for item in load_lines(raw):
                yield item


async def _blocks(
    results: ResultsStore, key: str, size: int, read_size: int, ahead: int = 0
) -> AsyncIterator[bytes]:
    """The object's bytes, read `read_size` at a time (ranged GETs, `ahead` more in flight while a block is
    used), cut after the last newline of each read (the rest goes with the next one); the last block ends
    where the object does."""
    rest = b""

    def read(pos: int) -> Awaitable[bytes]:
        return results.get_range(key, pos, read_size)

    async with aclosing(read_ahead(range(0, size, read_size), read, ahead + 1)) as reads:
        async for pos, chunk in reads:
            data = rest + chunk
            cut = len(data) if pos + read_size >= size else data.rfind(b"\n") + 1
            rest = data[cut:]
            if cut:
                yield data[:cut]


class _RangeReader:
    """The lines of one object, read `read_size` bytes at a time (ranged GETs)."""

    def __init__(self, results: ResultsStore, key: str, size: int, read_size: int) -> None:
        self._blocks = _blocks(results, key, size, read_size)
        self._lines: deque[str] = deque()

    async def next(self) -> str | None:
        while not self._lines:
            block = await anext(self._blocks, None)
            if block is None:
                return None
            text = block.decode("utf-8")
            self._lines.extend((text[:-1] if text.endswith("\n") else text).split("\n"))
        return self._lines.popleft()


async def _read_through(results: ResultsStore, keys: Iterable[str]) -> AsyncIterator[bytes]:
    """The bytes of each object in turn, `STREAM_READ` at a time, each block ending at a line's end."""
    for key in keys:
        async for block in _blocks(results, key, await results.size(key), STREAM_READ, ahead=1):
            yield block


async def _lines(results: ResultsStore, key: str, keep_empty: bool = False) -> AsyncIterator[str]:
    """The lines of an object (without their newline; empty ones skipped unless `keep_empty`), read in
    bounded pieces."""
    size = await results.size(key)
    reader = _RangeReader(results, key, size, STREAM_READ)
    while (line := await reader.next()) is not None:
        if line or keep_empty:
            yield line


class _LineFeed:
    """A resumable line iterator for `csv`: it stops when empty and goes on once refilled."""

    def __init__(self) -> None:
        self.lines: deque[str] = deque()

    def __iter__(self) -> _LineFeed:
        return self

    def __next__(self) -> str:
        if self.lines:
            return self.lines.popleft()
        raise StopIteration


async def _csv_rows(results: ResultsStore, key: str, lookahead: int = 1_000) -> AsyncIterator[dict[str, str]]:
    """The rows of a CSV object as `csv.DictReader` reads the whole text, holding about `lookahead` lines
    (a quoted field may span lines: the reader is only asked for a row once that many are buffered)."""
    feed = _LineFeed()
    reader = csv.DictReader(feed)
    source = _lines(results, key, keep_empty=True)
    exhausted = False
    while True:
        while not exhausted and len(feed.lines) < lookahead:
            try:
                feed.lines.append(await anext(source) + "\n")
            except StopAsyncIteration:
                exhausted = True
        try:
            yield next(reader)
        except StopIteration:
            if exhausted:
                return


async def _spool_page(spool: _Spool, shards: int, which: int, row: dict[str, Any]) -> None:
    if row.get("url"):
        url = str(row["url"])
        await spool.add(shard_of(url, shards), [which, {**_slim(row), "url": url}])


class _Work:
    """The report step's scratch objects under `crawls/{id}/reportwork/{run}/`: spools, and sorted runs
    (one per shard and name) that `merge` reads back together in order, holding `MERGE_BUFFER` bytes over all
    runs (`MERGE_READ` a run at least)."""

    def __init__(self, results: ResultsStore, prefix: str) -> None:
        self._results = results
        self.prefix = prefix
        self._runs: dict[str, dict[int, int]] = {}  # name -> shard -> size in bytes
        self.findings_key = f"{prefix}findings.jsonl"

    def spool(self, name: str) -> _Spool:
        return _Spool(self._results, f"{self.prefix}spool/{name}/")

    def _run_key(self, name: str, shard: int) -> str:
        return f"{self.prefix}run/{name}/{shard:04d}.jsonl"

    async def put_run(self, name: str, shard: int, items: list[Any]) -> None:
        """One shard's items, already sorted by their leading elements (the merge key)."""
        runs = self._runs.setdefault(name, {})
        if not items:
            runs.pop(shard, None)
            return
        body = dump_lines(items)
        await self._results.put_object(self._run_key(name, shard), body, "application/x-ndjson")
        runs[shard] = len(body)

    async def read_run(self, name: str, shard: int) -> list[Any]:
        if shard not in self._runs.get(name, {}):
            return []
        raw = await self._results.get_object(self._run_key(name, shard)) or b""
        return load_lines(raw)

    async def merge(self, name: str, key_len: int = 1) -> AsyncIterator[Any]:
        """Every item of the runs of `name`, in order of their first `key_len` elements (a k-way merge)."""
        runs = sorted(self._runs.get(name, {}).items())
        read_size = max(MERGE_READ, min(STREAM_READ, MERGE_BUFFER // max(len(runs), 1)))
        readers = [
            _RangeReader(self._results, self._run_key(name, shard), size, read_size) for shard, size in runs
        ]
        heap: list[tuple[list[Any], int, Any]] = []
        for i, reader in enumerate(readers):
            line = await reader.next()
            if line is not None:
                item = loads(line)
                heap.append((item[:key_len], i, item))
        heapq.heapify(heap)
        while heap:
            _, i, item = heap[0]
            yield item
            line = await readers[i].next()
            if line is None:
                heapq.heappop(heap)
            else:
                nxt = loads(line)
                heapq.heapreplace(heap, (nxt[:key_len], i, nxt))

    async def clean(self) -> None:
        """Delete the scratch objects (best effort: a lifecycle rule on `reportwork/` is the backstop)."""
        try:
            keys = await self._results.list_keys(self.prefix)
            await self._results.delete_keys(keys)
        except Exception:  # never fail a report over its scratch files
            pass


async def _dedupe(items: AsyncIterator[Any]) -> dict[str, tuple[int, dict[str, Any]]]:
    """One shard's rows by URL, with the seq of the URL's first row: a page row replaces the kept one only
    with a higher outcome rank (first seen wins a tie), a pending row only fills a gap, a dead letter wins."""
    pages: dict[str, tuple[int, dict[str, Any]]] = {}
    async for seq, kind, row in items:
        url = row["url"]
        current = pages.get(url)
        if current is None:
            pages[url] = (seq, row)
        elif kind == "d" or (
            kind == "p"
            and _OUTCOME_RANK.get(row.get("outcome", ""), 0)
            > _OUTCOME_RANK.get(current[1].get("outcome", ""), 0)
        ):
            pages[url] = (current[0], row)
    return pages


def _sort_key(row: dict[str, Any]) -> list[Any]:
    """pages.jsonl order: depth (unreached last), then URL."""
    return [row["depth"] is None, row["depth"] or 0, row["url"]]


def stop_reason(record: CrawlRecord, error: Any = None) -> str | None:
    """Why the crawl ended before it drained ("page budget", "time budget", "cancelled", "failed"), or None."""
    if error is not None:
        return "failed"
    if record.status is CrawlStatus.CANCELLED:
        return "cancelled"
    if record.status is CrawlStatus.FINISHING:
        return record.budget_spent() or "time budget"
    return None


def _stopped_finding(
    record: CrawlRecord, stopped: str, not_crawled: int, sitemaps_whole: bool
) -> dict[str, Any]:
    """The one finding of a crawl that ended early: what it did not do, instead of a finding per URL left."""
    detail = (
        f"the crawl ended early ({stopped}): {not_crawled} URLs discovered but not crawled"
        " (outcome not_crawled in pages.jsonl); orphan pages not assessed"
    )
    if not sitemaps_whole:
        detail += "; some sitemaps not read, so pages missing from the sitemaps not assessed"
    severity, _ = describe(ALERT_CRAWL_STOPPED)
    return {"code": ALERT_CRAWL_STOPPED, "severity": severity, "url": record.site, "detail": detail}


def _not_in_sitemap(row: dict[str, Any]) -> bool:
    url = row["url"]
    return (
        not row.get("is_sitemap_url")
        and row.get("status") == 200
        and row.get("outcome") == "fetched"
        and bool(row.get("internal", True))
        and bool(row.get("is_html"))
        and not row.get("noindex")
        and not row.get("waf_provider")
        and row.get("canonical") in (None, url)
        and row.get("indexability") in (None, "indexable")  # e.g. an instant meta refresh is a redirect
    )


def _slim(row: dict[str, Any]) -> dict[str, Any]:
    """What the comparison reads of a page row."""
    return {"url": row.get("url"), "status": row.get("status"), "outcome": row.get("outcome")}


class _PageStats:
    """report.json's page summary and report.html's page aggregates, counted in pages.jsonl order."""

    def __init__(self) -> None:
        self.urls = 0
        self.fetched = 0
        self.by_outcome: Counter[Any] = Counter()
        self.by_status: Counter[Any] = Counter()
        self.by_depth: Counter[Any] = Counter()
        self.by_indexability: Counter[str] = Counter()
        self.by_redirect_type: Counter[str] = Counter()
        self.shown: list[dict[str, Any]] = []
        self._ttfb: list[float] = []
        self._histogram: list[int] | None = None
        self._labels: list[str] = []

    def add(self, row: dict[str, Any]) -> None:
        self.urls += 1
        self.fetched += row.get("outcome") == "fetched"
        self.by_outcome[row.get("outcome", "?")] += 1
        self.by_status[row.get("status")] += 1
        self.by_depth[row["depth"]] += 1
        if row.get("indexability") is not None:
            self.by_indexability[row.get("indexability_status") or str(row["indexability"])] += 1
        if row.get("redirect_type"):
            self.by_redirect_type[str(row["redirect_type"])] += 1
        if len(self.shown) < HTML_MAX_ROWS:
            self.shown.append(row)
        ttfb = row.get("ttfb_ms")
        if isinstance(ttfb, (int, float)) and not isinstance(ttfb, bool):
            self._ttfb.append(ttfb)
            if len(self._ttfb) >= 10_000:
                self._fold()

    def _fold(self) -> None:
        buckets = ttfb_histogram(self._ttfb)
        self._ttfb.clear()
        self._labels = [label for label, _ in buckets]
        counts = [n for _, n in buckets]
        self._histogram = (
            counts
            if self._histogram is None
            else [a + b for a, b in zip(self._histogram, counts, strict=True)]
        )

    def ttfb_histogram(self) -> list[tuple[str, int]]:
        self._fold()
        return list(zip(self._labels, self._histogram or [], strict=True))


HREFLANG_MAX_PAIRS = 1_000  # broken hreflang pairs listed in report.json (all are in findings.csv)


class _HreflangPairs:
    """The broken hreflang pairs (no return link, alternate non-200 or non-canonical) for report.json's matrix:
    counted, the first `HREFLANG_MAX_PAIRS` kept as [url, hreflang, alternate, code]."""

    def __init__(self) -> None:
        self.total = 0
        self.pairs: list[list[str | None]] = []

    def add(self, finding: Finding) -> None:
        if finding.code in HREFLANG_PAIR_CODES:
            self.total += 1
            if len(self.pairs) < HREFLANG_MAX_PAIRS:
                self.pairs.append([finding.url, pair_lang(finding), finding.related_url, finding.code])

    def view(self) -> dict[str, Any]:
        return {"broken_pairs": self.total, "pairs": self.pairs, "truncated": self.total > len(self.pairs)}


class _FindingSink:
    """findings.csv written as findings come, in order; counted by code and severity; the most severe
    `HTML_MAX_ROWS` kept for report.html; each finding also goes to a work file for the comparison."""

    def __init__(self, out: StreamingUpload, work: _Work) -> None:
        self._out = out
        self._json = work._results.open_object(work.findings_key, "application/x-ndjson")
        self._buf = io.StringIO()
        self._jbuf: list[bytes] = []
        self._writer = csv.DictWriter(
            self._buf, fieldnames=["code", "severity", "url", "detail", "related_url"], extrasaction="ignore"
        )
        self._writer.writeheader()
        self.total = 0
        self.by_code: Counter[Any] = Counter()
        self.by_severity: Counter[str] = Counter()
        self._top: list[tuple[int, int, dict[str, Any]]] = []  # (-severity rank, -seq, finding): a max-heap

    async def add(self, finding: dict[str, Any]) -> None:
        self._writer.writerow(finding)
        self._jbuf.append(dumps(finding, default=str) + b"\n")
        self.by_code[finding["code"]] += 1
        self.by_severity[str(finding.get("severity"))] += 1
        entry = (-_SEVERITY_ORDER.get(str(finding.get("severity")), 4), -self.total, finding)
        self.total += 1
        if len(self._top) < HTML_MAX_ROWS:
            heapq.heappush(self._top, entry)
        elif entry[:2] > self._top[0][:2]:
            heapq.heapreplace(self._top, entry)
        if self._buf.tell() >= _CHUNK:
            await self._flush()

    async def _flush(self) -> None:
        await self._out.write(self._buf.getvalue().encode())
        self._buf.seek(0)
        self._buf.truncate()
        await self._json.write(b"".join(self._jbuf))
        self._jbuf.clear()

    def top(self) -> list[dict[str, Any]]:
        """`_top_findings` of everything added: all in order when they fit, else the most severe."""
        if self.total <= HTML_MAX_ROWS:
            return [f for _, _, f in sorted(self._top, key=lambda e: -e[1])]
        return [f for _, _, f in sorted(self._top, key=lambda e: (-e[0], -e[1]))]

    async def close(self) -> str:
        await self._flush()
        await self._json.close()
        return await self._out.close()

    async def abort(self) -> None:
        await self._out.abort()
        await self._json.abort()


def count_inlinks(links: Iterable[dict[str, Any]]) -> Counter[str]:
    """Unique internal inlinks per URL. Edges are written only by fetched pages (links of 2xx HTML pages,
    redirect hops of 3xx answers), so every source counts; a page linking twice counts once, itself never."""
    pairs = {
        (link["source"], link["target"])
        for link in links
        if link.get("internal") and link["source"] != link["target"]
    }
    return Counter(target for _, target in pairs)


PAGES_PER_INLINK_SHARD = 4_000  # ~160k edges at 40 links a page: one reduce or depth step stays small


def inlink_shards(minimum: int, urls: int) -> int:
    """Shards of the inlink map/reduce and depth search for a crawl that finished `urls` URLs (the Orphans step
    starts once the crawl is drained, so the size is known): `minimum` doubled until a shard holds about
    `PAGES_PER_INLINK_SHARD` URLs (1 shard up to 4k, 256 for 1M), at most 1024. A small crawl pays a handful
    of S3 calls for its inlinks and depths, not a fixed 16 shards' worth."""
    wanted = -(-max(urls, 0) // PAGES_PER_INLINK_SHARD)
    shards = max(1, minimum)
    while shards < min(wanted, 1024):
        shards *= 2
    return shards


def _urls_finished(record: CrawlRecord) -> int:
    """URLs the crawl finished, whatever their outcome (its per-outcome counters)."""
    return sum(v for k, v in record.counters.items() if k.startswith("n_") and k not in _NOT_URL_COUNTERS)


_NOT_URL_COUNTERS = frozenset(
    {"n_discovered", "n_duplicates", "n_deferred", "n_retried", "n_bfs_held", PAGES_RESERVED}
)
"""Counters of deliveries, not of URLs (a URL deferred three times is still one URL), of discoveries (a
discovered URL is counted again by its outcome), and of page-budget units (each fetched page holds one)."""


def _start_urls(record: CrawlRecord) -> list[str]:
    """The normalized start URLs: depth 0 of the click-depth search."""
    return [u.url for u in (normalize(s) for s in record.settings.start_urls) if isinstance(u, NormalizedURL)]


_SEVERITY_ORDER = {"critical": 0, "warning": 1, "notice": 2, "info": 3}


def _top_findings(findings: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """At most `limit` findings for report.html, the most severe first (stable within a severity)."""
    if len(findings) <= limit:
        return findings
    return sorted(findings, key=lambda f: _SEVERITY_ORDER.get(str(f.get("severity")), 4))[:limit]


def _page_findings(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for row in rows:
        details = row.get("alert_details") or {}
        for code in row.get("alerts") or []:
            severity, title = describe(code)
            detail = details.get(code) or row.get("alert_detail") or title
            out.append({"code": code, "severity": severity, "url": row["url"], "detail": detail})
    return out


def _error_text(error: Any) -> str | None:
    if error is None:
        return None
    if isinstance(error, dict):
        return f"{error.get('Error', 'Error')}: {str(error.get('Cause', ''))[:1000]}"
    return str(error)[:1000]
