"""Routes: what a fixture site answers. Builders for scripted responses and stateful behaviours.

A route is a Response (served as is) or a callable `(Request, RouteContext) -> Response` that may be
async. Stateful routes (Phased, Latency) keep their state in the instance: share one instance between
paths to give a whole site one schedule, and build a new site for each test.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import random
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeAlias

from infra.fixture_site._http import HTML, TEXT, XML, Headers, Request, Response


@dataclass(frozen=True, slots=True)
class RouteContext:
    """What a route knows besides the request: its site, the server's sites, the arrival time, and whether
    the request came over TLS (a TLS site's port answers plain HTTP too)."""

    site: str
    base_url: str
    now: float
    number: int
    sites: Mapping[str, str]
    tls: bool = False

    def url(self, path: str = "/", site: str | None = None) -> str:
        """An absolute URL on this site, or on another site of the same server."""
        base = self.base_url if site is None else self.sites[site]
        return base + path


Route: TypeAlias = Callable[[Request, RouteContext], "Response | Awaitable[Response]"]
RouteLike: TypeAlias = "Route | Response"
HeadersLike: TypeAlias = "Mapping[str, str] | Iterable[tuple[str, str]]"


async def resolve(route: RouteLike, request: Request, ctx: RouteContext) -> Response:
    """Run a route (plain, callable or async callable) to its Response."""
    if isinstance(route, Response):
        return route
    result = route(request, ctx)
    if inspect.isawaitable(result):
        return await result
    return result


def _headers(headers: HeadersLike) -> Headers:
    items = headers.items() if isinstance(headers, Mapping) else headers
    return tuple((str(k), str(v)) for k, v in items)


def html(body: str, status: int = 200, headers: HeadersLike = (), *, gzip: bool = False) -> Response:
    return Response(
        status=status, body=body.encode(), content_type=HTML, headers=_headers(headers), gzip=gzip
    )


def xml(body: str, status: int = 200, headers: HeadersLike = (), *, gzip: bool = False) -> Response:
    return Response(status=status, body=body.encode(), content_type=XML, headers=_headers(headers), gzip=gzip)


def text(body: str, status: int = 200, headers: HeadersLike = (), *, gzip: bool = False) -> Response:
    return Response(
        status=status, body=body.encode(), content_type=TEXT, headers=_headers(headers), gzip=gzip
    )


def data(
    body: bytes,
    content_type: str = "application/octet-stream",
    status: int = 200,
    headers: HeadersLike = (),
) -> Response:
    return Response(status=status, body=body, content_type=content_type, headers=_headers(headers))


def redirect(location: str, status: int = 301) -> Response:
    return Response(status=status, body=b"", content_type=None, headers=(("Location", location),))


def not_found() -> Response:
    return html("<!doctype html><title>Not found</title><h1>Not found</h1>", status=404)


def too_many_requests(retry_after: int | str = 3, status: int = 429) -> Response:
    """A rate-limit answer; `retry_after` is seconds or an HTTP date, sent as is."""
    return text("slow down\n", status=status, headers=(("Retry-After", str(retry_after)),))


def service_unavailable(retry_after: int | str | None = None) -> Response:
    headers = () if retry_after is None else (("Retry-After", str(retry_after)),)
    return text("temporarily unavailable\n", status=503, headers=headers)


def hang(after: float | None = None, then: Response | None = None) -> Response:
    """Never answer (after=None), or answer `then` (default: a small page) after `after` seconds."""
    answer = then if then is not None else html("<!doctype html><title>Late</title><h1>Late</h1>")
    return dataclasses.replace(answer, delay=math.inf if after is None else after)


def trickle(body: bytes | str, interval: float = 1.0, content_type: str = HTML) -> Response:
    """Send the head at once, then the body one byte every `interval` seconds."""
    raw = body.encode() if isinstance(body, str) else body
    return Response(body=raw, content_type=content_type, trickle=interval)


def endless(piece: bytes | str = b"<p>more and more</p>\n" * 200, interval: float = 0.01) -> Response:
    """A chunked body that never ends: `piece` again and again, `interval` seconds apart."""
    raw = piece.encode() if isinstance(piece, str) else piece
    return Response(body=raw, endless=True, endless_interval=interval)


def lying_length(body: bytes | str, claimed: int, content_type: str = HTML) -> Response:
    """Declare `claimed` bytes in Content-Length but send `body`; the connection closes afterwards."""
    raw = body.encode() if isinstance(body, str) else body
    return Response(body=raw, content_type=content_type, content_length=claimed, close=True)


def reset(after_bytes: int = 0, then: Response | None = None) -> Response:
    """Abort the connection with an RST after `after_bytes` bytes of `then` (default: a small page)."""
    answer = then if then is not None else html("<!doctype html><title>Reset</title><h1>Reset</h1>")
    return dataclasses.replace(answer, reset_after=after_bytes)


def chunked(response: Response) -> Response:
    """The same response, framed with Transfer-Encoding: chunked."""
    return dataclasses.replace(response, chunked=True)


class GzipWhenAccepted:
    """Compress the inner route's body with gzip when the request's Accept-Encoding allows it."""

    def __init__(self, route: RouteLike) -> None:
        self._route = route

    async def __call__(self, request: Request, ctx: RouteContext) -> Response:
        response = await resolve(self._route, request, ctx)
        if request.accepts_gzip() and response.body:
            return dataclasses.replace(response, gzip=True)
        return response


@dataclass(frozen=True, slots=True)
class Phase:
    """One stretch of a Phased schedule.

    requests: the phase ends after this many requests (None: no count limit).
    seconds: the phase ends this long after its first request (None: no time limit).
    error_rate: share of the phase's requests answered by `error` instead of `route`, drawn from the
    schedule's seeded generator, so a given request order always gets the same answers.
    """

    route: RouteLike
    requests: int | None = None
    seconds: float | None = None
    error_rate: float = 0.0
    error: RouteLike = dataclasses.field(default_factory=service_unavailable)


class Phased:
    """A route that moves through phases by request count or elapsed time; the last phase never ends."""

    def __init__(self, phases: Sequence[Phase], seed: int = 0) -> None:
        if not phases:
            raise ValueError("a Phased route needs at least one phase")
        self.phases = tuple(phases)
        self._rng = random.Random(seed)
        self._index = 0
        self._count = 0
        self._started: float | None = None
        # (arrival time, phase index, answered with the error route) per request, for tests
        self.history: list[tuple[float, int, bool]] = []

    @property
    def index(self) -> int:
        """The index of the phase the last request fell into."""
        return self._index

    def _ended(self, phase: Phase, now: float) -> bool:
        if phase.requests is not None and self._count >= phase.requests:
            return True
        return (
            phase.seconds is not None and self._started is not None and now - self._started >= phase.seconds
        )

    def pick(self, now: float) -> tuple[int, bool]:
        """Advance the schedule for a request arriving at `now`: (phase index, use the error route)."""
        while self._index < len(self.phases) - 1 and self._ended(self.phases[self._index], now):
            self._index += 1
            self._count = 0
            self._started = None
        if self._started is None:
            self._started = now
        self._count += 1
        phase = self.phases[self._index]
        failed = phase.error_rate > 0 and self._rng.random() < phase.error_rate
        self.history.append((now, self._index, failed))
        return self._index, failed

    async def __call__(self, request: Request, ctx: RouteContext) -> Response:
        index, failed = self.pick(ctx.now)
        phase = self.phases[index]
        return await resolve(phase.error if failed else phase.route, request, ctx)


def climbing(start: float = 0.02, end: float = 0.6, over: float = 10.0) -> Callable[[float], float]:
    """Latency that rises linearly from `start` to `end` seconds during `over` seconds, then holds."""

    def latency(elapsed: float) -> float:
        if over <= 0:
            return end
        share = min(max(elapsed / over, 0.0), 1.0)
        return start + (end - start) * share

    return latency


class Latency:
    """Delay the inner route's answer: fixed seconds, or a function of seconds since the first request."""

    def __init__(self, route: RouteLike, latency: float | Callable[[float], float]) -> None:
        self._route = route
        self._latency = latency
        self._first: float | None = None

    def delay_at(self, now: float) -> float:
        if self._first is None:
            self._first = now
        if callable(self._latency):
            return max(0.0, self._latency(now - self._first))
        return max(0.0, self._latency)

    async def __call__(self, request: Request, ctx: RouteContext) -> Response:
        extra = self.delay_at(ctx.now)
        response = await resolve(self._route, request, ctx)
        return dataclasses.replace(response, delay=response.delay + extra)
