"""Benchmark: peak RSS of one fetch worker fetching and parsing 5 MB pages (target: fits a 256 MB Lambda).

Run: python benchmarks/bench_worker_memory.py [--pages 30] [--in-flight 10] [--page-mb 5]

- Serves generated HTML pages of `--page-mb` MB each (paragraphs with ~38,000 links in 5 MB, tables) from a
  separate process on 127.0.0.1, so the server's memory is not counted.
- In a fresh child process: imports the fetch worker's Lambda module (`functions.fetch_worker`: the
  container's baseline, boto3, aiobotocore, Powertools and all), then runs what the worker does with each
  record between its slot and its flush, on `--in-flight` records at once (the worker's `MAX_IN_FLIGHT`):
  fetch with the crawl's `Fetcher` (body cap 5 MiB) and build the page's row and link plan (`page_row`:
  decode, parse, extract, audit, plan the links). AWS calls are left out: they hold a few KB per record.
- Prints the child's RSS after imports, its peak RSS (`ru_maxrss`) and the difference, against 256 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
LAMBDA_MB = 256

_SERVER = textwrap.dedent(
    """
    import sys
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    size = int(sys.argv[1])
    head = b"<!doctype html><html><head><title>Big page</title><meta name=description content=big></head><body>"
    chunk = b"".join(
        b'<p>Lorem ipsum dolor sit amet, consectetur adipiscing elit <a href="/p/%d.html">link %d</a></p>'
        % (i, i) for i in range(200)
    ) + b"<table>" + b"<tr><td>cell</td><td><span>deep <b>text</b></span></td></tr>" * 100 + b"</table>"
    body = head + chunk * (size // len(chunk)) + b"</body></html>"

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()
    """
)

_WORKER = textwrap.dedent(
    """
    import asyncio, json, resource, sys, time

    def rss_mb():
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
        return 0.0

    import functions.fetch_worker  # noqa: F401  (the Lambda container's imports)
    from seolens_core.crawl._links import CrawlScope
    from seolens_core.crawl._pages import page_row
    from seolens_core.crawl._worker import default_fetcher
    from seolens_core.frontier import FrontierMessage
    from seolens_core.settings import CrawlSettings
    from seolens_core.urls import normalize, url_key_hex
    from seolens_core.bootstrap import tune_gc

    tune_gc()  # as a container does after its cold start
    base, pages, in_flight = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    baseline = rss_mb()

    async def main():
        settings = CrawlSettings(start_urls=(base + "/",))
        scope = CrawlScope.from_settings(settings, time.time())
        fetcher = default_fetcher(settings, scope.address_policy)
        gate = asyncio.Semaphore(in_flight)
        sizes, links = [], 0

        async def one(i):
            nonlocal links
            async with gate:
                url = f"{base}/p/{i}.html"
                msg = FrontierMessage(crawl_id="c", url=url, key=url_key_hex(url), depth=1, parent=None)
                result = await fetcher.fetch(url)
                row, plan = page_row(msg, normalize(url), result, scope, settings)
                sizes.append(len(result.body or b""))
                links += len(plan.enqueue) if plan else 0

        t0 = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(pages)))
        await fetcher.aclose()
        return sizes, links, time.perf_counter() - t0

    sizes, links, seconds = asyncio.run(main())
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"baseline_mb": baseline, "peak_mb": peak, "bodies": len(sizes),
                      "body_mb": max(sizes) / 1e6, "links": links, "seconds": seconds}))
    """
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=30)
    parser.add_argument(
        "--in-flight", type=int, default=10, help="records at once (the worker's MAX_IN_FLIGHT)"
    )
    parser.add_argument("--page-mb", type=float, default=5.0)
    args = parser.parse_args()
    server = subprocess.Popen(
        [sys.executable, "-c", _SERVER, str(int(args.page_mb * 1_000_000))], stdout=subprocess.PIPE, text=True
    )
    try:
        assert server.stdout is not None
        port = int(server.stdout.readline())
        env = {**os.environ, "PYTHONPATH": str(REPO), "POWERTOOLS_METRICS_NAMESPACE": "bench"}
        out = subprocess.run(
            [sys.executable, "-c", _WORKER, f"http://127.0.0.1:{port}", str(args.pages), str(args.in_flight)],
            env=env,
            capture_output=True,
            text=True,
            check=True,
            timeout=600,
        )
    finally:
        server.kill()
    figures = json.loads(out.stdout.strip().splitlines()[-1])
    grown = figures["peak_mb"] - figures["baseline_mb"]
    print(
        f"worker: {figures['bodies']} pages of {figures['body_mb']:.1f} MB, {args.in_flight} in flight, "
        f"{figures['links']} links planned in {figures['seconds']:.1f} s\n"
        f"RSS after imports {figures['baseline_mb']:.0f} MB, peak {figures['peak_mb']:.0f} MB "
        f"(+{grown:.0f} MB for the pages in flight): "
        f"{'fits' if figures['peak_mb'] < LAMBDA_MB else 'does NOT fit'} a {LAMBDA_MB} MB Lambda"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
