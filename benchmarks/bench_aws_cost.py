"""Benchmark: AWS API calls per crawled page, by service and operation, and the cost per 100,000 pages.

Run:  python benchmarks/bench_aws_cost.py --report OUT/report.json   (any finished `seolens crawl`)
 or:  python benchmarks/bench_aws_cost.py --pages 2000               (crawls the generated nginx site first,
                                                                      through bench_throughput.py --skip-scrapy)

Calls come from report.json "aws_calls" (seolens_core/adapters/_metering.py GLOBAL_METER: every call our
handlers make through botocore/aiobotocore). Not metered, so estimated and stated below: the Lambda
event-source mapping's own SQS polling (ReceiveMessage + DeleteMessageBatch per batch; AWS bills these to
the queue owner), Lambda invocations and GB-seconds, Step Functions transitions, and the item count of
batch calls (the API maximum is assumed: an upper bound). Prices and unit rules: seolens_core/costs.py.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from seolens_core.costs import LIST_PRICES, Usage, billed_units, cost_of

HERE = Path(__file__).resolve().parent
TARGET_CALLS_PER_PAGE = 2.0
TARGET_USD_PER_100K = 0.25


def _crawl_site(pages: int, max_seconds: float) -> tuple[dict[str, int], int, float]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "bench.json"
        cmd = [
            sys.executable,
            str(HERE / "bench_throughput.py"),
            "--pages",
            str(pages),
            "--skip-scrapy",
            "--max-seconds",
            str(max_seconds),
            "--json",
            str(out),
        ]
        subprocess.run(cmd, check=True)
        (run,) = json.loads(out.read_text(encoding="utf-8"))
    return dict(run["extra"]["aws_calls"]), int(run["pages"]), float(run["wall_s"])


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--report", type=Path, help="report.json of a finished crawl")
    parser.add_argument(
        "--pages", type=int, default=2000, help="size of the generated site (without --report)"
    )
    parser.add_argument("--max-seconds", type=float, default=600.0)
    parser.add_argument(
        "--batch-size", type=int, default=10, help="SQS messages per worker invocation (template)"
    )
    parser.add_argument(
        "--lambda-memory-mb", type=int, default=512, help="FetchWorkerFunction MemorySize (template)"
    )
    parser.add_argument(
        "--lambda-ms-per-page",
        type=float,
        default=150.0,
        help="assumed billed worker duration per page (fetch + parse + AWS calls)",
    )
    parser.add_argument(
        "--sfn-transitions-per-crawl",
        type=int,
        default=200,
        help="state transitions of one crawl's execution (seed, progress polls, report)",
    )
    args = parser.parse_args()
    report_cost: dict[str, Any] = {}

    if args.report:
        report = json.loads(args.report.read_text(encoding="utf-8"))
        report_cost = report.get("cost", {})
        calls = dict(report.get("aws_calls") or report.get("cost", {}).get("aws_calls", {}))
        pages = int(
            report.get("summary", {}).get("fetched") or report.get("counters", {}).get("n_fetched") or 0
        )
        source = str(args.report)
    else:
        calls, pages, _ = _crawl_site(args.pages, args.max_seconds)
        source = f"generated site, {args.pages} pages (pages counted from the nginx log)"
    if pages <= 0:
        raise SystemExit("no fetched pages in the report")

    batches = pages / args.batch_size
    esm = {
        "sqs.ReceiveMessage (ESM, est.)": round(batches),
        "sqs.DeleteMessageBatch (ESM, est.)": round(batches),
    }
    metered_total = sum(calls.values())
    print(f"source: {source}; fetched pages: {pages}")
    print(
        f"metered AWS calls: {metered_total} = {metered_total / pages:.2f} per page "
        f"(target <= {TARGET_CALLS_PER_PAGE}); with the ESM's own polling (est.) "
        f"{(metered_total + sum(esm.values())) / pages:.2f} per page"
    )
    for op, n in sorted({**calls, **esm}.items(), key=lambda kv: -kv[1]):
        print(f"  {op:40s} {n:8d}  {n / pages:6.2f}/page  {n / max(metered_total, 1):6.1%}")

    scale = 100_000 / pages
    all_calls = dict(calls)
    all_calls["sqs.ReceiveMessage"] = (
        all_calls.get("sqs.ReceiveMessage", 0) + esm["sqs.ReceiveMessage (ESM, est.)"]
    )
    all_calls["sqs.DeleteMessageBatch"] = (
        all_calls.get("sqs.DeleteMessageBatch", 0) + esm["sqs.DeleteMessageBatch (ESM, est.)"]
    )
    # Index writes are not in the call counts: the crawl's own meter counted them (0 without a report).
    index_wru = (
        float(report_cost.get("billed_units", {}).get("dynamodb_index_wru", 0.0)) if args.report else 0.0
    )
    usage = Usage(
        calls={k: round(v * scale) for k, v in all_calls.items()},
        index_write_units=index_wru * scale,
        lambda_invocations=round(batches * scale),
        lambda_gb_seconds=100_000 * args.lambda_ms_per_page / 1000 * args.lambda_memory_mb / 1024,
        sfn_transitions=args.sfn_transitions_per_crawl,
    )
    units = billed_units(usage)
    cost = cost_of(units)
    p = LIST_PRICES
    print(
        "prices (us-east-1 list): "
        f"SQS ${p.sqs_per_million_requests}/M requests (per 64 KB chunk); DynamoDB on-demand "
        f"${p.dynamodb_per_million_wru}/M WRU, ${p.dynamodb_per_million_rru}/M RRU; Lambda "
        f"${p.lambda_per_gb_second:.10f}/GB-s + ${p.lambda_per_million_requests}/M requests; Step Functions "
        f"${p.sfn_per_thousand_transitions}/1k transitions; S3 PUT ${p.s3_per_thousand_put}/1k, "
        f"GET ${p.s3_per_thousand_get}/1k"
    )
    print(
        f"billed units per 100,000 pages: SQS {units.sqs_requests:,.0f} requests; DynamoDB "
        f"{units.dynamodb_wru:,.0f} WRU (batch calls at their API maximum) + {units.dynamodb_index_wru:,.0f} "
        f"index WRU, {units.dynamodb_rru:,.0f} RRU; "
        f"S3 {units.s3_put_requests:,.0f} PUT, {units.s3_get_requests:,.0f} GET; Lambda "
        f"{units.lambda_requests:,.0f} requests, {units.lambda_gb_seconds:,.0f} GB-s "
        f"(assumed {args.lambda_ms_per_page:.0f} ms/page at {args.lambda_memory_mb} MB); "
        f"Step Functions {units.sfn_transitions:,.0f} transitions"
    )
    if units.unpriced:
        print(f"  not priced: {', '.join(units.unpriced)}")
    print(
        "cost per 100,000 pages (USD): "
        + ", ".join(f"{k} {v:.4f}" for k, v in cost.as_dict().items())
        + f"  (target <= {TARGET_USD_PER_100K})"
    )
    measured = report_cost.get("cost_per_100k_pages_usd") if args.report else None
    if measured is not None:
        print(
            f"as the crawl measured it (report.json cost: real batch item counts, the local Lambda time at each "
            f"function's memory, the executor's transitions): ${measured:.4f} per 100,000 pages"
        )


if __name__ == "__main__":
    main()
