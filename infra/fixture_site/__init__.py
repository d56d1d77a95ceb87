"""Fixture web sites for end-to-end tests and the README demo: scripted hosts on 127.0.0.0/8, request log.

Run the demo shop with `python -m infra.fixture_site --demo [--port N]`.
"""

from __future__ import annotations

from infra.fixture_site._http import Request, Response
from infra.fixture_site._process import ProcessFixtureServer, SiteBuilder
from infra.fixture_site._routes import (
    GzipWhenAccepted,
    Latency,
    Phase,
    Phased,
    Route,
    RouteContext,
    RouteLike,
    chunked,
    climbing,
    data,
    endless,
    hang,
    html,
    lying_length,
    not_found,
    redirect,
    reset,
    service_unavailable,
    text,
    too_many_requests,
    trickle,
    xml,
)
from infra.fixture_site._server import FixtureServer, LogQueries, RequestLog, RequestRecord, SiteSpec

__all__ = [
    "FixtureServer",
    "GzipWhenAccepted",
    "Latency",
    "LogQueries",
    "Phase",
    "Phased",
    "ProcessFixtureServer",
    "Request",
    "RequestLog",
    "RequestRecord",
    "Response",
    "Route",
    "RouteContext",
    "RouteLike",
    "SiteBuilder",
    "SiteSpec",
    "chunked",
    "climbing",
    "data",
    "endless",
    "hang",
    "html",
    "lying_length",
    "not_found",
    "redirect",
    "reset",
    "service_unavailable",
    "text",
    "too_many_requests",
    "trickle",
    "xml",
]
