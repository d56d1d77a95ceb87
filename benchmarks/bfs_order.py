"""How far a crawl's fetch order is from true breadth-first order, measured on the fixture server's log.

A tree site (fanout F, depth D) is crawled; every request is labelled with its depth; the distance from BFS is
the share of request pairs fetched deeper-first (a normalised Kendall distance over depth labels: 0 = perfect
BFS, about 0.5 = random), plus the deepest level fetched while a shallower one still had pages waiting.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from infra.fixture_site import FixtureServer, SiteSpec, html, not_found, text
from infra.local.runtime import LocalCloud, run_crawl
from seolens_core.settings import CrawlSettings


def tree_site(fanout: int, depth: int, name: str = "tree") -> SiteSpec:
    def route(request: Any, ctx: Any) -> Any:
        path = request.path.split("?", 1)[0]
        parts = [p for p in path.split("/") if p and p != "t"]
        if path != "/" and not path.startswith("/t/"):
            return not_found()
        # Segment names differ per level ("a0/b2/c1"): repeated segments would trip the spider-trap guard.
        level = "abcdefghij"[len(parts)] if len(parts) < 10 else "z"
        children = (
            [] if len(parts) >= depth else [f"/t/{'/'.join([*parts, f'{level}{i}'])}" for i in range(fanout)]
        )
        body = "".join(f'<a href="{c}">{c}</a>' for c in children)
        return html(f"<html><head><title>tree page {path}</title></head><body>{body}</body></html>")

    return SiteSpec(
        name, {"/robots.txt": text("User-agent: *\nAllow: /\n"), "/sitemap.xml": not_found()}, fallback=route
    )


def depth_of(path: str) -> int:
    return 0 if path == "/" else len([p for p in path.split("/") if p and p != "t"])


@dataclass(frozen=True)
class BfsOrder:
    pages: int
    inversions: float  # share of pairs fetched deeper-first
    max_overtake: int  # deepest level minus the shallowest still-unfetched level, at the worst moment


def measure(depths: list[int]) -> BfsOrder:
    n = len(depths)
    inversions = sum(1 for i in range(n) for j in range(i + 1, n) if depths[i] > depths[j])
    pairs = n * (n - 1) // 2
    remaining: dict[int, int] = {}
    for d in depths:
        remaining[d] = remaining.get(d, 0) + 1
    overtake = 0
    for d in depths:
        shallowest = min(k for k, v in remaining.items() if v > 0)
        overtake = max(overtake, d - shallowest)
        remaining[d] -= 1
    return BfsOrder(n, inversions / pairs if pairs else 0.0, overtake)


def crawl_order(
    cloud: LocalCloud,
    out: Path,
    *,
    fanout: int,
    depth: int,
    bfs_slack: int | None,
    unordered: float,
    workers: int = 4,
) -> BfsOrder:
    with FixtureServer([tree_site(fanout, depth)]) as server:
        settings = CrawlSettings.model_validate(
            {
                "start_urls": [server.base_url("tree") + "/"],
                "progress_poll_s": 1,
                "bfs_slack": bfs_slack,
                "politeness": {
                    "aimd": False,
                    "initial_delay_ms": 0,
                    "initial_concurrency": 8,
                    "max_concurrency": 8,
                },
            }
        )
        run_crawl(cloud, settings, workers=workers, out_dir=out, unordered_queue=unordered)
        paths = [
            r.path
            for r in sorted(server.log("tree"), key=lambda r: r.start)
            if r.path.startswith(("/t/", "/"))
        ]
    pages = [p for p in paths if p == "/" or p.startswith("/t/")]
    return measure([depth_of(p) for p in pages])


def main() -> None:
    import tempfile

    with LocalCloud(stack_name="seolens-bench-bfs") as cloud, tempfile.TemporaryDirectory() as tmp:
        for unordered in (0.0, 0.5):
            for slack in (None, 1, 0):
                order = crawl_order(cloud, Path(tmp), fanout=4, depth=4, bfs_slack=slack, unordered=unordered)
                print(
                    f"queue disorder {unordered:.1f}  bfs_slack {slack!s:4}  pages {order.pages:4}  "
                    f"inversions {order.inversions:.3f}  max overtake {order.max_overtake}"
                )


if __name__ == "__main__":
    main()
