"""The one-screen summary printed when a local crawl ends."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def render_summary(run: Any, out_dir: Path, seconds: float) -> str:
    report: dict[str, Any] = {}
    report_path = run.outputs.get("report.json")
    if report_path is not None:
        report = json.loads(Path(report_path).read_text(encoding="utf-8"))
    summary = report.get("summary", {})
    lines = [
        "",
        f"SEO Lens crawl {run.crawl_id}: {run.record.status.value} in {seconds:.1f}s "
        f"(state machine {run.execution.status})",
    ]
    if run.execution.error:
        lines.append(f"  error: {run.execution.error}")
    fetched = summary.get("fetched", 0)
    lines.append(
        f"  URLs {summary.get('urls', 0)} · fetched {fetched} · links {summary.get('links', 0)} · "
        f"sitemap URLs {summary.get('sitemap_urls', 0)} · pending {summary.get('pending', 0)} · "
        f"{fetched / max(seconds, 0.001):.1f} pages/s"
    )
    if summary.get("stopped"):
        lines.append(
            f"  ended early ({summary['stopped']}): {summary.get('not_crawled', 0)} URLs not crawled;"
            " orphan pages not assessed"
        )
    by_status = summary.get("by_status", {})
    if by_status:
        lines.append("  status   " + "  ".join(f"{k}: {v}" for k, v in sorted(by_status.items())))
    findings = report.get("findings_by_code", {})
    if findings:
        lines.append("  findings")
        width = max(len(code) for code in findings)
        for code, count in sorted(findings.items(), key=lambda kv: (-kv[1], kv[0]))[:15]:
            lines.append(f"    {code.ljust(width)}  {count}")
        if len(findings) > 15:
            lines.append(f"    ... {len(findings) - 15} more codes in findings.csv")
    cost = run.cost or report.get("cost") or {}
    if cost:
        per_100k = cost.get("cost_per_100k_pages_usd")
        lines.append(
            f"  on AWS: {cost['aws_calls_total']} API calls ({cost.get('aws_calls_per_page')} per page), "
            f"${cost['cost_usd']['total']:.4f} for this crawl"
            + (f", ${per_100k:.2f} per 100,000 pages at list prices" if per_100k is not None else "")
        )
    lines.append("  outputs")
    for _name, path in sorted(run.outputs.items()):
        lines.append(f"    {path}")
    return "\n".join(lines)
