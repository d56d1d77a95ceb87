"""Redirect targets pass the guards links pass: the trap guards, and at most `fetch.max_redirect_hops` hops.

A redirect is never followed inline: its target is a new URL (a message one hop further). Before, the hop
limit was never read and a trap URL pruned as a link was enqueued when a page redirected to it.
"""

from __future__ import annotations

import pytest

from seolens_core.crawl._links import (
    ALERT_REDIRECT_HOPS_EXCEEDED,
    CrawlScope,
    RawHref,
    plan_links,
    plan_redirect,
)
from seolens_core.frontier import FrontierMessage
from seolens_core.settings import CrawlSettings
from seolens_core.urls import NormalizedURL, normalize, url_key_hex

NOW = 1_790_000_000.0
SIX_PARAMS = "/search?a=1&b=2&c=3&d=4&e=5&f=6"


def _page(url: str, hops: int = 0) -> tuple[FrontierMessage, NormalizedURL]:
    page = normalize(url)
    assert isinstance(page, NormalizedURL)
    return FrontierMessage("c1", page.url, url_key_hex(page.url), depth=1, hops=hops), page


def _settings(**fetch: int) -> CrawlSettings:
    return CrawlSettings.model_validate({"start_urls": ["https://shop.example/"], "fetch": fetch})


def test_a_trap_url_is_pruned_as_a_redirect_target_as_it_is_as_a_link() -> None:
    settings = _settings()
    scope = CrawlScope.from_settings(settings, NOW)
    msg, page = _page("https://shop.example/old")
    as_link = plan_links(msg, page, [RawHref(SIX_PARAMS)], scope, settings)
    as_redirect = plan_redirect(msg, page, SIX_PARAMS, scope, settings)
    assert as_link.enqueue == [] and as_redirect.enqueue == []
    [row] = as_redirect.pruned_rows
    assert row["alerts"] == as_link.pruned_rows[0]["alerts"] == ["ALERT_TRAP_TOO_MANY_PARAMS"]
    assert row["outcome"] == "pruned" and row["found_on"] == page.url
    assert as_redirect.edges[0]["redirect"] is True  # the hop is still an edge of the graph


@pytest.mark.parametrize("limit", [0, 1, 10])
def test_at_most_max_redirect_hops_are_followed(limit: int) -> None:
    settings = _settings(max_redirect_hops=limit)
    scope = CrawlScope.from_settings(settings, NOW)
    followed = 0
    msg, page = _page("https://shop.example/r/0")
    for n in range(1, 30):
        plan = plan_redirect(msg, page, f"/r/{n}", scope, settings)
        if not plan.enqueue:
            [row] = plan.pruned_rows
            assert (
                row["alerts"] == [ALERT_REDIRECT_HOPS_EXCEEDED]
                and f"more than {limit}" in row["alert_detail"]
            )
            break
        [msg] = plan.enqueue
        assert msg.hops == n and msg.depth == 1
        assert FrontierMessage.from_json(msg.to_json()).hops == n  # the count travels with the message
        page = normalize(msg.url)  # type: ignore[assignment]
        followed += 1
    assert followed == limit


def test_a_link_starts_a_new_chain() -> None:
    settings = _settings()
    scope = CrawlScope.from_settings(settings, NOW)
    msg, page = _page("https://shop.example/a", hops=7)
    [child] = plan_links(msg, page, [RawHref("/b")], scope, settings).enqueue
    assert child.hops == 0
