"""The crawl scope's link-target memory: a remembered target is the one a fresh resolution gives, on any page."""

from __future__ import annotations

import itertools

import pytest

from seolens_core.crawl import _links
from seolens_core.crawl._links import CrawlScope, LinkTarget, RawHref, plan_links
from seolens_core.frontier import FrontierMessage
from seolens_core.settings import CrawlSettings
from seolens_core.urls import NormalizedURL, check_traps, normalize, url_key_hex

NOW = 1_790_000_000.0
SETTINGS = CrawlSettings(start_urls=("https://shop.example/",), max_depth=10)
HREFS = (
    "/a/b.html",
    "/a/../c.html?utm_source=x&b=2&a=1",
    "b.html",
    "../up.html",
    "./",
    "",
    "?page=2",
    "#top",
    "//cdn.example/lib.js",
    "https://shop.example/x/y/",
    "https://other.example/about",
    "HTTPS://SHOP.EXAMPLE:443/Z",
    "/calendar/2099/01/01/",
    "/a/a/a/a/a/a/a/a/",
    "javascript:void(0)",
    "mailto:a@b.example",
    "http://[::1",
)
BASES = (
    "https://shop.example/",
    "https://shop.example/dir/page.html?q=1",
    "https://shop.example/deep/er/path/",
    "https://blog.example/post/1",
)


def _base(url: str) -> NormalizedURL:
    result = normalize(url)
    assert isinstance(result, NormalizedURL)
    return result


def _fresh(scope: CrawlScope, href: str, base: NormalizedURL) -> LinkTarget | None:
    url = normalize(href, base, scope.normalize_config)
    if not isinstance(url, NormalizedURL):
        return None
    internal = scope.boundary.is_internal(url.host_port)
    return LinkTarget(
        url, internal, check_traps(url, scope.trap_config) if internal else None, url_key_hex(url.url)
    )


@pytest.mark.parametrize("order", ["forward", "backward"])
def test_a_remembered_target_is_the_fresh_resolution_on_every_page(order: str) -> None:
    scope = CrawlScope.from_settings(SETTINGS, NOW)
    pairs = list(itertools.product(HREFS, BASES))
    if order == "backward":
        pairs.reverse()
    for _ in range(2):  # the second pass answers from the memory
        for href, base in pairs:
            assert scope.target(href, _base(base)) == _fresh(scope, href, _base(base)), (href, base)


def test_an_absolute_path_resolves_on_the_host_of_its_page() -> None:
    scope = CrawlScope.from_settings(SETTINGS, NOW)
    on_shop = scope.target("/about", _base("https://shop.example/x"))
    on_blog = scope.target("/about", _base("https://blog.example/y"))
    assert on_shop is not None and on_shop.url.url == "https://shop.example/about" and on_shop.internal
    assert on_blog is not None and on_blog.url.url == "https://blog.example/about" and not on_blog.internal


def test_the_memory_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_links, "TARGET_CACHE_SIZE", 10)
    scope = CrawlScope.from_settings(SETTINGS, NOW)
    base = _base("https://shop.example/")
    for i in range(95):
        target = scope.target(f"/p/{i}", base)
        assert target is not None and target.url.url == f"https://shop.example/p/{i}"
        assert len(scope._targets) <= 10


def test_a_plan_from_a_warm_scope_is_the_plan_from_a_cold_one() -> None:
    warm = CrawlScope.from_settings(SETTINGS, NOW)
    links = [RawHref(h, f"text {i}", nofollow=i % 5 == 0) for i, h in enumerate(HREFS)]
    seen = {"enqueued": 0, "pruned": 0, "rejected": 0}
    for base in BASES:
        page = _base(base)
        msg = FrontierMessage(crawl_id="c", url=page.url, key=url_key_hex(page.url), depth=1)
        first = plan_links(msg, page, links, warm, SETTINGS)
        again = plan_links(msg, page, links, warm, SETTINGS)
        cold = plan_links(msg, page, links, CrawlScope.from_settings(SETTINGS, NOW), SETTINGS)
        assert first == again == cold
        assert all(m.key == url_key_hex(m.url) for m in cold.enqueue)
        seen["enqueued"] += len(cold.enqueue)
        seen["pruned"] += len(cold.pruned_rows)
        seen["rejected"] += cold.rejected
    assert all(seen.values()), seen


def test_links_known_claimed_elsewhere_get_edges_but_no_message() -> None:
    scope = CrawlScope.from_settings(SETTINGS, NOW)
    page = _base("https://shop.example/dir/page.html")
    msg = FrontierMessage(crawl_id="c", url=page.url, key=url_key_hex(page.url), depth=1)
    links = [RawHref(h) for h in HREFS]
    everything = plan_links(msg, page, links, scope, SETTINGS)
    known = {m.key for m in everything.enqueue[::2]}
    asked: list[str] = []

    def is_known(key: str) -> bool:
        asked.append(key)
        return key in known

    plan = plan_links(msg, page, links, scope, SETTINGS, known=is_known)
    assert plan.edges == everything.edges and plan.pruned_rows == everything.pruned_rows
    assert plan.enqueue == [m for m in everything.enqueue if m.key not in known]
    assert plan.enqueue_hosts == [
        h for m, h in zip(everything.enqueue, everything.enqueue_hosts, strict=True) if m.key not in known
    ]
    assert sorted(asked) == sorted(
        m.key for m in everything.enqueue
    )  # pruned and rejected links are not asked
