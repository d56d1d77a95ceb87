"""Memory benchmark: parse a generated 50,000-URL gzip sitemap in 64 KiB chunks; print time and peak memory.

Run: python benchmarks/bench_sitemap_memory.py [--urls 50000] [--loc-length 220] [--chunk 65536]
The sitemap is generated gzip-compressed in memory before measuring (the uncompressed XML is never held),
so ru_maxrss before/after shows what parsing adds. A second pass under tracemalloc gives the heap peak.
"""

from __future__ import annotations

import argparse
import resource
import time
import tracemalloc
import zlib

from seolens_core.sitemaps import SitemapParser, SitemapResult

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"


def make_loc(i: int, length: int) -> str:
    head = f"https://shop.example.test/catalogue/department-{i % 97}/category-{i % 13}/product-{i:06d}-"
    return head + "abcdefghij" * max(0, (length - len(head)) // 10)


def generate(urls: int, loc_length: int) -> tuple[bytes, int]:
    """Gzip sitemap built record by record; returns (compressed bytes, uncompressed size)."""
    z = zlib.compressobj(6, zlib.DEFLATED, 31)
    parts: list[bytes] = []
    raw = 0
    head = f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{NS}">\n'.encode()
    raw += len(head)
    parts.append(z.compress(head))
    for i in range(urls):
        rec = (
            f"<url><loc>{make_loc(i, loc_length)}</loc><lastmod>2024-01-{i % 28 + 1:02d}</lastmod>"
            f"<changefreq>weekly</changefreq><priority>0.5</priority></url>\n"
        ).encode()
        raw += len(rec)
        parts.append(z.compress(rec))
    tail = b"</urlset>\n"
    raw += len(tail)
    parts.append(z.compress(tail))
    parts.append(z.flush())
    return b"".join(parts), raw


def parse(data: bytes, chunk: int) -> tuple[int, SitemapResult, int]:
    """Feed `data` in chunks; returns (entries seen, result, largest buffered_bytes between feeds)."""
    parser = SitemapParser()
    seen = 0
    max_buffered = 0
    view = memoryview(data)
    for i in range(0, len(data), chunk):
        seen += len(parser.feed(view[i : i + chunk]))
        max_buffered = max(max_buffered, parser.buffered_bytes)
    result = parser.close()
    return seen + len(result.tail), result, max_buffered


def maxrss_mib() -> float:
    # Linux reports ru_maxrss in KiB.
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--urls", type=int, default=50_000)
    ap.add_argument("--loc-length", type=int, default=220)
    ap.add_argument("--chunk", type=int, default=64 * 1024)
    args = ap.parse_args()

    data, raw = generate(args.urls, args.loc_length)
    print(f"sitemap: {args.urls} urls, {raw / 2**20:.1f} MiB uncompressed, {len(data) / 2**20:.2f} MiB gzip")

    rss_before = maxrss_mib()
    t0 = time.perf_counter()
    seen, result, max_buffered = parse(data, args.chunk)
    seconds = time.perf_counter() - t0
    rss_after = maxrss_mib()
    mib = 2**20
    print(f"entries parsed: {seen} (kind={result.kind.value}, complete={result.complete})")
    print(f"findings: {result.findings}")
    print(f"seconds: {seconds:.2f} ({seen / seconds:,.0f} entries/s, {raw / mib / seconds:.1f} MiB/s)")
    growth = rss_after - rss_before
    print(f"ru_maxrss: before {rss_before:.1f} MiB, after {rss_after:.1f} MiB, growth {growth:.1f} MiB")
    print(f"largest parser buffer between feeds: {max_buffered / 1024:.1f} KiB")

    tracemalloc.start()
    base, _ = tracemalloc.get_traced_memory()
    parse(data, args.chunk)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    held = len(data) / mib
    print(
        f"tracemalloc peak during parse: {(peak - base) / mib:.2f} MiB (plus the {held:.2f} MiB input held)"
    )


if __name__ == "__main__":
    main()
