"""A generated static site for the throughput benchmark: N pages in a tree of depth 6, ~40 links each.

Page 0 is `/` (index.html); page i > 0 is `/p/i.html` with parent (i - 1) // B, where B is the smallest
branching factor with B**6 >= N, so the tree (and the crawl's BFS depth) is at most 6. Each page links
to: a shared navigation block (home + the first-level sections + 4 fixed pages), its breadcrumb
(ancestors), its children, and "related" pages on the same level (which never shorten the depth), up
to `links_per_page` links. robots.txt disallows /private/ (linked from the nav, never to be fetched) and
names a sitemap index over sitemaps of at most 5,000 URLs each.
"""

from __future__ import annotations

import math
from pathlib import Path

__all__ = ["SiteSpec", "generate_site", "page_path"]

DEPTH = 6
SITEMAP_CHUNK = 5000
_WORDS = [
    "crawl",
    "audit",
    "canonical",
    "sitemap",
    "robots",
    "index",
    "render",
    "status",
    "redirect",
    "anchor",
    "heading",
    "meta",
    "title",
    "description",
    "schema",
    "latency",
    "budget",
    "server",
    "cache",
    "origin",
    "header",
    "content",
    "quality",
]


class SiteSpec:
    def __init__(self, pages: int, links_per_page: int = 40) -> None:
        if pages < 2:
            raise ValueError("pages must be at least 2")
        self.pages = pages
        self.links_per_page = links_per_page
        self.branching: int = max(2, math.ceil(float(pages) ** (1 / DEPTH)))
        while self.branching**DEPTH < pages:
            self.branching += 1

    def parent(self, i: int) -> int:
        return (i - 1) // self.branching

    def children(self, i: int) -> range:
        first = i * self.branching + 1
        return range(min(first, self.pages), min(first + self.branching, self.pages))

    def level(self, i: int) -> int:
        depth = 0
        while i > 0:
            i = self.parent(i)
            depth += 1
        return depth

    def level_range(self, depth: int) -> range:
        first = 0 if depth == 0 else sum(self.branching**d for d in range(depth))
        count = self.branching**depth
        return range(min(first, self.pages), min(first + count, self.pages))


def page_path(i: int) -> str:
    return "/" if i == 0 else f"/p/{i}.html"


def _links(spec: SiteSpec, i: int) -> list[int]:
    nav = [0, *spec.children(0), *range(1, min(spec.pages, 5))]
    out: list[int] = []
    seen = {i}
    for j in [*nav, *_ancestors(spec, i), *spec.children(i)]:
        if j not in seen:
            seen.add(j)
            out.append(j)
    level = spec.level_range(spec.level(i))
    step = 7
    k = 1
    while len(out) < spec.links_per_page - 1 and k < len(level):
        j = level.start + (i - level.start + k * step) % len(level)
        if j not in seen:
            seen.add(j)
            out.append(j)
        k += 1
    return out


def _ancestors(spec: SiteSpec, i: int) -> list[int]:
    out = []
    while i > 0:
        i = spec.parent(i)
        out.append(i)
    return out


def _html(spec: SiteSpec, i: int) -> str:
    words = " ".join(_WORDS[(i + n) % len(_WORDS)] for n in range(120))
    links = "\n".join(f'<li><a href="{page_path(j)}">Page {j}</a></li>' for j in _links(spec, i))
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>Benchmark page {i}</title>"
        f'<meta name="description" content="Generated page {i} of {spec.pages} for the SEO Lens benchmark.">'
        f'<link rel="canonical" href="{page_path(i)}"></head>\n<body>\n'
        '<nav><a href="/private/admin.html">Admin</a></nav>\n'
        f"<h1>Page {i}</h1>\n<p>{words}</p>\n<p>{words}</p>\n<ul>\n{links}\n</ul>\n</body></html>\n"
    )


def generate_site(root: Path, pages: int, links_per_page: int = 40) -> SiteSpec:
    """Write the site under `root` (index.html, p/*.html, robots.txt, sitemaps) and return its spec."""
    spec = SiteSpec(pages, links_per_page)
    (root / "p").mkdir(parents=True, exist_ok=True)
    (root / "private").mkdir(exist_ok=True)
    (root / "private" / "admin.html").write_text("<html><title>private</title></html>", encoding="utf-8")
    for i in range(pages):
        target = root / "index.html" if i == 0 else root / "p" / f"{i}.html"
        target.write_text(_html(spec, i), encoding="utf-8")
    (root / "robots.txt").write_text(
        "User-agent: *\nDisallow: /private/\n\nSitemap: /sitemap_index.xml\n", encoding="utf-8"
    )
    return spec


def write_sitemaps(root: Path, spec: SiteSpec, origin: str) -> None:
    """Sitemaps need absolute URLs, so they are written once the server's origin is known."""
    names = []
    for n, start in enumerate(range(0, spec.pages, SITEMAP_CHUNK)):
        urls = "".join(
            f"<url><loc>{origin}{page_path(i)}</loc></url>"
            for i in range(start, min(start + SITEMAP_CHUNK, spec.pages))
        )
        name = f"sitemap-{n}.xml"
        (root / name).write_text(
            f'<?xml version="1.0" encoding="UTF-8"?><urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{urls}</urlset>',
            encoding="utf-8",
        )
        names.append(name)
    entries = "".join(f"<sitemap><loc>{origin}/{name}</loc></sitemap>" for name in names)
    (root / "sitemap_index.xml").write_text(
        f'<?xml version="1.0" encoding="UTF-8"?><sitemapindex xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">{entries}</sitemapindex>',
        encoding="utf-8",
    )
    (root / "robots.txt").write_text(
        f"User-agent: *\nDisallow: /private/\n\nSitemap: {origin}/sitemap_index.xml\n", encoding="utf-8"
    )
