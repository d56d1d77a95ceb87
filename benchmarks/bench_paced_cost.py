"""Benchmark: what an audit with the default politeness costs a page, and where its AWS calls and units go.

Run: python benchmarks/bench_paced_cost.py [--pages 400] [--workers 4] [--unpaced] [--keep]

The throughput benchmark turns politeness off (`--no-aimd`, no delay); every real crawl runs with it on (AIMD,
250 ms between starts, two at a time), so its records wait for slots, come back deferred and arrive a few at
a time. This crawls a generated site (`_site_gen.py`, served by nginx as in `bench_throughput.py`) with
`seolens crawl` in this process, default settings, and prints the crawl's own figures (`report.json` cost:
calls and dollars per page) and every DynamoDB call by purpose: operation, table and expression, with the
items each names (a transaction bills two write units an item). `--unpaced` crawls with the throughput
benchmark's settings instead (no AIMD, no delay, 32 at a time), to see where its calls go.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _site_gen import generate_site, write_sitemaps
from bench_throughput import NGINX_CONF, _ensure_nginx, _free_port, _wait_port, unpaced_config

from infra.local.cli import main as seolens_main
from seolens_core.adapters._metering import GLOBAL_METER

_TABLE = re.compile(r"-([A-Za-z]+Table)-")


def _table(name: str) -> str:
    found = _TABLE.search(name)
    return found.group(1) if found else name


def _expression(spec: Mapping[str, Any]) -> str:
    text = spec.get("UpdateExpression") or spec.get("ConditionExpression") or ""
    return re.sub(r"#\w+|:\w+", "?", str(text))[:48]


_STATEMENT = re.compile(r'\s*(\w+)\s+(?:INTO\s+)?"?([^"\s]+)', re.IGNORECASE)


def _statement(text: str) -> str:
    """A PartiQL statement's verb and table: `INSERT UrlsTable`."""
    found = _STATEMENT.match(text)
    return f"{found[1].upper()} {_table(found[2])}" if found else "?"


def purpose(operation: str, params: Mapping[str, Any]) -> tuple[str, int]:
    """A DynamoDB request's purpose (operation, table, expression with placeholders blanked) and its items."""
    if operation == "TransactWriteItems":
        kinds: Counter[str] = Counter()
        for element in params.get("TransactItems", []):
            ((action, spec),) = element.items()
            kinds[f"{action} {_table(spec.get('TableName', ''))} {_expression(spec)}"] += 1
        return f"{operation}: " + " + ".join(sorted(kinds)), sum(kinds.values())
    if operation == "BatchExecuteStatement":  # one item a statement: the verb and table of each
        kinds = Counter(_statement(str(st.get("Statement", ""))) for st in params.get("Statements", []))
        return f"{operation}: " + " + ".join(sorted(kinds)), sum(kinds.values())
    if operation in ("BatchWriteItem", "BatchGetItem"):
        requests = params.get("RequestItems", {})
        items = sum(len(v) if isinstance(v, list) else len(v.get("Keys", [])) for v in requests.values())
        return f"{operation} {' '.join(_table(t) for t in requests)}", items
    return f"{operation} {_table(params.get('TableName', ''))} {_expression(params)}", 1


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pages", type=int, default=400)
    parser.add_argument("--links", type=int, default=40)
    parser.add_argument("--workers", type=int, default=4, help="emulated pollers (the CLI's default)")
    parser.add_argument(
        "--unpaced",
        action="store_true",
        help="bench_throughput's settings: --no-aimd, no delay, 32 at a time",
    )
    parser.add_argument("--keep", action="store_true", help="keep the work directory (site, logs, report)")
    parser.add_argument(
        "--wait-out-batching-window",
        action="store_true",
        help="the workers' event source buffers records for its whole batching window, as AWS Lambda does",
    )
    args = parser.parse_args()

    nginx = _ensure_nginx()
    work = Path(tempfile.mkdtemp(prefix="seolens-paced-"))
    work.chmod(0o755)
    site = work / "site"
    spec = generate_site(site, args.pages, args.links)
    port = _free_port()
    origin = f"http://127.0.0.1:{port}"
    write_sitemaps(site, spec, origin)
    (work / "nginx.conf").write_text(NGINX_CONF.format(work=work, port=port, site=site), encoding="utf-8")
    server = subprocess.Popen([nginx, "-c", str(work / "nginx.conf"), "-e", str(work / "nginx-error.log")])

    calls: Counter[str] = Counter()
    items: Counter[str] = Counter()

    def count(service: str, operation: str, params: Mapping[str, Any]) -> None:
        if service == "dynamodb":
            name, n = purpose(operation, params)
            calls[name] += 1
            items[name] += n
        else:
            calls[f"{service}.{operation}"] += 1

    unpaced = ["--no-aimd", "--config", str(unpaced_config(work, 32))] if args.unpaced else []
    GLOBAL_METER.add_listener(count)
    out = work / "seolens-out"
    started = time.perf_counter()
    try:
        _wait_port(port)
        code = seolens_main(
            [
                "crawl",
                origin + "/",
                "--allow-host",
                f"127.0.0.1:{port}",
                "--workers",
                str(args.workers),
                "--max-pages",
                str(args.pages + 100),
                "--out",
                str(out),
                "--quiet",
                *unpaced,
                *(["--wait-out-batching-window"] if args.wait_out_batching_window else []),
            ]
        )
    finally:
        GLOBAL_METER.remove_listener(count)
        server.terminate()
        server.wait(timeout=10)
    wall = time.perf_counter() - started
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    cost = report.get("cost", {})
    pages = max(int(report.get("counters", {}).get("n_fetched", 0)), 1)
    units = cost.get("billed_units", {})
    print(f"seolens crawl exit {code}: {pages} pages fetched in {wall:.0f} s ({pages / wall:.1f} pages/s)")
    print(
        f"AWS calls {cost.get('aws_calls_total', 0)} ({cost.get('aws_calls_per_page', 0):.2f} a page); "
        f"cost ${cost.get('cost_per_100k_pages_usd', 0):.2f} per 100,000 pages: "
        + ", ".join(
            f"{k} ${v / pages * 1e5:.2f}" for k, v in cost.get("cost_usd", {}).items() if k != "total"
        )
    )
    print(
        "per page: "
        + ", ".join(f"{k} {v / pages:.2f}" for k, v in units.items() if isinstance(v, int | float) and v)
    )
    print("calls by purpose (per page; items per page; transactions bill two units an item):")
    for name, n in sorted(calls.items(), key=lambda kv: -kv[1]):
        extra = f"  items {items[name] / pages:6.2f}" if name in items else ""
        print(f"  {n / pages:6.2f}{extra}  {name}")
    if args.keep:
        print(f"kept {work}")
    else:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
