"""Audit comparison: what changed between the previous crawl of a site and this one.

Pure: rows in, a JSON-ready dict out. A finding is identified by (code, url, related_url); a page by its URL.

Every rule looks at one URL at a time (a finding with its page's URL), so the comparison also runs on
partitions: split both crawls' pages and findings by a function of the URL, run `compare_crawls` on each
part, and `merge_comparisons` of the parts equals `compare_crawls` of the whole. The report step does that
per URL shard, so it holds one shard of both crawls plus the result.
"""

from __future__ import annotations

import heapq
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

FindingKey = tuple[str, str, str]


def _finding_key(f: Mapping[str, Any]) -> FindingKey:
    return (str(f.get("code", "")), str(f.get("url", "")), str(f.get("related_url") or ""))


def _index_findings(findings: Iterable[Mapping[str, Any]]) -> dict[FindingKey, dict[str, Any]]:
    out: dict[FindingKey, dict[str, Any]] = {}
    for f in findings:
        out.setdefault(_finding_key(f), dict(f))
    return out


def _index_pages(rows: Iterable[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    return {str(r["url"]): r for r in rows if r.get("url")}


def _state(row: Mapping[str, Any]) -> tuple[Any, Any]:
    return (row.get("status"), row.get("outcome"))


def compare_crawls(
    previous_pages_rows: Iterable[Mapping[str, Any]],
    previous_findings: Iterable[Mapping[str, Any]],
    current_pages_rows: Iterable[Mapping[str, Any]],
    current_findings: Iterable[Mapping[str, Any]],
) -> dict[str, Any]:
    """New findings (in this crawl only), fixed findings (in the previous crawl only, on a URL this crawl
    saw again: a URL no longer crawled proves nothing), status changes, and URLs that appeared or vanished."""
    before_pages = _index_pages(previous_pages_rows)
    after_pages = _index_pages(current_pages_rows)
    before = _index_findings(previous_findings)
    after = _index_findings(current_findings)

    new = [after[k] for k in sorted(after.keys() - before.keys())]
    fixed: list[dict[str, Any]] = []
    unverified: list[dict[str, Any]] = []
    for key in sorted(before.keys() - after.keys()):
        url = key[1]
        # Site-wide findings without a page URL count as fixed when they are simply gone.
        (fixed if not url or url in after_pages else unverified).append(before[key])

    status_changes = []
    for url in sorted(before_pages.keys() & after_pages.keys()):
        was, now = _state(before_pages[url]), _state(after_pages[url])
        if was != now:
            status_changes.append(
                {
                    "url": url,
                    "before": {"status": was[0], "outcome": was[1]},
                    "after": {"status": now[0], "outcome": now[1]},
                }
            )
    new_urls = sorted(after_pages.keys() - before_pages.keys())
    gone_urls = sorted(before_pages.keys() - after_pages.keys())
    new_by_code = Counter(f.get("code") for f in new)
    fixed_by_code = Counter(f.get("code") for f in fixed)
    return {
        "summary": {
            "new_findings": len(new),
            "fixed_findings": len(fixed),
            "unverified_findings": len(unverified),
            "status_changes": len(status_changes),
            "new_urls": len(new_urls),
            "gone_urls": len(gone_urls),
            "findings_before": len(before),
            "findings_after": len(after),
        },
        "new_findings_by_code": dict(sorted((str(k), v) for k, v in new_by_code.items())),
        "fixed_findings_by_code": dict(sorted((str(k), v) for k, v in fixed_by_code.items())),
        "new_findings": new,
        "fixed_findings": fixed,
        "unverified_findings": unverified,
        "status_changes": status_changes,
        "new_urls": new_urls,
        "gone_urls": gone_urls,
    }


def merge_comparisons(parts: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """`compare_crawls` of the whole, from `compare_crawls` of parts partitioned by URL (findings by their
    `url`, pages by theirs, both crawls with the same partition)."""
    summary: Counter[str] = Counter()
    new_by_code: Counter[str] = Counter()
    fixed_by_code: Counter[str] = Counter()
    for part in parts:
        summary.update(part["summary"])
        new_by_code.update(part["new_findings_by_code"])
        fixed_by_code.update(part["fixed_findings_by_code"])

    def merged(name: str, key: Any) -> list[Any]:
        return list(heapq.merge(*(part[name] for part in parts), key=key))

    keys = (
        "new_findings",
        "fixed_findings",
        "unverified_findings",
        "status_changes",
        "new_urls",
        "gone_urls",
        "findings_before",
        "findings_after",
    )
    return {
        "summary": {k: summary[k] for k in keys},
        "new_findings_by_code": dict(sorted(new_by_code.items())),
        "fixed_findings_by_code": dict(sorted(fixed_by_code.items())),
        "new_findings": merged("new_findings", _finding_key),
        "fixed_findings": merged("fixed_findings", _finding_key),
        "unverified_findings": merged("unverified_findings", _finding_key),
        "status_changes": merged("status_changes", lambda c: c["url"]),
        "new_urls": merged("new_urls", None),
        "gone_urls": merged("gone_urls", None),
    }
