"""Benchmark: normalized URLs per second on one core over a realistic, seeded mix of 100k hrefs.

Run: `python benchmarks/bench_normalize.py [--count N] [--seed S] [--repeat R]`. Prints URLs/s for the first
(cold cache) pass and the best of the following passes, with NormalizedURL bases and with string bases.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable
from urllib.parse import urljoin, urlsplit

from seolens_core.urls import NormalizedURL, Rejection, normalize

_WORDS = [
    "shoes",
    "men",
    "women",
    "sale",
    "blog",
    "news",
    "category",
    "product",
    "about",
    "help",
    "kids",
    "bags",
]
_HOSTS = ["shop.example.com", "www.example.com", "cdn.example.net", "blog.example.org", "example.co.uk"]
_IDN_HOSTS = ["bücher.de", "münchen.example", "пример.рф", "例え.jp", "straße.example"]
_TRACKING = [
    "utm_source=news",
    "utm_medium=email",
    "utm_campaign=spring",
    "fbclid=IwAR3x",
    "gclid=Cj0K",
    "ref=nav",
]
_FACETS = ["sort=price_desc", "order=date", "view=grid", "orderby=popularity"]
_PARAMS = ["color=red", "size=42", "page=2", "q=running+shoes", "id=1234", "lang=en", "brand=acme"]


def _path(rng: random.Random, depth: int) -> str:
    return "/".join(
        rng.choice(_WORDS) + (str(rng.randint(1, 999)) if rng.random() < 0.3 else "") for _ in range(depth)
    )


def _query(rng: random.Random) -> str:
    pool = rng.sample(_PARAMS, rng.randint(0, 3))
    if rng.random() < 0.4:
        pool += rng.sample(_TRACKING, rng.randint(1, 3))
    if rng.random() < 0.2:
        pool.append(rng.choice(_FACETS))
    rng.shuffle(pool)
    return "?" + "&".join(pool) if pool else ""


def _fragment(rng: random.Random) -> str:
    return "#" + rng.choice(["reviews", "top", "section-2", ""]) if rng.random() < 0.15 else ""


def make_hrefs(count: int, seed: int) -> list[str]:
    """`count` hrefs in roughly the proportions found on e-commerce and blog pages."""
    rng = random.Random(seed)
    makers: list[tuple[float, Callable[[], str]]] = [
        (0.25, lambda: _path(rng, rng.randint(1, 3)) + _query(rng) + _fragment(rng)),  # relative path
        (0.25, lambda: "/" + _path(rng, rng.randint(1, 4)) + _query(rng) + _fragment(rng)),  # absolute path
        (
            0.20,
            lambda: (
                rng.choice(["https://", "http://", "HTTPS://"])
                + rng.choice(_HOSTS)
                + rng.choice(["", "", ":443", ":80"])
                + "/"
                + _path(rng, rng.randint(1, 3))
                + _query(rng)
                + _fragment(rng)
            ),
        ),  # absolute URL
        (0.05, lambda: "//" + rng.choice(_HOSTS) + "/" + _path(rng, 2)),  # protocol-relative
        (
            0.07,
            lambda: rng.choice(["../", "./", "../../", "/a/./b/../", ""]) + _path(rng, 2) + "//x/./y",
        ),  # dots
        (0.04, lambda: "https://" + rng.choice(_IDN_HOSTS) + "/" + _path(rng, 1)),  # IDN
        (
            0.04,
            lambda: (
                "/" + rng.choice(["caf\u00e9", "%7Euser", "a%2fb", "100%", "na\u00efve path"]) + _query(rng)
            ),
        ),
        (0.05, lambda: rng.choice(["mailto:x@example.com", "javascript:void(0)", "tel:+123", "#top", ""])),
        (0.05, lambda: "?" + "&".join(rng.sample(_PARAMS + _FACETS, 3))),  # query-only, shuffled
    ]
    weights = [weight for weight, _ in makers]
    choices = rng.choices([maker for _, maker in makers], weights=weights, k=count)
    return [maker() for maker in choices]


def make_bases(count: int, seed: int) -> list[NormalizedURL]:
    rng = random.Random(seed + 1)
    bases = []
    for _ in range(count):
        result = normalize(f"https://{rng.choice(_HOSTS)}/{_path(rng, rng.randint(1, 3))}")
        assert isinstance(result, NormalizedURL)
        bases.append(result)
    return bases


def _run(pairs: list[tuple[str, NormalizedURL | str]]) -> tuple[float, float, int]:
    """Wall seconds, CPU seconds of this process (less sensitive to a busy machine), rejections."""
    start, start_cpu = time.perf_counter(), time.process_time()
    rejected = 0
    for href, base in pairs:
        if isinstance(normalize(href, base), Rejection):
            rejected += 1
    return time.perf_counter() - start, time.process_time() - start_cpu, rejected


def _run_stdlib(pairs: list[tuple[str, str]]) -> float:
    """Reference point only: urljoin + urlsplit, which resolve but do none of the normalization stages."""
    start = time.perf_counter()
    for href, base in pairs:
        urlsplit(urljoin(base, href))
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--count", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=20240501)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()

    hrefs = make_hrefs(args.count, args.seed)
    bases = make_bases(200, args.seed)
    rng = random.Random(args.seed + 2)
    # Links of one page resolve against one base: 50 consecutive hrefs share a base.
    with_urls = [(href, bases[(i // 50 + rng.randrange(2)) % len(bases)]) for i, href in enumerate(hrefs)]
    with_strings: list[tuple[str, NormalizedURL | str]] = [(href, base.url) for href, base in with_urls]
    with_objects: list[tuple[str, NormalizedURL | str]] = list(with_urls)

    stdlib_pairs = [(href, base.url) for href, base in with_urls]
    stdlib = min(_run_stdlib(stdlib_pairs) for _ in range(args.repeat))
    print(
        f"{'stdlib reference':>18}: {len(stdlib_pairs) / stdlib:>9,.0f} URLs/s "
        "(urljoin + urlsplit only, no normalization)"
    )
    for label, pairs in (("NormalizedURL base", with_objects), ("str base", with_strings)):
        cold, _, rejected = _run(pairs)
        runs = [_run(pairs) for _ in range(args.repeat)]
        best, best_cpu = min(run[0] for run in runs), min(run[1] for run in runs)
        print(
            f"{label:>18}: {len(pairs) / cold:>9,.0f} URLs/s first pass, "
            f"{len(pairs) / best:>9,.0f} URLs/s best of {args.repeat} "
            f"({len(pairs) / best_cpu:,.0f} per CPU second)  ({len(pairs):,} hrefs, {rejected:,} rejected)"
        )


if __name__ == "__main__":
    main()
