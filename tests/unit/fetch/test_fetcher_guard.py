"""Fetcher + SSRF guard on the fixture server: refused connections send zero bytes to the refused host."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from infra.fixture_site import FixtureServer, SiteSpec
from infra.fixture_site._routes import html, redirect
from seolens_core.fetch import AddressPolicy, Fetcher, FetchErrorKind, FetchResult


@pytest.fixture(scope="module")
def server() -> Iterator[FixtureServer]:
    start = SiteSpec(
        "start",
        {"/": html("<a href='/x'>x</a>"), "/go": lambda req, ctx: redirect(ctx.url("/secret", site="inner"))},
        ip="127.0.0.1",
    )
    inner = SiteSpec("inner", {"/secret": html("secret")}, ip="127.0.0.3")
    with FixtureServer([start, inner]) as srv:
        yield srv


def _fetch(policy: AddressPolicy, url: str, resolver_map: dict[str, list[str]] | None = None) -> FetchResult:
    async def resolver(host: str, port: int) -> list[str]:
        return (resolver_map or {}).get(host, [])

    async def go() -> FetchResult:
        fetcher = Fetcher(user_agent="SEOLensTest/1", policy=policy, http2=False, resolver=resolver)
        try:
            return await fetcher.fetch(url)
        finally:
            await fetcher.aclose()

    return asyncio.run(go())


def _policy(server: FixtureServer) -> AddressPolicy:
    host, port = server.host_port("start")
    return AddressPolicy.for_hosts([f"{host}:{port}"])


def test_trusted_start_host_is_fetched(server: FixtureServer) -> None:
    result = _fetch(_policy(server), server.url("start", "/"))
    assert result.status == 200 and result.address == "127.0.0.1"


def test_untrusted_loopback_ip_receives_zero_requests(server: FixtureServer) -> None:
    server.clear_log()
    result = _fetch(_policy(server), server.url("inner", "/secret"))
    assert result.error is not None and result.error.kind is FetchErrorKind.SSRF_BLOCKED
    assert server.log("inner") == []


def test_redirect_is_returned_not_followed(server: FixtureServer) -> None:
    server.clear_log()
    result = _fetch(_policy(server), server.url("start", "/go"))
    assert result.status in (301, 302) and result.location is not None
    assert server.log("inner") == []
    hop = _fetch(_policy(server), result.location)  # the worker fetches each hop as a new URL: guarded again
    assert hop.error is not None and hop.error.kind is FetchErrorKind.SSRF_BLOCKED
    assert server.log("inner") == []


def test_name_resolving_to_loopback_is_refused_and_not_connected(server: FixtureServer) -> None:
    _, port = server.host_port("inner")
    server.clear_log()
    result = _fetch(_policy(server), f"http://rebind.test:{port}/secret", {"rebind.test": ["127.0.0.3"]})
    assert result.error is not None and result.error.kind is FetchErrorKind.SSRF_BLOCKED
    assert server.log("inner") == []


def test_connection_goes_to_the_checked_address(server: FixtureServer) -> None:
    """An allowed name is connected at the address that was checked, with the real Host header."""
    _, port = server.host_port("start")
    policy = AddressPolicy.for_hosts([f"shop.test:{port}"])
    server.clear_log()
    result = _fetch(policy, f"http://shop.test:{port}/", {"shop.test": ["127.0.0.1"]})
    assert result.status == 200 and result.address == "127.0.0.1"
    records = server.log("start")
    assert records and records[-1].header("host") == f"shop.test:{port}"
