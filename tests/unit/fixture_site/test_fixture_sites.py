"""The canned sites: the demo shop is crawled here by a small reference crawler and must match
DEMO_EXPECTED exactly; the politeness scenarios must follow their scripts."""

from __future__ import annotations

import re
import time
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, urlencode, urljoin, urlsplit, urlunsplit

import httpx
import pytest
from protego import Protego
from selectolax.lexbor import LexborHTMLParser as HTMLParser

from infra.fixture_site import FixtureServer
from infra.fixture_site._demo import DESIGNED_DEFECTS, META_DESC_CHARS, TITLE_CHARS
from infra.fixture_site.sites import (
    BLOCKED_PREFIX,
    DEMO,
    DEMO_EXPECTED,
    PARTNER,
    crawl_delay_site,
    demo_sites,
    flaky_site,
    retry_after_site,
    robots_404_site,
    robots_503_site,
    robots_hang_site,
    robots_redirect_site,
    slow_site,
)

E = DEMO_EXPECTED
TRACKING = {"utm_source", "utm_medium", "utm_campaign", "utm_term", "utm_content", "fbclid", "gclid"}
WAF_SIGNATURES = (
    "cf-browser-verification",
    "checking your browser before accessing",
    "cloudflare ray id",
    "/cdn-cgi/challenge-platform/",
    "akamai bot manager",
    "geo.captcha-delivery.com",
    "datadome",
    "incapsula incident id",
)


def normalize(base: str, href: str) -> str:
    """A reference normalizer for this test: resolve, drop fragment and tracking, sort the query."""
    parts = urlsplit(urljoin(base, href))
    path = re.sub("/{2,}", "/", parts.path) or "/"
    query = sorted((k, v) for k, v in parse_qsl(parts.query, keep_blank_values=True) if k not in TRACKING)
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), path, urlencode(query), ""))


def target(url: str) -> str:
    parts = urlsplit(url)
    return parts.path + (f"?{parts.query}" if parts.query else "")


@dataclass
class Crawl:
    status: dict[str, int] = field(default_factory=dict)
    depth: dict[str, int] = field(default_factory=dict)
    edges: set[tuple[str, str]] = field(default_factory=set)
    external: set[tuple[str, str]] = field(default_factory=set)
    disallowed: set[str] = field(default_factory=set)
    pages: dict[str, HTMLParser] = field(default_factory=dict)
    sitemap: set[str] = field(default_factory=set)


def crawl(client: httpx.Client, base: str) -> Crawl:
    """Breadth-first from '/', then from sitemap URLs nobody linked; obeys robots.txt, skips the trap."""
    robots = client.get(base + "/robots.txt")
    rules = Protego.parse(robots.text)
    result = Crawl()
    for sitemap_url in rules.sitemaps:
        sitemap = HTMLParser(client.get(sitemap_url).text)
        result.sitemap = {target(loc.text()) for loc in sitemap.css("loc")}
    linked: set[str] | None = None
    queue = deque([("/", 0)])
    queued = {"/"}
    while True:
        while queue:
            path, depth = queue.popleft()
            result.depth[path] = depth
            response = client.get(base + path)
            result.status[path] = response.status_code
            hrefs: list[str] = []
            if response.is_redirect:
                hrefs = [response.headers["location"]]
            elif response.status_code == 200:
                tree = HTMLParser(response.text)
                result.pages[path] = tree
                hrefs = [str(a.attributes["href"]) for a in tree.css("a[href]")]
            for href in hrefs:
                url = normalize(base + path, href)
                if not url.startswith(base + "/"):
                    result.external.add((path, url))
                    continue
                link = target(url)
                if not response.is_redirect:
                    result.edges.add((path, link))
                if link.startswith(E.trap_prefix):
                    continue
                if not rules.can_fetch(base + link, "SEOLens"):
                    result.disallowed.add(link)
                elif link not in queued:
                    queued.add(link)
                    queue.append((link, depth + 1))
        if linked is not None:
            return result
        linked = set(result.status)
        orphans = sorted(result.sitemap - linked)
        queued.update(orphans)
        queue.extend((path, 0) for path in orphans)


def defects(pages: dict[str, HTMLParser], thin: int) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {code: set() for code in E.defects}
    titles: dict[str, list[str]] = {}
    descriptions: dict[str, list[str]] = {}
    for path, tree in pages.items():
        title = tree.css_first("title")
        if title is None:
            found["missing_title"].add(path)
        else:
            titles.setdefault(title.text(), []).append(path)
            if len(title.text()) < TITLE_CHARS[0]:
                found["title_too_short"].add(path)
            if len(title.text()) > TITLE_CHARS[1]:
                found["title_too_long"].add(path)
        h1s = len(tree.css("h1"))
        if h1s == 0:
            found["missing_h1"].add(path)
        if h1s > 1:
            found["multiple_h1"].add(path)
        meta = tree.css_first('meta[name="description"]')
        if meta is None:
            found["missing_meta_description"].add(path)
        else:
            description = str(meta.attributes["content"])
            descriptions.setdefault(description, []).append(path)
            if len(description) < META_DESC_CHARS[0]:
                found["meta_description_too_short"].add(path)
            if len(description) > META_DESC_CHARS[1]:
                found["meta_description_too_long"].add(path)
        robots = tree.css_first('meta[name="robots"]')
        if robots is not None and "noindex" in str(robots.attributes.get("content")):
            found["noindex"].add(path)
        canonical = tree.css_first('link[rel="canonical"]')
        if canonical is not None and not str(canonical.attributes["href"]).endswith(path):
            found["canonical_elsewhere"].add(path)
        assert tree.body is not None
        if len(tree.body.text(separator=" ").split()) < thin:
            found["thin_content"].add(path)
    found["duplicate_title"] = {p for paths in titles.values() if len(paths) > 1 for p in paths}
    found["duplicate_meta_description"] = {p for ps in descriptions.values() if len(ps) > 1 for p in ps}
    return found


@pytest.fixture(scope="module")
def demo() -> Iterator[FixtureServer]:
    with FixtureServer(demo_sites()) as server:
        yield server


@pytest.fixture(scope="module")
def demo_crawl(demo: FixtureServer) -> Crawl:
    with httpx.Client(trust_env=False, timeout=5.0) as client:
        return crawl(client, demo.base_url(DEMO))


def test_expected_facts_have_the_designed_shape() -> None:
    assert 25 <= len(E.pages) <= 40
    assert len(E.orphans) == 5
    assert max(E.depth.values()) == 4
    assert E.disallowed and not E.disallowed & E.crawlable
    assert all(E.defects[code] for code in DESIGNED_DEFECTS), E.defects
    assert not any(paths for code, paths in E.defects.items() if code not in DESIGNED_DEFECTS), E.defects
    assert len(E.defects["duplicate_title"]) == 2
    assert E.broken == {"/blog/old-post"}
    assert E.redirect_chains["/old-sale"] == ("/promo", "/shop/sale")
    assert len(E.product_spellings) == 10 and len(set(E.product_spellings)) == 10
    assert E.external == {("/", PARTNER, "/")}
    assert not E.orphans & {dst for _, dst in E.edges}


def test_product_spellings_all_mean_one_url() -> None:
    base = "http://127.0.0.1:8123"
    page = base + E.product_page
    spellings = [s.replace("{origin}", base).replace("{hostport}", base[7:]) for s in E.product_spellings]
    assert {normalize(page, href) for href in spellings} == {base + E.product}
    assert {normalize(page, href) for href in E.search_spellings} == {base + E.search_target}


def test_served_demo_matches_expected_statuses_and_graph(demo: FixtureServer, demo_crawl: Crawl) -> None:
    assert demo_crawl.status == dict(E.status)
    assert set(demo_crawl.status) == E.crawlable
    assert demo_crawl.edges == E.edges
    assert demo_crawl.disallowed == E.disallowed
    assert demo_crawl.sitemap == E.sitemap
    assert demo_crawl.sitemap - E.linked == E.orphans
    assert {p: d for p, d in demo_crawl.depth.items() if p in E.linked} == dict(E.depth)
    partner = demo.base_url(PARTNER)
    assert demo_crawl.external == {(src, partner + path) for src, _, path in E.external}
    # the crawl obeyed robots.txt and never fell into the trap past its first link
    assert not [p for p in demo.paths(DEMO) if p.startswith(("/private/", E.trap_prefix))]


def test_served_demo_pages_have_exactly_the_expected_defects(demo_crawl: Crawl) -> None:
    found = defects(demo_crawl.pages, E.thin_words)
    assert found == {code: set(paths) for code, paths in E.defects.items()}
    titles = {
        p: (t.text() if (t := tree.css_first("title")) else None) for p, tree in demo_crawl.pages.items()
    }
    assert titles == dict(E.titles)


def test_waf_page_carries_cloudflare_signatures_and_the_prose_page_none(demo: FixtureServer) -> None:
    with httpx.Client(base_url=demo.base_url(DEMO), trust_env=False) as client:
        waf = client.get(next(iter(E.waf)))
        prose = client.get(next(iter(E.cloudflare_prose)))
    assert waf.status_code == 403 and waf.headers["server"] == "cloudflare"
    assert "cf-ray" in waf.headers
    body = waf.text.lower()
    assert all(sig in body for sig in WAF_SIGNATURES[:4])
    assert prose.status_code == 200 and "cloudflare" in prose.text.lower()
    assert not [sig for sig in WAF_SIGNATURES if sig in prose.text.lower()]


def test_demo_pages_are_gzipped_only_when_accepted(demo: FixtureServer) -> None:
    with httpx.Client(base_url=demo.base_url(DEMO), trust_env=False) as client:
        zipped = client.get("/shop")
        plain = client.get("/shop", headers={"Accept-Encoding": "identity"})
    assert zipped.headers.get("content-encoding") == "gzip"
    assert "content-encoding" not in plain.headers
    assert zipped.text == plain.text


@pytest.mark.parametrize(
    ("query", "month", "next_month"),
    [
        ("month=2024-11", "2024-11", "2024-12"),
        ("month=2024-12", "2024-12", "2025-01"),
        ("month=bad", "2024-01", "2024-02"),
    ],
)
def test_calendar_links_the_next_month_forever(
    demo: FixtureServer, query: str, month: str, next_month: str
) -> None:
    with httpx.Client(base_url=demo.base_url(DEMO), trust_env=False) as client:
        tree = HTMLParser(client.get(f"{E.trap_prefix}?{query}").text)
    title = tree.css_first("title")
    assert title is not None and month in title.text()
    hrefs = [a.attributes["href"] for a in tree.css("a[href]")]
    assert f"{E.trap_prefix}?month={next_month}" in hrefs


# Politeness scenarios


@pytest.fixture
def one_site() -> Iterator[list[FixtureServer]]:
    servers: list[FixtureServer] = []
    yield servers
    for server in servers:
        server.stop()


def _client(servers: list[FixtureServer], site: object) -> tuple[FixtureServer, httpx.Client]:
    server = FixtureServer([site])  # type: ignore[list-item]
    server.start()
    servers.append(server)
    name = next(iter(server.sites))
    return server, httpx.Client(base_url=server.base_url(name), trust_env=False, timeout=5.0)


def test_crawl_delay_site_robots_and_page_graph(one_site: list[FixtureServer]) -> None:
    _, client = _client(one_site, crawl_delay_site(delay=0.5, pages=3))
    with client:
        assert "Crawl-delay: 0.5" in client.get("/robots.txt").text
        home = [a.attributes["href"] for a in HTMLParser(client.get("/").text).css("a")]
        last = [a.attributes["href"] for a in HTMLParser(client.get("/p/3").text).css("a")]
        assert (home, last) == (["/p/1", "/p/2", "/p/3"], ["/"])
        assert client.get("/p/4").status_code == 404


def test_retry_after_site_answers_429_for_the_announced_time(one_site: list[FixtureServer]) -> None:
    _, client = _client(one_site, retry_after_site(seconds=1, ok_requests=2))
    with client:
        assert [client.get(f"/p/{n}").status_code for n in (1, 2)] == [200, 200]
        limited = client.get("/p/3")
        assert (limited.status_code, limited.headers["retry-after"]) == (429, "1")
        assert client.get("/robots.txt").status_code == 200
        assert client.get("/p/3").status_code == 429
        time.sleep(1.05)
        assert client.get("/p/3").status_code == 200


def _flaky_statuses(servers: list[FixtureServer]) -> tuple[list[int], list[int]]:
    server, client = _client(servers, flaky_site(ok_requests=5, flaky_seconds=0.6, error_rate=0.3, seed=7))
    with client:
        during = [client.get(f"/p/{1 + n % 20}").status_code for n in range(35)]
        time.sleep(0.65)
        after = [client.get("/").status_code for _ in range(5)]
    server.stop()
    return during, after


def test_flaky_site_fails_a_seeded_share_then_recovers(one_site: list[FixtureServer]) -> None:
    during, after = _flaky_statuses(one_site)
    again, _ = _flaky_statuses(one_site)
    assert during[:5] == [200] * 5
    assert set(during) == {200, 503}
    assert 0.1 < during[5:].count(503) / 30 < 0.6
    assert during == again
    assert after == [200] * 5


def test_slow_site_latency_climbs(one_site: list[FixtureServer]) -> None:
    server, client = _client(one_site, slow_site(start=0.0, end=0.3, over=0.5))
    with client:
        client.get("/robots.txt")
        client.get("/")
        time.sleep(0.5)
        client.get("/p/1")
    durations = {r.path: r.duration or 0.0 for r in server.settled_log()}
    assert durations["/robots.txt"] < 0.1 and durations["/"] < 0.1
    assert durations["/p/1"] >= 0.28


def test_robots_failure_sites(one_site: list[FixtureServer]) -> None:
    _, client = _client(one_site, robots_503_site())
    with client:
        assert client.get("/robots.txt").status_code == 503
    _, client = _client(one_site, robots_404_site())
    with client:
        assert client.get("/robots.txt").status_code == 404
        assert client.get(BLOCKED_PREFIX + "secret").status_code == 200
    server, client = _client(one_site, robots_hang_site())
    with client, pytest.raises(httpx.ReadTimeout):
        client.get("/robots.txt", timeout=httpx.Timeout(5.0, read=0.2))
    assert server.wait_until(lambda s: s.log()[-1].outcome == "client_gone", 2.0)


def test_robots_redirect_site_leads_to_rules_after_two_hops(one_site: list[FixtureServer]) -> None:
    _, client = _client(one_site, robots_redirect_site())
    with client:
        robots = client.get("/robots.txt", follow_redirects=True)
        home = [a.attributes["href"] for a in HTMLParser(client.get("/").text).css("a")]
    assert [r.status_code for r in robots.history] == [301, 302]
    rules = Protego.parse(robots.text)
    assert not rules.can_fetch("http://x/blocked/secret", "SEOLens")
    assert rules.can_fetch("http://x/open/page", "SEOLens")
    assert {BLOCKED_PREFIX + "secret", "/open/page"} <= set(home)
