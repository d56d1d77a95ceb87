"""Stateful fixture routes driven with explicit times: phase schedules, seeded errors, latency ramps."""

from __future__ import annotations

import asyncio

import pytest

from infra.fixture_site import Latency, Phase, Phased, Request, RouteContext, climbing, html, text


def _ctx(now: float) -> RouteContext:
    return RouteContext(site="s", base_url="http://127.0.0.1:1", now=now, number=1, sites={})


_REQUEST = Request("GET", "/", "HTTP/1.1", ())


def _status(route: Phased | Latency, now: float) -> int:
    return asyncio.run(route(_REQUEST, _ctx(now))).status


def test_phases_by_count_then_time_then_forever() -> None:
    ok, busy = text("ok"), text("busy", status=429)
    route = Phased([Phase(ok, requests=3), Phase(busy, seconds=2.0), Phase(ok)])
    times = [0.0, 0.1, 0.2, 0.3, 1.0, 2.2, 2.4, 100.0]
    statuses = [_status(route, t) for t in times]
    # the busy phase starts at its first request (t=0.3) and ends 2 s later
    assert statuses == [200, 200, 200, 429, 429, 429, 200, 200]
    assert [index for _, index, _ in route.history] == [0, 0, 0, 1, 1, 1, 2, 2]


def test_last_phase_never_ends_even_with_limits() -> None:
    route = Phased([Phase(text("a"), requests=1), Phase(html("b", status=410), requests=1)])
    assert [_status(route, float(t)) for t in range(5)] == [200, 410, 410, 410, 410]


def test_zero_length_phase_is_skipped() -> None:
    route = Phased([Phase(text("a"), requests=0), Phase(text("b", status=418))])
    assert _status(route, 0.0) == 418


def _error_pattern(seed: int, n: int = 400) -> list[bool]:
    route = Phased([Phase(text("ok"), error_rate=0.3)], seed=seed)
    return [route.pick(float(i))[1] for i in range(n)]


def test_error_rate_is_seeded_and_close_to_the_rate() -> None:
    first, again, other = _error_pattern(7), _error_pattern(7), _error_pattern(8)
    assert first == again
    assert first != other
    assert 0.22 < sum(first) / len(first) < 0.38


def test_error_phase_answers_with_its_error_route() -> None:
    route = Phased([Phase(text("ok"), error_rate=1.0, error=text("x", status=503))])
    assert {_status(route, float(t)) for t in range(5)} == {503}


def test_phased_needs_a_phase() -> None:
    with pytest.raises(ValueError):
        Phased([])


@pytest.mark.parametrize(
    ("elapsed", "expected"),
    [(-1.0, 0.02), (0.0, 0.02), (5.0, 0.31), (10.0, 0.6), (60.0, 0.6)],
)
def test_climbing_latency(elapsed: float, expected: float) -> None:
    assert climbing(0.02, 0.6, 10.0)(elapsed) == pytest.approx(expected)


def test_latency_counts_from_the_first_request_and_adds_to_the_inner_delay() -> None:
    route = Latency(text("ok"), climbing(0.0, 1.0, 10.0))
    assert route.delay_at(100.0) == 0.0
    assert route.delay_at(105.0) == pytest.approx(0.5)
    fixed = Latency(Latency(text("ok"), 0.25), 0.5)
    response = asyncio.run(fixed(_REQUEST, _ctx(0.0)))
    assert response.delay == pytest.approx(0.75)
