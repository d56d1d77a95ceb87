"""The fetcher is stateless: a site's cookies are never sent back, only the user's configured Cookie header.

A crawl is spread over many containers, each with its own client: a cookie jar would make what a page
sees depend on which container fetched it, and on what that container fetched before (Googlebot, whose
view an audit reproduces, crawls without cookies)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx
import pytest

from infra.fixture_site import FixtureServer, SiteSpec
from infra.fixture_site._routes import html
from seolens_core.fetch import AddressPolicy, Fetcher


@pytest.fixture(scope="module")
def server() -> Iterator[FixtureServer]:
    site = SiteSpec(
        "cookies",
        {
            "/set": html("<p>set</p>", headers=[("Set-Cookie", "session=abc; Path=/")]),
            "/next": html("<p>next</p>"),
        },
        ip="127.0.0.1",
    )
    with FixtureServer([site]) as srv:
        yield srv


def _cookies_sent(server: FixtureServer, extra: dict[str, str]) -> list[str | None]:
    host, port = server.host_port("cookies")

    async def go() -> None:
        fetcher = Fetcher(
            user_agent="SEOLensTest/1", policy=AddressPolicy.for_hosts([f"{host}:{port}"]), http2=False
        )
        try:
            for path in ("/set", "/next", "/set", "/next"):
                result = await fetcher.fetch(server.url("cookies", path), headers=extra)
                assert result.status == 200
        finally:
            await fetcher.aclose()

    before = len(server.log("cookies"))
    asyncio.run(go())
    return [r.header("cookie") for r in server.log("cookies")[before:]]


def test_a_sites_cookies_are_not_sent_back(server: FixtureServer) -> None:
    assert _cookies_sent(server, {}) == [None, None, None, None]


def test_only_the_configured_cookie_is_sent(server: FixtureServer) -> None:
    assert _cookies_sent(server, {"Cookie": "consent=yes"}) == ["consent=yes"] * 4


def test_a_response_is_not_even_handed_to_a_cookie_jar(
    server: FixtureServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """httpx builds urllib's stand-ins of each request and response for its jar; the fetcher's client builds
    none (and its cookies cannot be set)."""
    built: list[object] = []
    original = httpx.Cookies._CookieCompatRequest.__init__

    def counting(self: object, request: httpx.Request) -> None:
        built.append(request)
        original(self, request)  # type: ignore[arg-type]

    monkeypatch.setattr(httpx.Cookies._CookieCompatRequest, "__init__", counting)
    assert _cookies_sent(server, {}) == [None, None, None, None]
    assert built == []
    fetcher = Fetcher(user_agent="SEOLensTest/1", policy=AddressPolicy.for_hosts([]), http2=False)
    with pytest.raises(AttributeError):
        fetcher._client.cookies = {"session": "abc"}  # type: ignore[attr-defined]
    asyncio.run(fetcher.aclose())
