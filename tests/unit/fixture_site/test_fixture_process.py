"""ProcessFixtureServer: the same queries as FixtureServer, arrival times taken in another process."""

from __future__ import annotations

import functools

import httpx
import pytest

from infra.fixture_site import ProcessFixtureServer
from infra.fixture_site._server import _ORIGINS_USED
from infra.fixture_site.sites import crawl_delay_site, steady_latency_site


def test_serves_logs_and_answers_the_same_queries() -> None:
    with ProcessFixtureServer(
        [
            functools.partial(crawl_delay_site, 0.5, pages=3, name="a"),
            functools.partial(steady_latency_site, 0.2, name="b"),
        ]
    ) as server:
        assert server.host_port("a") in _ORIGINS_USED  # an in-process server will not reuse it
        with httpx.Client() as client:
            assert "Crawl-delay: 0.5" in client.get(server.url("a", "/robots.txt")).text
            assert client.get(server.url("a", "/p/1")).status_code == 200
            assert client.get(server.url("b", "/p/2")).status_code == 200
        # The child logs a request once its last byte is written, which can be after the client has read
        # it (CI saw b's log empty here): the log is complete once the server has stopped.
        server.stop()
        assert server.paths("a") == ["/robots.txt", "/p/1"]
        assert server.count("a", "/p/1") == 1
        [record] = server.log("b")
        assert record.status == 200 and record.duration is not None and record.duration >= 0.2
        assert server.peak_concurrency("b") == 1
        assert len(server.gaps("a", skip=())) == 1


def test_a_site_that_cannot_be_built_is_a_clear_error() -> None:
    with pytest.raises(RuntimeError, match="fixture server process"):
        ProcessFixtureServer([functools.partial(crawl_delay_site, "not a number")]).start()  # type: ignore[arg-type]
