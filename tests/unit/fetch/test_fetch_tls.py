"""TLS host names are checked for every host, however the pool reuses connections.

The fetcher connects to the checked IP address, so a.test and b.test on one IP:port share an origin in the
pool; a loopback TLS server holds a certificate for a.test only. b.test must fail its certificate check
whether or not a.test was fetched first.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from infra.fixture_site import FixtureServer, SiteSpec
from infra.fixture_site._routes import html
from infra.fixture_site._tls import TlsFixture
from seolens_core.fetch import AddressPolicy, Fetcher, FetchErrorKind, FetchResult
from seolens_core.fetch._client import POOL_LIMITS
from seolens_core.fetch._pool import pooled_transport

TLS = TlsFixture.for_names(["a.test"])


@pytest.fixture(scope="module")
def server() -> Iterator[FixtureServer]:
    site = SiteSpec("tls", {"/": html("<p>a.test only</p>")}, ip="127.0.0.1", tls=TLS.server())
    with FixtureServer([site]) as srv:
        yield srv


def _fetch_all(server: FixtureServer, hosts: list[str], http2: bool) -> list[FetchResult]:
    port = server.host_port("tls")[1]

    async def resolve(host: str, port: int) -> list[str]:
        return ["127.0.0.1"]

    async def go() -> list[FetchResult]:
        fetcher = Fetcher(
            user_agent="SEOLensTest/1",
            policy=AddressPolicy.for_hosts(["a.test", "b.test"]),
            resolver=resolve,
            transport=pooled_transport(http2=http2, limits=POOL_LIMITS, ssl_context=TLS.client()),
        )
        try:
            return [await fetcher.fetch(f"https://{host}:{port}/") for host in hosts]
        finally:
            await fetcher.aclose()

    return asyncio.run(go())


def test_the_certificate_is_for_a_test_only(server: FixtureServer) -> None:
    (alone,) = _fetch_all(server, ["b.test"], http2=False)
    assert alone.error is not None and alone.error.kind is FetchErrorKind.TLS


@pytest.mark.parametrize("http2", [False, True], ids=["http1", "http2"])
def test_a_verified_connection_is_not_reused_for_another_name(server: FixtureServer, http2: bool) -> None:
    before = len(server.log("tls"))
    a, b, a_again = _fetch_all(server, ["a.test", "b.test", "a.test"], http2=http2)
    assert a.status == 200 and a_again.status == 200
    assert b.status is None and b.error is not None and b.error.kind is FetchErrorKind.TLS, b
    served = server.log("tls")[before:]
    assert [r.host_header for r in served] == [f"a.test:{server.host_port('tls')[1]}"] * 2
    assert served[0].connection == served[1].connection  # a.test's own connection is still reused
