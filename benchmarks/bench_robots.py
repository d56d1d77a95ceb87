"""Benchmark: RobotsRules parse time and can_fetch checks/s on a realistic robots.txt (raw protego alongside).

Run: python benchmarks/bench_robots.py
"""

from __future__ import annotations

import random
import time

from protego import Protego

from seolens_core.robots import RobotsRules

_SHOP_SECTIONS = ["checkout", "cart", "account", "wishlist", "compare", "search", "api", "admin", "tmp"]
_FACETS = [
    "sort",
    "order",
    "dir",
    "limit",
    "mode",
    "price",
    "color",
    "size",
    "brand",
    "sessionid",
    "utm_source",
]


def realistic_robots(rng: random.Random) -> str:
    """An e-commerce style robots.txt: a big `*` group, a Googlebot group, a few bot groups, sitemaps."""
    lines = ["# robots.txt for www.example-shop.com", "User-agent: *"]
    lines += [f"Disallow: /{section}/" for section in _SHOP_SECTIONS]
    lines += [f"Disallow: /*?*{facet}=" for facet in _FACETS]
    lines += ["Disallow: /*.json$", "Disallow: /*.pdf$", "Disallow: /*/print$", "Allow: /api/public/"]
    lines += [f"Disallow: /catalog/category-{i}/filter/" for i in range(120)]
    lines += [f"Allow: /catalog/category-{i}/filter/featured" for i in range(0, 120, 7)]
    lines += ["Crawl-delay: 1", "", "User-agent: Googlebot", "User-agent: Googlebot-Image"]
    lines += [f"Disallow: /{section}/" for section in _SHOP_SECTIONS[:5]]
    lines += ["Disallow: /*?*sessionid=", "Allow: /search/popular/", "Disallow: /landing/*/preview$"]
    for bot in ("AhrefsBot", "SemrushBot", "MJ12bot", "DotBot", "PetalBot"):
        lines += ["", f"User-agent: {bot}", "Disallow: /"]
    lines += ["", "Sitemap: https://www.example-shop.com/sitemap_index.xml"]
    return "\n".join(lines) + "\n"


def realistic_paths(rng: random.Random, count: int) -> list[str]:
    """Crawl-like targets: product and category pages, facets, search, assets, some percent-encoded."""
    paths = []
    for _ in range(count):
        kind = rng.random()
        if kind < 0.4:
            paths.append(f"/catalog/category-{rng.randrange(200)}/product-{rng.randrange(10**6)}.html")
        elif kind < 0.6:
            facet = rng.choice(_FACETS)
            paths.append(f"/catalog/category-{rng.randrange(200)}?page={rng.randrange(50)}&{facet}=x")
        elif kind < 0.7:
            paths.append(f"/catalog/category-{rng.randrange(200)}/filter/{rng.choice(['featured', 'new'])}")
        elif kind < 0.8:
            paths.append(f"/{rng.choice(_SHOP_SECTIONS)}/{rng.randrange(1000)}")
        elif kind < 0.9:
            paths.append(f"/search/q?term=caf%C3%A9+{rng.randrange(1000)}")
        else:
            paths.append(
                f"/blog/{rng.randrange(2020, 2026)}/post-{rng.randrange(500)}/{rng.choice(['', 'print'])}"
            )
    return paths


def _rate(check: object, paths: list[str], repeat: int) -> float:
    fn = check  # a bound method; typed loosely to keep the loop tight
    start = time.perf_counter()
    for _ in range(repeat):
        for path in paths:
            fn(path)  # type: ignore[operator]
    return repeat * len(paths) / (time.perf_counter() - start)


def main() -> None:
    rng = random.Random(9309)
    text = realistic_robots(rng)
    paths = realistic_paths(rng, 20_000)
    start = time.perf_counter()
    for _ in range(50):
        rules = RobotsRules.parse(text)
    parse_ms = (time.perf_counter() - start) / 50 * 1000
    print(
        f"robots.txt: {len(text.encode())} bytes, {text.count(chr(10))} lines;"
        f" applied group {rules.applied_agent!r}"
    )
    print(f"RobotsRules.parse: {parse_ms:.2f} ms")
    allowed = sum(rules.can_fetch(p) for p in paths)
    print(f"allowed {allowed} of {len(paths)} sample targets")
    ours = _rate(rules.can_fetch, paths, 5)
    print(f"RobotsRules.can_fetch: {ours:,.0f} checks/s")
    star = RobotsRules.parse(text, ("SomeOtherBot", "*"))
    print(f"RobotsRules.can_fetch ('*' group applied): {_rate(star.can_fetch, paths, 5):,.0f} checks/s")
    proto = Protego.parse(text)
    urls = [f"https://www.example-shop.com{p}" for p in paths]
    raw = _rate(lambda url: proto.can_fetch(url, "SomeOtherBot"), urls, 5)
    print(f"raw protego can_fetch (same '*' group, for reference): {raw:,.0f} checks/s")
    big = "User-agent: *\n" + "".join(f"Disallow: /s{i:06d}/*.x$\nAllow: /s{i:06d}/\n" for i in range(9_000))
    start = time.perf_counter()
    big_rules = RobotsRules.parse(big)
    print(f"parse {len(big.encode()) // 1024} KiB, 18k rules: {(time.perf_counter() - start) * 1000:.0f} ms")
    print(f"can_fetch on 18k rules: {_rate(big_rules.can_fetch, paths[:2000], 1):,.0f} checks/s")


if __name__ == "__main__":
    main()
