"""Sitemap discovery order and index recursion bounds (depth, cycles), driven through real index documents."""

from __future__ import annotations

import pytest

from seolens_core.sitemaps import (
    ALERT_SITEMAP_INDEX_CYCLE,
    ALERT_SITEMAP_INDEX_TOO_DEEP,
    ALERT_SITEMAP_TOO_MANY_SITEMAPS,
    SitemapKind,
    SitemapWalk,
    candidate_sitemaps,
    parse_sitemap,
)

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"


def index_doc(*children: str) -> bytes:
    body = "".join(f"<sitemap><loc>{c}</loc></sitemap>" for c in children)
    return f'<sitemapindex xmlns="{NS}">{body}</sitemapindex>'.encode()


def urlset_doc(*locs: str) -> bytes:
    body = "".join(
        f"<url><loc>{u}</loc><lastmod>2024-06-0{i + 1}</lastmod></url>" for i, u in enumerate(locs)
    )
    return f'<urlset xmlns="{NS}">{body}</urlset>'.encode()


def crawl(
    site: dict[str, bytes], roots: list[str], walk: SitemapWalk
) -> tuple[dict[str, str | None], list[str]]:
    """Breadth-first walk over in-memory sitemap bodies, the way the seed task drives parser and walk."""
    pages: dict[str, str | None] = {}
    findings: list[str] = []
    queue = [(r, 0) for r in roots]
    while queue:
        url, depth = queue.pop(0)
        decision = walk.should_fetch(url, depth)
        if not decision:
            assert decision.finding is not None
            findings.append(f"{decision.finding} {url}")
            continue
        entries, result = parse_sitemap(site[url])
        for e in entries:
            if e.kind == "sitemap":
                queue.append((e.loc, depth + 1))
            else:
                pages[e.loc] = e.lastmod
        assert result.kind in (SitemapKind.INDEX, SitemapKind.URLSET)
    return pages, findings


def test_recursion_three_levels_deep_then_stops() -> None:
    site = {
        "https://a.test/sitemap.xml": index_doc("https://a.test/l1.xml"),
        "https://a.test/l1.xml": index_doc("https://a.test/l2.xml", "https://a.test/pages1.xml"),
        "https://a.test/l2.xml": index_doc("https://a.test/l3.xml", "https://a.test/pages3.xml"),
        "https://a.test/l3.xml": index_doc("https://a.test/l4.xml", "https://a.test/pages4.xml"),
        "https://a.test/l4.xml": urlset_doc("https://a.test/too-deep"),
        "https://a.test/pages4.xml": urlset_doc("https://a.test/too-deep-too"),
        "https://a.test/pages1.xml": urlset_doc("https://a.test/p1"),
        "https://a.test/pages3.xml": urlset_doc("https://a.test/p3", "https://a.test/q3"),
    }
    pages, findings = crawl(site, ["https://a.test/sitemap.xml"], SitemapWalk(max_depth=3))
    assert pages == {
        "https://a.test/p1": "2024-06-01",
        "https://a.test/p3": "2024-06-01",
        "https://a.test/q3": "2024-06-02",
    }
    # Depth counts hops from the root: l3.xml (3) is read, its children (4) are not.
    assert findings == [
        f"{ALERT_SITEMAP_INDEX_TOO_DEEP} https://a.test/l4.xml",
        f"{ALERT_SITEMAP_INDEX_TOO_DEEP} https://a.test/pages4.xml",
    ]


def test_cycles_and_repeats_are_fetched_once() -> None:
    site = {
        "https://a.test/sitemap.xml": index_doc("https://a.test/b.xml", "https://a.test/pages.xml"),
        "https://a.test/b.xml": index_doc("https://a.test/sitemap.xml", "https://A.TEST/pages.xml#frag"),
        "https://a.test/pages.xml": urlset_doc("https://a.test/p"),
    }
    pages, findings = crawl(site, ["https://a.test/sitemap.xml"], SitemapWalk())
    assert pages == {"https://a.test/p": "2024-06-01"}
    assert findings == [
        f"{ALERT_SITEMAP_INDEX_CYCLE} https://a.test/sitemap.xml",
        f"{ALERT_SITEMAP_INDEX_CYCLE} https://A.TEST/pages.xml#frag",
    ]


def test_self_referencing_index_terminates() -> None:
    site = {"https://a.test/s.xml": index_doc("https://a.test/s.xml")}
    pages, findings = crawl(site, ["https://a.test/s.xml"], SitemapWalk())
    assert pages == {} and findings == [f"{ALERT_SITEMAP_INDEX_CYCLE} https://a.test/s.xml"]


@pytest.mark.parametrize(
    ("max_depth", "depth", "fetch", "finding"),
    [
        (3, 0, True, None),
        (3, 3, True, None),
        (3, 4, False, ALERT_SITEMAP_INDEX_TOO_DEEP),
        (0, 0, True, None),
        (0, 1, False, ALERT_SITEMAP_INDEX_TOO_DEEP),
    ],
)
def test_depth_table(max_depth: int, depth: int, fetch: bool, finding: str | None) -> None:
    decision = SitemapWalk(max_depth=max_depth).should_fetch("https://a.test/s.xml", depth)
    assert bool(decision) is fetch and decision.finding == finding


def test_too_deep_does_not_mark_seen() -> None:
    walk = SitemapWalk(max_depth=1)
    assert not walk.should_fetch("https://a.test/s.xml", 2)
    assert walk.should_fetch("https://a.test/s.xml", 1)


def test_max_sitemaps_bounds_the_walk() -> None:
    walk = SitemapWalk(max_sitemaps=2)
    assert walk.should_fetch("https://a.test/1.xml", 0)
    assert walk.should_fetch("https://a.test/2.xml", 1)
    assert walk.should_fetch("https://a.test/3.xml", 1).finding == ALERT_SITEMAP_TOO_MANY_SITEMAPS


def test_seen_state_round_trips_for_batched_seeding() -> None:
    first = SitemapWalk()
    assert first.should_fetch("https://a.test/s.xml", 0)
    resumed = SitemapWalk(seen=first.seen)
    assert resumed.should_fetch("https://a.test/s.xml", 1).finding == ALERT_SITEMAP_INDEX_CYCLE
    assert resumed.should_fetch("https://a.test/t.xml", 1)


def test_walk_validates_settings() -> None:
    with pytest.raises(ValueError):
        SitemapWalk(max_depth=-1)
    with pytest.raises(ValueError):
        SitemapWalk(max_sitemaps=0)


@pytest.mark.parametrize(
    ("origin", "robots", "expected"),
    [
        (
            "https://a.test",
            [],
            [
                "https://a.test/sitemap.xml",
                "https://a.test/sitemap_index.xml",
                "https://a.test/wp-sitemap.xml",
            ],
        ),
        (
            "https://a.test/",
            [
                "https://cdn.test/maps/main.xml.gz",
                " https://a.test/sitemap.xml ",
                "https://cdn.test/maps/main.xml.gz",
            ],
            [
                "https://cdn.test/maps/main.xml.gz",
                "https://a.test/sitemap.xml",
                "https://a.test/sitemap_index.xml",
                "https://a.test/wp-sitemap.xml",
            ],
        ),
        (
            "http://a.test:8080",
            ["/news-sitemap.xml", "ftp://a.test/x.xml", "", "javascript:alert(1)"],
            [
                "http://a.test:8080/news-sitemap.xml",
                "http://a.test:8080/sitemap.xml",
                "http://a.test:8080/sitemap_index.xml",
                "http://a.test:8080/wp-sitemap.xml",
            ],
        ),
    ],
)
def test_candidate_sitemaps_robots_first_then_probes(
    origin: str, robots: list[str], expected: list[str]
) -> None:
    assert candidate_sitemaps(origin, robots) == expected
