"""Post-crawl analysis and the outputs people open: pages.jsonl, links.jsonl, findings.csv, report.json.

Inlinks and click depths are computed from the link parts by a bounded map/reduce and a sharded
breadth-first search (_inlinks.py), driven by the state machine's Orphans loop and finished here if needed;
a sitemap URL with none from crawled HTML pages is an orphan.

Memory: the link rows are never held. links.jsonl is copied part by part into a multipart upload while the
same stream feeds the link rules (`SiteAudit.link`); depths are read one shard at a time. Every output is
written through `ResultsStore.open_file` in bounded pieces, and report.html gets at most `HTML_MAX_ROWS`
pages and findings plus aggregated charts. Still O(pages) (~4 KB per page, docs/PERFORMANCE.md "Report step
memory"): the deduplicated page rows, their site-rule summaries, the findings and the comparison with the
previous crawl.

Next step (not built): spool page, pending, dead-letter and sitemap rows to S3 by `shard_of(url)` with the
inlink shards (sized to ~4,000 pages each, so a shard's counts and depth files line up); dedupe by outcome
rank (first seen wins a tie, pending only when absent, dead letters override) and annotate one shard at a
time; write each shard sorted by (depth, url); then a k-way merge of the shard files (ranged GETs, bounded
buffers) feeds SiteAudit and the page findings in global order, and a second merge writes pages.jsonl with the
site findings' alerts joined per shard. ALERT_NOT_IN_SITEMAP keeps the first-seen order of its URLs (the
pages dict's insertion order today).
"""

from __future__ import annotations

import csv
import io
import json
import time
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from seolens_core.adapters.crawls import CrawlRecord, CrawlStatus, CrawlStore
from seolens_core.adapters.frontier_queue import FrontierQueue
from seolens_core.adapters.results import ResultsStore, StreamingUpload
from seolens_core.adapters.urls import UrlStore
from seolens_core.audit import LinkRow, PageRow, SiteAudit
from seolens_core.crawl._findings import describe
from seolens_core.crawl._inlinks import (
    DEFAULT_EDGE_BUDGET,
    DEFAULT_SHARDS,
    Cursor,
    InlinkCounter,
    start_cursor,
)
from seolens_core.crawl._pacing import PacingGate
from seolens_core.frontier import FrontierMessage
from seolens_core.report_html import ttfb_histogram
from seolens_core.urls import NormalizedURL, normalize

_OUTCOME_RANK = {"fetched": 5, "error": 4, "disallowed": 3, "pruned": 2}
HTML_MAX_ROWS = 5_000  # pages and findings embedded in report.html (all rows are in the jsonl/csv files)
_CHUNK = 1 << 20  # serialized bytes handed to an upload at a time


@dataclass
class ReportServices:
    crawls: CrawlStore
    urls: UrlStore
    results: ResultsStore
    dead_letters: FrontierQueue | None
    pacing: PacingGate | None = None
    clock: Callable[[], float] = time.time
    inlink_shards: int = DEFAULT_SHARDS
    inlink_edge_budget: int = DEFAULT_EDGE_BUDGET
    orphans_budget_s: float = 240.0  # work per Orphans invocation before handing back to the loop
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
        links_out = s.results.open_file(crawl_id, "links.jsonl", "application/x-ndjson")
        try:
            report = await self.build(record, error=error, links_out=links_out)
            keys = {"links.jsonl": await links_out.close()}
        except BaseException:
            await links_out.abort()
            raise
        report["status"] = final_status.value
        if final_status is CrawlStatus.COMPLETED:
            report["comparison"] = await self._compare_with_previous(record, report)
        keys.update(await self.write_outputs(crawl_id, report))
        if not record.status.terminal or record.status is not final_status:
            await s.crawls.set_status(
                crawl_id, final_status, now=s.clock(), error=_error_text(error) if action == "fail" else None
            )
        return {"crawl_id": crawl_id, "ok": action != "fail", "status": final_status.value, "outputs": keys}

    async def build(
        self, record: CrawlRecord, error: Any = None, links_out: StreamingUpload | None = None
    ) -> dict[str, Any]:
        """The report dict plus `_pages` and `_findings`; the link rows are streamed into `links_out`
        (links.jsonl) while the link rules run on them, and never kept."""
        s = self.s
        crawl_id = record.crawl_id
        pages: dict[str, dict[str, Any]] = {}
        async for row in s.results.rows(crawl_id, "pages"):
            current = pages.get(row["url"])
            if current is None or _OUTCOME_RANK.get(row.get("outcome", ""), 0) > _OUTCOME_RANK.get(
                current.get("outcome", ""), 0
            ):
                pages[row["url"]] = row
        sitemap: dict[str, dict[str, Any]] = {}
        async for row in s.results.rows(crawl_id, "sitemap"):
            sitemap.setdefault(row["url"], row)
        seed_findings = [row async for row in s.results.rows(crawl_id, "seed")]
        timelines: dict[str, dict[float, dict[str, Any]]] = {}
        async for point in s.results.rows(crawl_id, "pacing"):
            timelines.setdefault(point["origin"], {})[point["t"]] = {
                k: point.get(k)
                for k in ("t", "delay_ms", "concurrency", "error_rate", "n", "p95_ms", "verdict")
            }
        pending, more_pending = await s.urls.pending(crawl_id, limit=100_000)
        for p in pending:
            pages.setdefault(
                p.url,
                {
                    "url": p.url,
                    "status": None,
                    "depth": p.depth,
                    "outcome": "pending",
                    "alerts": ["ALERT_URL_PENDING"],
                },
            )
        dead = await self._dead_letters(crawl_id)
        for msg in dead:
            pages[msg.url] = {
                "url": msg.url,
                "status": None,
                "depth": msg.depth,
                "outcome": "dead_letter",
                "alerts": ["ALERT_DEAD_LETTER"],
            }
        cursor = await self._inlink_cursor(crawl_id, budget_s=None, record=record)
        inlinks = await self.inlinks.counts(crawl_id, cursor["shards"], wanted=pages.keys() | sitemap.keys())
        for url, row in pages.items():
            row["is_sitemap_url"] = url in sitemap
            row["inlinks"] = inlinks.get(url, 0)
            if url in sitemap and row.get("lastmod") is None:
                row["lastmod"] = sitemap[url].get("lastmod")
        for row in pages.values():
            row["crawl_depth"] = row.get("depth")
            row["depth"] = None
            for key in ("status", "title", "alerts"):
                row.setdefault(key, [] if key == "alerts" else None)
        await self._apply_depths(crawl_id, cursor, pages)
        rows = sorted(pages.values(), key=lambda r: (r["depth"] is None, r["depth"] or 0, r["url"]))
        findings = _page_findings(rows)
        audit = SiteAudit(
            (PageRow.from_mapping(r) for r in rows), sitemap_urls=set(sitemap), count_links=False
        )
        site = list(audit.page_findings())
        n_links = 0
        chunk: list[str] = []
        async for link in s.results.rows(crawl_id, "links"):
            n_links += 1
            if links_out is not None:
                chunk.append(json.dumps(link, ensure_ascii=False) + "\n")
                if len(chunk) >= 2_000:
                    await links_out.write("".join(chunk).encode())
                    chunk.clear()
            # A redirect hop is not a link on a page: chains come from the pages' redirect_to.
            if not link.get("redirect"):
                link_finding = audit.link(LinkRow.from_mapping(link))
                if link_finding is not None:
                    site.append(link_finding)
        if links_out is not None and chunk:
            await links_out.write("".join(chunk).encode())
        del chunk
        site.extend(audit.orphans(inlinks))
        del audit
        for finding in site:
            findings.append(finding.to_row())
            target_row = pages.get(finding.url)
            if target_row is not None and finding.code not in target_row.setdefault("alerts", []):
                target_row["alerts"].append(finding.code)
        if sitemap:
            for url, row in pages.items():
                if (
                    url not in sitemap
                    and row.get("status") == 200
                    and row.get("outcome") == "fetched"
                    and row.get("internal", True)
                    and row.get("is_html")
                    and not row.get("noindex")
                    and not row.get("waf_provider")
                    and row.get("canonical") in (None, url)
                ):
                    row.setdefault("alerts", []).append("ALERT_NOT_IN_SITEMAP")
                    findings.append(
                        {
                            "code": "ALERT_NOT_IN_SITEMAP",
                            "severity": describe("ALERT_NOT_IN_SITEMAP")[0],
                            "url": url,
                            "detail": "indexable page linked from the site but missing from its sitemaps",
                        }
                    )
        for f in seed_findings:
            severity, title = describe(f["code"])
            findings.append({**f, "severity": severity, "detail": f.get("detail") or title})
        report = {
            "crawl_id": crawl_id,
            "site": record.site,
            "settings": record.settings.public_view(),
            "created_at": record.created_at,
            "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(s.clock())),
            "duration_s": round(s.clock() - record.started_epoch, 1),
            "summary": {
                "urls": len(rows),
                "fetched": sum(1 for r in rows if r.get("outcome") == "fetched"),
                "by_outcome": dict(Counter(r.get("outcome", "?") for r in rows)),
                "by_status": {str(k): v for k, v in Counter(r.get("status") for r in rows).items()},
                "by_depth": {str(k): v for k, v in Counter(r["depth"] for r in rows).items()},
                "links": n_links,
                "sitemap_urls": len(sitemap),
                "pending": len(pending),
                "pending_truncated": more_pending,
                "dead_letters": len(dead),
            },
            "counters": record.counters,
            "host_timelines": {
                origin: [points[t] for t in sorted(points)] for origin, points in sorted(timelines.items())
            },
            "findings_by_code": dict(sorted(Counter(f["code"] for f in findings).items())),
            "error": _error_text(error),
        }
        report["_pages"] = rows
        report["_findings"] = findings
        return report

    async def write_outputs(self, crawl_id: str, report: dict[str, Any]) -> dict[str, str]:
        """pages.jsonl, findings.csv, report.json and the extra outputs, each written in bounded pieces."""
        rows = report.pop("_pages")
        findings = report.pop("_findings")
        keys: dict[str, str] = {}
        keys["pages.jsonl"] = await self._stream(
            crawl_id,
            "pages.jsonl",
            "application/x-ndjson",
            (json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in rows),
        )
        keys["findings.csv"] = await self._stream(crawl_id, "findings.csv", "text/csv", _csv_lines(findings))
        keys["report.json"] = await self.s.results.put_file(
            crawl_id, "report.json", json.dumps(report, indent=2, default=str).encode(), "application/json"
        )
        if self.s.extra_outputs:
            html_report = {**report, "aggregates": _html_aggregates(rows, findings)}
            shown_rows, shown_findings = rows[:HTML_MAX_ROWS], _top_findings(findings, HTML_MAX_ROWS)
            for extra in self.s.extra_outputs:
                for name, body in extra(html_report, shown_rows, shown_findings).items():
                    ctype = "text/html" if name.endswith(".html") else "application/octet-stream"
                    keys[name] = await self.s.results.put_file(crawl_id, name, body, ctype)
        return keys

    async def _stream(self, crawl_id: str, name: str, content_type: str, lines: Iterable[str]) -> str:
        out = self.s.results.open_file(crawl_id, name, content_type)
        try:
            buf: list[str] = []
            size = 0
            for line in lines:
                buf.append(line)
                size += len(line)
                if size >= _CHUNK:
                    await out.write("".join(buf).encode())
                    buf, size = [], 0
            if buf:
                await out.write("".join(buf).encode())
            return await out.close()
        except BaseException:
            await out.abort()
            raise

    async def _apply_depths(self, crawl_id: str, cursor: Cursor, pages: dict[str, dict[str, Any]]) -> None:
        """Click depth from the sharded breadth-first search, one shard's depth map at a time."""
        for shard in range(cursor["shards"]):
            for url, depth in (await self.inlinks.depths(crawl_id, cursor, shard)).items():
                row = pages.get(url)
                if row is not None:
                    row["depth"] = depth

    async def _compare_with_previous(
        self, record: CrawlRecord, report: dict[str, Any]
    ) -> dict[str, Any] | None:
        """New and fixed findings and status changes since the last completed crawl of the same site."""
        previous = await self.s.crawls.previous_of_site(record.site, record.created_at)
        if previous is None:
            return None
        base = f"crawls/{previous.crawl_id}/report/"
        try:
            pages_raw = await self.s.results.get_file(base + "pages.jsonl")
            findings_raw = await self.s.results.get_file(base + "findings.csv")
        except Exception:  # the previous crawl's outputs expired or were never written
            return {"previous_crawl_id": previous.crawl_id, "error": "previous outputs not available"}
        prev_pages = [json.loads(line) for line in pages_raw.decode("utf-8").splitlines() if line]
        prev_findings = list(csv.DictReader(io.StringIO(findings_raw.decode("utf-8"))))
        from seolens_core.control._compare import compare_crawls  # control imports the composition root

        comparison = compare_crawls(prev_pages, prev_findings, report["_pages"], report["_findings"])
        return {"previous_crawl_id": previous.crawl_id, **comparison}

    async def _inlink_cursor(
        self, crawl_id: str, budget_s: float | None, record: CrawlRecord
    ) -> dict[str, Any]:
        """Resume the inlink map/reduce and depth search from the checkpoint; to the end when `budget_s` is None."""
        cursor = await self.inlinks.load(crawl_id) or start_cursor(
            inlink_shards(self.s.inlink_shards, record.settings.max_pages)
        )
        return await self.inlinks.run(
            crawl_id, cursor, budget_s=budget_s, clock=self.s.clock, starts=_start_urls(record)
        )

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


def inlink_shards(minimum: int, max_pages: int | None) -> int:
    """Shards of the inlink map/reduce and depth search for a crawl of up to `max_pages` pages: `minimum`
    doubled until a shard holds about `PAGES_PER_INLINK_SHARD` pages (from 16: 16 up to 64k pages, 256 for
    1M), at most 1024."""
    wanted = -(-(max_pages or 0) // PAGES_PER_INLINK_SHARD)
    shards = max(1, minimum)
    while shards < min(wanted, 1024):
        shards *= 2
    return shards


def _start_urls(record: CrawlRecord) -> list[str]:
    """The normalized start URLs: depth 0 of the click-depth search."""
    return [u.url for u in (normalize(s) for s in record.settings.start_urls) if isinstance(u, NormalizedURL)]


def _csv_lines(findings: Iterable[dict[str, Any]]) -> Iterable[str]:
    buf = io.StringIO()
    writer = csv.DictWriter(
        buf, fieldnames=["code", "severity", "url", "detail", "related_url"], extrasaction="ignore"
    )
    writer.writeheader()
    for f in findings:
        writer.writerow(f)
        if buf.tell() >= _CHUNK:
            yield buf.getvalue()
            buf.seek(0)
            buf.truncate()
    yield buf.getvalue()


_SEVERITY_ORDER = {"critical": 0, "warning": 1, "notice": 2, "info": 3}


def _top_findings(findings: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """At most `limit` findings for report.html, the most severe first (stable within a severity)."""
    if len(findings) <= limit:
        return findings
    return sorted(findings, key=lambda f: _SEVERITY_ORDER.get(str(f.get("severity")), 4))[:limit]


def _html_aggregates(rows: list[dict[str, Any]], findings: list[dict[str, Any]]) -> dict[str, Any]:
    """Totals and chart data over every row, for a report.html that embeds only some of them."""
    ttfb = (
        r["ttfb_ms"]
        for r in rows
        if isinstance(r.get("ttfb_ms"), (int, float)) and not isinstance(r.get("ttfb_ms"), bool)
    )
    return {
        "pages_total": len(rows),
        "findings_total": len(findings),
        "ttfb_histogram": ttfb_histogram(ttfb),
        "findings_by_severity": dict(Counter(str(f.get("severity")) for f in findings)),
    }


def _page_findings(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for row in rows:
        for code in row.get("alerts") or []:
            severity, title = describe(code)
            detail = row.get("alert_detail") or title
            out.append({"code": code, "severity": severity, "url": row["url"], "detail": detail})
    return out


def _error_text(error: Any) -> str | None:
    if error is None:
        return None
    if isinstance(error, dict):
        return f"{error.get('Error', 'Error')}: {str(error.get('Cause', ''))[:1000]}"
    return str(error)[:1000]
