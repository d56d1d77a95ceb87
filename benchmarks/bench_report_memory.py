"""Peak RSS of the Report step (seolens_core/crawl/_report.py) as the crawl grows, on the embedded moto S3.

For each size, synthetic crawl results are written to the template's ResultsBucket the way the workers write
them (one page part and one link part per batch of 10 pages; `--links` internal links per page, a tree plus
random cross links so every page is reachable) and a crawl record is created. Then a fresh child process runs
the whole Report step (`Reporter.run(crawl_id, "report")`: inlink map/reduce, depth search, site rules, all
five outputs, report.html included) and prints its peak RSS (`ru_maxrss`). With `--impl old` the child runs
the Reporter of a given git revision instead (`--old-rev`, default e726d9f), as a baseline; 6b32cb7 is the last one that held every page row, finding and the comparison.

    python benchmarks/bench_report_memory.py [--pages 20000,100000] [--links 40] [--impl new,old]

Needs only the repository's virtualenv; moto runs as a subprocess (its memory is not counted).
"""

from __future__ import annotations

import argparse
import asyncio
import importlib.util
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
PAGES_PER_PART = 10


def _page_row(crawl_id: str, url: str, depth: int, rng: random.Random) -> dict[str, Any]:
    return {
        "crawl_id": crawl_id,
        "url": url,
        "depth": depth,
        "crawl_time": "2026-01-01T00:00:00Z",
        "lastmod": None,
        "meta": None,
        "status": 200,
        "outcome": "fetched",
        "ttfb_ms": round(rng.uniform(20, 900), 1),
        "download_ms": round(rng.uniform(30, 1200), 1),
        "size": rng.randint(8_000, 90_000),
        "truncated": False,
        "content_type": "text/html; charset=utf-8",
        "is_html": True,
        "internal": True,
        "title": f"Product {url.rsplit('-', 1)[-1]} | Shop",
        "meta_desc": f"Buy product {url.rsplit('-', 1)[-1]} today at the best price.",
        "h1": ["Product"],
        "canonical": url,
        "noindex": False,
        "content_hash": uuid.UUID(int=rng.getrandbits(128)).hex,
        "word_count": rng.randint(150, 900),
        "alerts": ["ALERT_META_DESC_SHORT"] if rng.random() < 0.1 else [],
    }


async def generate(app: Any, crawl_id: str, site: str, pages: int, links: int) -> dict[str, Any]:
    """Write the crawl record and the page/link parts (`app`: a Container whose stores are already built)."""
    from seolens_core.settings import CrawlSettings

    rng = random.Random(pages)
    urls = [f"{site}/c{i % 97}/product-{i}" for i in range(pages)]
    urls[0] = f"{site}/"
    depth = [0] * pages
    for i in range(1, pages):
        depth[i] = depth[(i - 1) // links] + 1
    settings = CrawlSettings(start_urls=(urls[0],), allow_hosts=(site.split("//")[1],), max_pages=pages)
    await app.crawls.create(crawl_id, settings, site, now=time.time())
    sem = asyncio.Semaphore(16)
    n_links = 0

    async def put(kind: str, part: str, rows: list[dict[str, Any]]) -> None:
        async with sem:
            await app.results.put_part(crawl_id, kind, part, rows)

    tasks = []
    for start in range(0, pages, PAGES_PER_PART):
        batch = range(start, min(pages, start + PAGES_PER_PART))
        page_rows = [_page_row(crawl_id, urls[i], depth[i], rng) for i in batch]
        link_rows = []
        for i in batch:
            children = [c for c in range(i * links + 1, i * links + 1 + links // 2) if c < pages]
            targets = children + [rng.randrange(pages) for _ in range(links - len(children))]
            link_rows += [
                {
                    "crawl_id": crawl_id,
                    "source": urls[i],
                    "target": urls[t],
                    "internal": True,
                    "nofollow": False,
                }
                for t in targets
            ]
        n_links += len(link_rows)
        part = f"{start // PAGES_PER_PART:013d}-{uuid.uuid4().hex[:12]}"
        tasks.append(asyncio.ensure_future(put("pages", part, page_rows)))
        tasks.append(asyncio.ensure_future(put("links", part, link_rows)))
        if len(tasks) >= 256:
            await asyncio.gather(*tasks)
            tasks.clear()
    await asyncio.gather(*tasks)
    # as the workers count them: the report sizes its inlink and page shards by the URLs a crawl finished
    await app.crawls.add_counters(crawl_id, {"n_discovered": pages, "n_fetched": pages})
    return {"pages": pages, "links": n_links}


def child(crawl_id: str, impl: str, old_file: str | None) -> None:
    """Run the Report step once and print JSON: peak RSS and what the outputs hold."""
    from seolens_core.bootstrap import container

    app = container()
    _ = (app.crawls, app.results, app.reporter)
    if impl == "old":
        assert old_file is not None
        spec = importlib.util.spec_from_file_location("old_report", old_file)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["old_report"] = module
        spec.loader.exec_module(module)
        base = app.reporter.s
        reporter: Any = module.Reporter(
            module.ReportServices(
                base.crawls,
                base.urls,
                base.results,
                base.dead_letters,
                base.pacing,
                extra_outputs=base.extra_outputs,
            )
        )
    else:
        reporter = app.reporter
    rss_before = _rss_now_kib()  # the Container, clients and imports: not the report's
    started = time.perf_counter()
    out = app.run(reporter.run(crawl_id, "report"))
    elapsed = time.perf_counter() - started
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    report = json.loads(app.run(app.results.get_file(out["outputs"]["report.json"])))
    print(
        json.dumps(
            {
                "peak_rss_mib": round(peak / 1024, 1),
                "rss_before_mib": round(rss_before / 1024, 1),
                "seconds": round(elapsed, 1),
                "urls": report["summary"]["urls"],
                "links": report["summary"]["links"],
                "by_depth": report["summary"]["by_depth"],
            }
        )
    )


def _rss_now_kib() -> int:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * (os.sysconf("SC_PAGE_SIZE") // 1024)


def _old_file(rev: str) -> str:
    text = subprocess.run(
        ["git", "show", f"{rev}:seolens_core/crawl/_report.py"],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    with tempfile.NamedTemporaryFile("w", suffix="_report_old.py", delete=False) as handle:
        handle.write(text)
    return handle.name


def _outputs(app: Any, crawl_id: str, site: str) -> dict[str, bytes]:
    """The outputs that must not depend on the implementation, with the crawl's id and site masked."""
    out = {}
    for name in ("pages.jsonl", "links.jsonl", "findings.csv"):
        body = app.run(app.results.get_file(f"crawls/{crawl_id}/report/{name}"))
        out[name] = body.replace(crawl_id.encode(), b"CRAWL").replace(site.encode(), b"SITE")
    report = json.loads(app.run(app.results.get_file(f"crawls/{crawl_id}/report/report.json")))
    out["report.json summary"] = json.dumps([report["summary"], report["findings_by_code"]]).encode()
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", default="20000,100000")
    ap.add_argument("--links", type=int, default=40)
    ap.add_argument("--impl", default="new")
    ap.add_argument("--old-rev", default="e726d9f")
    ap.add_argument("--child", nargs=3, metavar=("CRAWL_ID", "IMPL", "OLD_FILE"))
    args = ap.parse_args()
    if args.child:
        crawl_id, impl, old = args.child
        child(crawl_id, impl, None if old == "-" else old)
        return

    from infra.local.runtime import LocalCloud
    from seolens_core.bootstrap import container

    old_file = _old_file(args.old_rev) if "old" in args.impl.split(",") else "-"
    peaks: dict[str, list[tuple[int, float]]] = {}
    with LocalCloud(stack_name="seolens-bench-report").start():
        for pages in [int(p) for p in args.pages.split(",")]:
            produced: dict[str, dict[str, bytes]] = {}
            for impl in args.impl.split(","):
                crawl_id = f"bench-{pages}-{impl}-{uuid.uuid4().hex[:6]}"
                site = f"https://s{uuid.uuid4().hex[:6]}.example"
                t0 = time.perf_counter()
                app = container()
                _ = (app.crawls, app.results)  # built outside the coroutine: they open the clients
                made = app.run(generate(app, crawl_id, site, pages, args.links))
                gen_s = time.perf_counter() - t0
                proc = subprocess.run(
                    [sys.executable, __file__, "--child", crawl_id, impl, old_file],
                    env={**os.environ, "PYTHONPATH": str(REPO)},
                    capture_output=True,
                    text=True,
                    check=False,
                )
                if proc.returncode != 0:
                    print(proc.stderr[-3000:], file=sys.stderr)
                    raise SystemExit(f"child failed for {pages} pages ({impl})")
                result = json.loads(proc.stdout.strip().splitlines()[-1])
                print(
                    f"{impl:>3} pages={made['pages']:>7} links={made['links']:>8}: report peak RSS "
                    f"{result['peak_rss_mib']:7.1f} MiB (RSS before the step {result['rss_before_mib']:.1f} MiB), "
                    f"{result['seconds']:.1f}s; outputs: urls={result['urls']} links={result['links']} "
                    f"(generated in {gen_s:.0f}s)",
                    flush=True,
                )
                produced[impl] = _outputs(app, crawl_id, site)
                peaks.setdefault(impl, []).append((pages, result["peak_rss_mib"]))
            if len(produced) > 1:
                first, *others = produced.values()
                same = {name: all(o[name] == body for o in others) for name, body in first.items()}
                sizes = {name: len(body) for name, body in first.items()}
                print(
                    f"    outputs identical across {', '.join(produced)}: {same} (bytes: {sizes})", flush=True
                )
    for impl, points in peaks.items():
        if len(points) > 1:
            (p0, m0), (p1, m1) = points[0], points[-1]
            per_page = (m1 - m0) * 1024 * 1024 / max(1, p1 - p0)
            print(
                f"{impl:>3} peak RSS by pages: "
                + ", ".join(f"{p:,} -> {m:.1f} MiB" for p, m in points)
                + f" ({per_page:.0f} bytes per page between the first and last size)",
                flush=True,
            )


if __name__ == "__main__":
    main()
