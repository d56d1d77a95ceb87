"""`may_send`: the last word on a paced start, asked when the connection is ready; False sends nothing."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterator

import pytest

from infra.fixture_site import FixtureServer, SiteSpec
from infra.fixture_site._routes import html
from seolens_core.fetch import AddressPolicy, Fetcher, FetchErrorKind, FetchResult


@pytest.fixture(scope="module")
def server() -> Iterator[FixtureServer]:
    with FixtureServer([SiteSpec("site", {"/": html("<p>hi</p>")})]) as srv:
        yield srv


def _fetch(
    server: FixtureServer, may_send: Callable[[], Awaitable[bool]] | None, times: int = 1
) -> list[FetchResult]:
    async def go() -> list[FetchResult]:
        host, port = server.host_port("site")
        fetcher = Fetcher(
            user_agent="SEOLensTest/1", policy=AddressPolicy.for_hosts([f"{host}:{port}"]), http2=False
        )
        try:
            return [await fetcher.fetch(server.url("site", "/"), may_send=may_send) for _ in range(times)]
        finally:
            await fetcher.aclose()

    return asyncio.run(go())


def test_a_refused_start_reaches_nobody(server: FixtureServer) -> None:
    server.clear_log()
    asked: list[float] = []

    async def refuse() -> bool:
        asked.append(time.time())
        return False

    [result] = _fetch(server, refuse)
    assert result.error is not None and result.error.kind is FetchErrorKind.LATE_START
    assert result.status is None and result.sent_at is None
    assert len(asked) == 1  # asked once, when the connection was ready
    assert server.log("site") == []


def test_an_allowed_start_is_sent_and_timed(server: FixtureServer) -> None:
    server.clear_log()
    before = time.time()

    async def go() -> bool:
        return True

    [result] = _fetch(server, go)
    assert result.status == 200
    assert result.sent_at is not None and before <= result.sent_at <= time.time()
    assert [r.path for r in server.log("site")] == ["/"]


def test_a_refusal_on_a_kept_alive_connection_does_not_break_the_next_request(server: FixtureServer) -> None:
    server.clear_log()
    answers = iter([True, False, True])

    async def next_answer() -> bool:
        return next(answers)

    results = _fetch(server, next_answer, times=3)
    assert [r.status for r in results] == [200, None, 200]
    assert results[1].error is not None and results[1].error.kind is FetchErrorKind.LATE_START
    assert len(server.log("site")) == 2


def test_the_gate_may_hold_the_request_until_its_start_and_that_wait_is_not_ttfb(
    server: FixtureServer,
) -> None:
    server.clear_log()
    start_at = time.time() + 0.3

    async def at_start() -> bool:
        await asyncio.sleep(max(0.0, start_at - time.time()))
        return True

    [result] = _fetch(server, at_start)
    assert result.status == 200 and result.sent_at is not None and result.sent_at >= start_at
    [record] = server.log("site")
    assert record.start_wall >= start_at  # the server saw it at the start, not before
    assert result.ttfb_ms is not None and result.ttfb_ms < 250  # the 0.3 s gate wait is not the host's
