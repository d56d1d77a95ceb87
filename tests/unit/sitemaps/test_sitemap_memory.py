"""Flat memory: a 50,000-URL multi-MB gzip sitemap fed in 64 KiB chunks leaves no growing buffer behind."""

from __future__ import annotations

import tracemalloc
import zlib
from collections.abc import Iterator

from seolens_core.sitemaps import SitemapParser

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"
CHUNK = 64 * 1024
URLS = 50_000


def loc(i: int) -> str:
    return (
        f"https://shop.example.test/catalogue/department-{i % 97}/category-{i % 13}/product-{i:06d}-"
        + "x" * 80
    )


def gzip_chunks(count: int) -> Iterator[bytes]:
    """The sitemap is produced gzip-compressed on the fly, so the test itself never holds the document."""
    z = zlib.compressobj(6, zlib.DEFLATED, 31)
    pending = bytearray(
        z.compress(f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset xmlns="{NS}">\n'.encode())
    )
    for i in range(count):
        record = f"<url><loc>{loc(i)}</loc><lastmod>2024-01-{i % 28 + 1:02d}</lastmod></url>\n"
        pending += z.compress(record.encode())
        while len(pending) >= CHUNK:
            yield bytes(pending[:CHUNK])
            del pending[:CHUNK]
    pending += z.compress(b"</urlset>\n") + z.flush()
    while pending:
        yield bytes(pending[:CHUNK])
        del pending[:CHUNK]


def parse_measured(count: int) -> tuple[int, int, int]:
    """Parse a generated sitemap of `count` URLs; return (entries, largest buffered_bytes, heap growth)."""
    parser = SitemapParser()
    seen = 0
    max_buffered = 0
    checksum = 0
    tracemalloc.start()
    try:
        baseline, _ = tracemalloc.get_traced_memory()
        for chunk in gzip_chunks(count):
            for entry in parser.feed(chunk):
                if seen % 9973 == 0:
                    assert entry.loc == loc(seen)
                checksum += len(entry.loc)
                seen += 1
            max_buffered = max(max_buffered, parser.buffered_bytes)
        result = parser.close()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    seen += len(result.tail)
    assert seen == result.entries == count and result.complete, result.findings
    assert checksum == sum(len(loc(i)) for i in range(count))
    if count == URLS:
        assert result.bytes_decompressed > 8 * 1024 * 1024, "the document must be multi-MB to mean anything"
    return seen, max_buffered, peak - baseline


def test_fifty_thousand_urls_parse_with_bounded_buffers_and_flat_heap() -> None:
    _, _, small_peak = parse_measured(URLS // 5)
    seen, max_buffered, peak = parse_measured(URLS)
    assert seen == URLS
    # Between feeds the parser holds at most one piece of input and one unfinished record.
    assert max_buffered <= CHUNK + 4096
    # Five times the document, same heap peak: what remains is one feed's worth of entries.
    assert peak < small_peak * 1.2 + 256 * 1024, f"heap peak {peak} vs {small_peak} for a fifth of the URLs"
    assert peak < 6 * 1024 * 1024, f"peak heap grew by {peak} bytes for a ~10 MiB document"
