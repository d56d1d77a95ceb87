"""Benchmark: the fetcher's own CPU per fetch, with its pool and with httpx's default one.

Run: python benchmarks/bench_fetch.py [--fetches 4000] [--concurrency 8,32] [--page-kb 20]

Serves one generated page with nginx on 127.0.0.1 (installed with apt-get if missing) and fetches it
`--fetches` times through `seolens_core.fetch.Fetcher`, that many at once, on one connection pool: the
process's CPU per fetch and fetches per second, for the fetcher's pool (`seolens_core/fetch/_pool.py`) and
for httpx's own transport with the same limits. A crawl container keeps one pooled connection per request in
flight on a host, so the concurrency is the pool's size. Each measurement runs in a process of its own: the
fetcher's pool puts httpcore on asyncio's locks (`seolens_core/fetch/_sync.py`), for every pool of its process.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_throughput import NGINX_CONF, _ensure_nginx, _free_port, _wait_port

from seolens_core.fetch import AddressPolicy, Fetcher
from seolens_core.fetch._client import POOL_LIMITS

WARM_UP = 200


async def _measure(
    impl: str, url: str, host_port: str, fetches: int, concurrency: int
) -> tuple[float, float]:
    transport = None
    if impl == "httpx":
        transport = httpx.AsyncHTTPTransport(http2=False, limits=POOL_LIMITS, trust_env=False)
    fetcher = Fetcher(
        user_agent="SEOLensBench",
        policy=AddressPolicy.for_hosts([host_port]),
        http2=False,
        transport=transport,
    )
    gate = asyncio.Semaphore(concurrency)

    async def one() -> None:
        async with gate:
            result = await fetcher.fetch(url)
            if result.status != 200:
                raise SystemExit(f"fetch failed: {result.error or result.status}")

    try:
        await asyncio.gather(*(one() for _ in range(WARM_UP)))
        cpu, wall = time.process_time(), time.perf_counter()
        await asyncio.gather(*(one() for _ in range(fetches)))
        return (time.process_time() - cpu) / fetches * 1000, fetches / (time.perf_counter() - wall)
    finally:
        await fetcher.aclose()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--fetches", type=int, default=4000)
    parser.add_argument("--concurrency", default="8,32")
    parser.add_argument("--page-kb", type=int, default=20)
    parser.add_argument("--one", nargs=3, metavar=("IMPL", "URL", "CONCURRENCY"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        impl, url, concurrency = args.one
        host_port = url.split("/")[2]
        print(json.dumps(asyncio.run(_measure(impl, url, host_port, args.fetches, int(concurrency)))))
        return
    nginx = _ensure_nginx()
    with tempfile.TemporaryDirectory(prefix="seolens-fetch-") as tmp:
        work = Path(tmp)
        work.chmod(0o755)  # nginx's worker reads the site as another user
        site = work / "site"
        site.mkdir()
        links = "".join(f'<a href="/p{i}">link {i}</a> ' for i in range(40))
        body = f"<html><head><title>t</title></head><body>{links}</body></html>"
        (site / "index.html").write_text(
            body + " " * max(0, args.page_kb * 1024 - len(body)), encoding="utf-8"
        )
        port = _free_port()
        (work / "nginx.conf").write_text(NGINX_CONF.format(work=work, port=port, site=site), encoding="utf-8")
        server = subprocess.Popen(
            [nginx, "-c", str(work / "nginx.conf"), "-e", str(work / "nginx-error.log")]
        )
        try:
            _wait_port(port)
            url = f"http://127.0.0.1:{port}/index.html"
            for concurrency in (int(c) for c in args.concurrency.split(",")):
                figures = {}
                for impl in ("pooled", "httpx"):
                    one = [sys.executable, __file__, "--fetches", str(args.fetches), "--one", impl, url]
                    out = subprocess.run([*one, str(concurrency)], check=True, capture_output=True, text=True)
                    figures[impl] = tuple(json.loads(out.stdout))
                    cpu_ms, rate = figures[impl]
                    print(
                        f"concurrency {concurrency:3d}  {impl:7s} {cpu_ms:6.3f} ms CPU a fetch  {rate:6.0f} fetches/s"
                    )
                ratio = figures["pooled"][0] / figures["httpx"][0]
                print(
                    f"concurrency {concurrency:3d}  fetcher's pool / httpx's: {ratio:.2f} of the CPU a fetch"
                )
        finally:
            server.terminate()
            server.wait(timeout=10)


if __name__ == "__main__":
    main()
