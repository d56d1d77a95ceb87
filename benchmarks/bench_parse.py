"""Benchmark extract_page: pages/s on generated ~50 KB and ~1 MB pages (plus a hostile deep page).

Run: `python benchmarks/bench_parse.py [--seconds 3]`. Prints one line per case.
"""

from __future__ import annotations

import argparse
import random
import time

from seolens_core.audit import detect_waf
from seolens_core.html import extract_page

WORDS = [
    "crawler",
    "audit",
    "page",
    "title",
    "search",
    "engine",
    "content",
    "link",
    "index",
    "robots",
    "sitemap",
    "canonical",
]


def generate_page(target_bytes: int, rng: random.Random) -> bytes:
    """A plausible article page: head metadata, nav links, paragraphs with inline links, images, scripts."""
    head = (
        "<!doctype html><html lang='en'><head><meta charset='utf-8'>"
        "<title>Generated page for benchmarks</title>"
        "<meta name='description' content='A generated page.'><link rel='canonical' href='/page'>"
        "<link rel='alternate' hreflang='de' href='/de/page'><meta property='og:title' content='Gen'>"
        '<script type="application/ld+json">{"@type":"Article","author":{"@type":"Person"}}</script>'
        "<style>body{font:16px sans-serif}.nav a{margin:0 4px}</style></head><body>"
        "<header class='nav'>"
        + "".join(f"<a href='/section/{i}'>Section {i}</a>" for i in range(40))
        + "</header>"
        "<main><h1>Generated heading</h1>"
    )
    parts = [head]
    size = len(head)
    n = 0
    while size < target_bytes:
        n += 1
        sentence = " ".join(rng.choice(WORDS) for _ in range(60))
        alt = ' alt="pic"' if n % 3 else ""
        rel = "nofollow" if n % 7 == 0 else ""
        block = (
            f"<section><h2>Part {n}</h2><div class='row'><p>{sentence} "
            f"<a href='/article/{n}?ref=x' rel='{rel}'>read more {n}</a> "
            f"{sentence}</p><img src='/img/{n}.jpg'{alt}></div>"
            f"<script>window.track && track({n});</script></section>"
        )
        parts.append(block)
        size += len(block)
    parts.append("</main><footer><p>Footer</p></footer></body></html>")
    return "".join(parts).encode()


def bench(name: str, body: bytes, seconds: float, call: object) -> None:
    assert callable(call)
    call(body)  # warm-up
    count = 0
    started = time.perf_counter()
    while (elapsed := time.perf_counter() - started) < seconds:
        call(body)
        count += 1
    rate = count / elapsed
    print(
        f"{name:<34} {len(body) / 1024:>8.0f} KiB {rate:>9.1f} pages/s {1000 / rate:>8.2f} ms/page"
        f" {rate * len(body) / 1e6:>7.1f} MB/s"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=3.0, help="time per case")
    args = parser.parse_args()
    rng = random.Random(7)
    small = generate_page(50 * 1024, rng)
    large = generate_page(1024 * 1024, rng)
    deep = ("<html><body>" + "<div>" * 100_000 + "deep" + "</div>" * 100_000 + "</body></html>").encode()

    def extract(body: bytes) -> object:
        return extract_page(body, url="https://example.com/page", content_type="text/html; charset=utf-8")

    def waf(body: bytes) -> object:
        return detect_waf(body, {"content-type": "text/html"}, status=200)

    bench("extract_page 50 KB", small, args.seconds, extract)
    bench("extract_page 1 MB", large, args.seconds, extract)
    bench("extract_page 100k nested divs", deep, args.seconds, extract)
    bench("detect_waf 50 KB (no signature)", small, args.seconds, waf)
    bench("detect_waf 1 MB (no signature)", large, args.seconds, waf)


if __name__ == "__main__":
    main()
