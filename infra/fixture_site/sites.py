"""Canned fixture sites: the demo shop (with its expected crawl facts) and small politeness scenarios.

Every builder returns a fresh SiteSpec with fresh state (phase schedules, latency clocks), so build one
per test. Scenario sites share one shape: '/' links /p/1../p/N, each /p/n links home and /p/n+1.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from infra.fixture_site._demo import (
    DEMO,
    DEMO_EXPECTED,
    PARTNER,
    DemoExpected,
    demo_site,
    demo_sites,
    partner_site,
)
from infra.fixture_site._http import Request, Response
from infra.fixture_site._routes import (
    Latency,
    Phase,
    Phased,
    RouteContext,
    RouteLike,
    climbing,
    hang,
    html,
    not_found,
    redirect,
    service_unavailable,
    text,
    too_many_requests,
)
from infra.fixture_site._server import SiteSpec

__all__ = [
    "BLOCKED_PREFIX",
    "DEMO",
    "DEMO_EXPECTED",
    "PARTNER",
    "ROBOTS_REDIRECT_CHAIN",
    "DemoExpected",
    "NumberedPages",
    "crawl_delay_site",
    "demo_site",
    "demo_sites",
    "flaky_site",
    "numbered_site",
    "partner_site",
    "retry_after_site",
    "robots_404_site",
    "robots_503_site",
    "robots_hang_site",
    "robots_redirect_site",
    "slow_site",
]

BLOCKED_PREFIX = "/blocked/"
# robots.txt -> 301 -> 302 -> the rules, on robots_redirect_site().
ROBOTS_REDIRECT_CHAIN = ("/robots.txt", "/robots-moved.txt", "/rules/robots.txt")
ALLOW_ALL = "User-agent: *\nAllow: /\n"

_NUMBERED = re.compile(r"^/p/([1-9][0-9]*)$")


class NumberedPages:
    """Generated pages: '/' links /p/1../p/count and `extra` paths; /p/n links home and /p/n+1;
    each extra path is a plain page; anything else is a 404."""

    def __init__(self, count: int, extra: Sequence[str] = ()) -> None:
        self.count = count
        self.extra = tuple(extra)

    def paths(self) -> list[str]:
        """Every path this route answers with 200, in link order from '/'."""
        return ["/", *(f"/p/{n}" for n in range(1, self.count + 1)), *self.extra]

    def __call__(self, request: Request, ctx: RouteContext) -> Response:
        path = request.path
        if path == "/":
            return _page("Home", [f"/p/{n}" for n in range(1, self.count + 1)] + list(self.extra))
        match = _NUMBERED.match(path)
        if match and int(match.group(1)) <= self.count:
            n = int(match.group(1))
            return _page(f"Page {n}", ["/"] + ([f"/p/{n + 1}"] if n < self.count else []))
        if path in self.extra:
            return _page(f"Page {path}", ["/"])
        return not_found()


def _page(title: str, links: list[str]) -> Response:
    items = "".join(f'<li><a href="{href}">{href}</a></li>' for href in links)
    return html(
        f"<!doctype html><html><head><title>{title}</title>"
        f'<meta name="description" content="{title} of a fixture site"></head>'
        f"<body><h1>{title}</h1><p>A generated fixture page.</p><ul>{items}</ul></body></html>"
    )


def numbered_site(
    name: str,
    pages: int = 10,
    robots: RouteLike | None = None,
    *,
    extra: Sequence[str] = (),
    wrap: Phased | Latency | None = None,
    routes: dict[str, RouteLike] | None = None,
    ip: str = "127.0.0.1",
    port: int = 0,
) -> SiteSpec:
    """A NumberedPages site; `wrap` (built around the pages) replaces them as the fallback when given."""
    table: dict[str, RouteLike] = {"/robots.txt": robots if robots is not None else text(ALLOW_ALL)}
    table.update(routes or {})
    fallback: RouteLike = wrap if wrap is not None else NumberedPages(pages, extra)
    return SiteSpec(name, table, fallback=fallback, ip=ip, port=port)


def crawl_delay_site(delay: float = 0.5, pages: int = 10, name: str = "crawl-delay") -> SiteSpec:
    """robots.txt asks for `delay` seconds between requests (Crawl-delay)."""
    return numbered_site(name, pages, text(f"User-agent: *\nCrawl-delay: {delay:g}\nAllow: /\n"))


def retry_after_site(
    seconds: int = 3, ok_requests: int = 3, pages: int = 10, name: str = "retry-after"
) -> SiteSpec:
    """Pages answer normally `ok_requests` times, then 429 with Retry-After: `seconds` for `seconds`
    seconds (so a crawler that waits as told sees exactly one 429), then normally again."""
    content = NumberedPages(pages)
    schedule = Phased(
        [
            Phase(content, requests=ok_requests),
            Phase(too_many_requests(seconds), seconds=float(seconds)),
            Phase(content),
        ]
    )
    return numbered_site(name, pages, wrap=schedule)


def flaky_site(
    ok_requests: int = 10,
    flaky_seconds: float = 5.0,
    error_rate: float = 0.3,
    seed: int = 7,
    pages: int = 20,
    name: str = "flaky",
) -> SiteSpec:
    """Pages answer normally `ok_requests` times, then 503 for `error_rate` of requests (seeded) during
    `flaky_seconds` seconds, then normally again; robots.txt is never flaky."""
    content = NumberedPages(pages)
    schedule = Phased(
        [
            Phase(content, requests=ok_requests),
            Phase(content, seconds=flaky_seconds, error_rate=error_rate, error=service_unavailable()),
            Phase(content),
        ],
        seed=seed,
    )
    return numbered_site(name, pages, wrap=schedule)


def slow_site(
    start: float = 0.02, end: float = 0.6, over: float = 10.0, pages: int = 20, name: str = "slow"
) -> SiteSpec:
    """Page latency climbs linearly from `start` to `end` seconds over `over` seconds from the first
    page request, then stays at `end`; robots.txt answers at once."""
    return numbered_site(name, pages, wrap=Latency(NumberedPages(pages), climbing(start, end, over)))


def latency_steps_site(
    steps: Sequence[tuple[int, float]] = ((15, 0.02), (10, 0.15), (10, 0.35)),
    end: float = 0.6,
    pages: int = 60,
    name: str = "latency-steps",
) -> SiteSpec:
    """Page latency climbs by request count, not by time: (requests, seconds) steps, then `end` seconds for
    the rest. A crawler sees the same climb whatever its own speed; robots.txt answers at once."""
    content = NumberedPages(pages)
    phases = [Phase(Latency(content, seconds), requests=count) for count, seconds in steps]
    return numbered_site(name, pages, wrap=Phased([*phases, Phase(Latency(content, end))]))


def steady_latency_site(seconds: float = 0.3, pages: int = 20, name: str = "steady-latency") -> SiteSpec:
    """Every page takes `seconds` to answer (requests overlap, so concurrency shows); robots.txt at once."""
    return numbered_site(name, pages, wrap=Latency(NumberedPages(pages), seconds))


def robots_503_site(pages: int = 5, name: str = "robots-503") -> SiteSpec:
    """robots.txt always answers 503: a polite crawler fetches no page (RFC 9309 2.3.1.4)."""
    return numbered_site(name, pages, service_unavailable())


def robots_hang_site(pages: int = 5, name: str = "robots-hang") -> SiteSpec:
    """robots.txt never answers: a polite crawler times out and fetches no page."""
    return numbered_site(name, pages, hang())


def robots_redirect_site(pages: int = 5, name: str = "robots-redirect") -> SiteSpec:
    """robots.txt redirects twice (301, then 302) to rules that disallow BLOCKED_PREFIX; '/' links
    /blocked/secret and /open/page besides the numbered pages."""
    _, second, rules = ROBOTS_REDIRECT_CHAIN
    return numbered_site(
        name,
        pages,
        redirect(second, 301),
        extra=(f"{BLOCKED_PREFIX}secret", "/open/page"),
        routes={
            second: redirect(rules, 302),
            rules: text(f"User-agent: *\nDisallow: {BLOCKED_PREFIX}\n"),
        },
    )


def robots_404_site(pages: int = 5, name: str = "robots-404") -> SiteSpec:
    """robots.txt is missing (404): everything is allowed, /blocked/secret included."""
    return numbered_site(name, pages, not_found(), extra=(f"{BLOCKED_PREFIX}secret",))
