"""Fetcher: one GET (or HEAD) with a checked address, a size cap, a total deadline and TTFB measurement.

Redirects are returned, not followed: every hop is a new URL that passes normalization, robots and the
politeness gate like any other, and the redirect chain is rebuilt from those results.
"""

from __future__ import annotations

import asyncio
import enum
import http.cookiejar
import socket
import ssl
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

import httpx

from seolens_core.fetch._credentials import Credentials
from seolens_core.fetch._decode import BoundedDecoder
from seolens_core.fetch._guard import AddressPolicy
from seolens_core.fetch._pool import pooled_transport

Resolver = Callable[[str, int], Awaitable[list[str]]]
POOL_LIMITS = httpx.Limits(max_connections=200, max_keepalive_connections=100, keepalive_expiry=30)


class _NoCookies(http.cookiejar.CookieJar):
    """A jar that keeps nothing: the fetcher is stateless, a site's Set-Cookie is never sent back.

    httpx keeps every response's cookies in the client and sends them on later requests; each container has
    its own client, so what a page sees would depend on which container fetched it and what it fetched before
    (and Googlebot, whose view an audit reproduces, crawls without cookies). Only the crawl's configured
    Cookie header is sent. Skipping the jar's parsing also saves ~6% of the fetch path's CPU."""

    def extract_cookies(self, response: object, request: object) -> None:
        return None

    def set_cookie(self, cookie: http.cookiejar.Cookie) -> None:
        return None


class _StatelessCookies(httpx.Cookies):
    """The client's cookies: none, ever. httpx builds urllib's request and response stand-ins for each
    response to hand its jar, before `_NoCookies` ignores them (~2% of the crawler's CPU a page, py-spy)."""

    def __init__(self) -> None:
        super().__init__(_NoCookies())

    def extract_cookies(self, response: httpx.Response) -> None:
        return None


class _Client(httpx.AsyncClient):
    """httpx's client keeping no cookies (see `_NoCookies`)."""

    @property
    def cookies(self) -> httpx.Cookies:
        return _STATELESS_COOKIES

    @cookies.setter
    def cookies(self, cookies: httpx._types.CookieTypes) -> None:
        raise AttributeError("the fetcher keeps no cookies: send a configured Cookie header instead")


_STATELESS_COOKIES = _StatelessCookies()


class FetchErrorKind(enum.StrEnum):
    DNS = "dns"
    CONNECT = "connect"
    TIMEOUT = "timeout"
    RESET = "reset"
    TLS = "tls"
    SSRF_BLOCKED = "ssrf_blocked"
    PROTOCOL = "protocol"
    LATE_START = "late_start"
    """Not sent: the connection was ready after `start_by` (nothing reached the host)."""
    OTHER = "other"


@dataclass(frozen=True, slots=True)
class FetchError:
    kind: FetchErrorKind
    detail: str


@dataclass(frozen=True, slots=True)
class FetchResult:
    """What came back: a response (status set) or an error; body is capped at the configured size."""

    url: str
    status: int | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    body: bytes = b""
    truncated: bool = False
    ttfb_ms: float | None = None
    total_ms: float = 0.0
    http_version: str | None = None
    address: str | None = None
    error: FetchError | None = None
    sent_at: float | None = None
    """When the request head went to the socket (epoch seconds), if it did."""

    @property
    def location(self) -> str | None:
        """The redirect target of a 3xx answer, as sent (resolve it against `url`)."""
        if self.status is not None and 300 <= self.status < 400:
            return self.headers.get("location")
        return None

    @property
    def content_type(self) -> str | None:
        return self.headers.get("content-type")


async def system_resolver(host: str, port: int) -> list[str]:
    """Resolve with the OS resolver, in the order it prefers."""
    infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    seen: list[str] = []
    for info in infos:
        addr = str(info[4][0])
        if addr not in seen:
            seen.append(addr)
    return seen


def _literal(host: str) -> bool:
    import ipaddress

    try:
        ipaddress.ip_address(host.strip("[]"))
    except ValueError:
        return False
    return True


def _classify(exc: BaseException) -> FetchError:
    text = f"{type(exc).__name__}: {exc}"[:300]
    if isinstance(exc, httpx.TimeoutException | asyncio.TimeoutError | TimeoutError):
        return FetchError(FetchErrorKind.TIMEOUT, text)
    if isinstance(exc, ssl.SSLError) or "SSL" in text or "CERTIFICATE" in text.upper():
        return FetchError(FetchErrorKind.TLS, text)
    if isinstance(exc, httpx.ConnectError):
        return FetchError(FetchErrorKind.CONNECT, text)
    if isinstance(exc, httpx.ReadError | httpx.WriteError | ConnectionResetError | httpx.RemoteProtocolError):
        if "reset" in text.lower() or isinstance(exc, ConnectionResetError):
            return FetchError(FetchErrorKind.RESET, text)
        return FetchError(FetchErrorKind.PROTOCOL, text)
    if isinstance(exc, httpx.DecodingError | httpx.ProtocolError):
        return FetchError(FetchErrorKind.PROTOCOL, text)
    return FetchError(FetchErrorKind.OTHER, text)


class _LateStart(Exception):
    """Raised inside httpcore's trace hook to abandon a request before its head is written."""


class Fetcher:
    """An SSRF-guarded, size-capped HTTP client; build once per container and reuse its connection pool."""

    def __init__(
        self,
        *,
        user_agent: str,
        policy: AddressPolicy,
        connect_timeout_s: float = 10.0,
        read_timeout_s: float = 20.0,
        total_timeout_s: float = 30.0,
        max_body_bytes: int = 5 * 1024 * 1024,
        http2: bool = True,
        resolver: Resolver = system_resolver,
        transport: httpx.AsyncBaseTransport | None = None,
        credentials: Credentials | None = None,
    ) -> None:
        self._policy = policy
        self._credentials = credentials if credentials is not None else Credentials()
        self._resolver = resolver
        self._total_timeout_s = total_timeout_s
        self._max_body_bytes = max_body_bytes
        self._user_agent = user_agent
        self._client = _Client(
            follow_redirects=False,
            timeout=httpx.Timeout(read_timeout_s, connect=connect_timeout_s),
            transport=transport
            if transport is not None
            else pooled_transport(http2=http2, limits=POOL_LIMITS),
            trust_env=False,
        )

    @property
    def policy(self) -> AddressPolicy:
        return self._policy

    async def aclose(self) -> None:
        await self._client.aclose()

    async def fetch(
        self,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        method: str = "GET",
        may_send: Callable[[], Awaitable[bool]] | None = None,
    ) -> FetchResult:
        """Fetch `url` once; never raises for network or protocol trouble (it is in `result.error`).

        `may_send` is awaited right before the request head is written (the connection is ready; it may wait
        for the request's start time); False abandons the request unsent, error kind LATE_START: a paced start
        must not slip towards the next slot.
        """
        started = time.perf_counter()
        try:
            async with asyncio.timeout(self._total_timeout_s):
                return await self._fetch(url, headers or {}, method, started, may_send)
        except _LateStart as late:
            return FetchResult(url=url, error=FetchError(FetchErrorKind.LATE_START, str(late)))
        except Exception as exc:  # every failure is data for the politeness engine, never a crash
            return FetchResult(url=url, error=_classify(exc), total_ms=(time.perf_counter() - started) * 1000)

    async def _fetch(
        self,
        url: str,
        headers: Mapping[str, str],
        method: str,
        started: float,
        may_send: Callable[[], Awaitable[bool]] | None,
    ) -> FetchResult:
        parsed = httpx.URL(url)
        host = parsed.host
        port = parsed.port or (443 if parsed.scheme == "https" else 80)
        if _literal(host):
            addresses = [host.strip("[]")]
        else:
            try:
                addresses = await self._resolver(host, port)
            except (OSError, UnicodeError) as exc:
                return FetchResult(url=url, error=FetchError(FetchErrorKind.DNS, str(exc)[:300]))
        verdict = self._policy.choose(host, port, addresses)
        if verdict.address is None:
            return FetchResult(
                url=url, error=FetchError(FetchErrorKind.SSRF_BLOCKED, verdict.reason or "refused")
            )
        connect_host = f"[{verdict.address}]" if ":" in verdict.address else verdict.address
        # Connect to the address that was checked (no DNS rebinding between check and connect);
        # Host header and TLS SNI keep the real name.
        target = parsed.copy_with(host=connect_host.strip("[]"))
        request_headers = {
            "User-Agent": self._user_agent,
            "Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8",
            "Accept-Encoding": "gzip, deflate, br",
            **headers,
            # The one place the crawl's secrets join a request: only for a URL in their scope.
            **self._credentials.for_url(parsed),
            "Host": parsed.netloc.decode("ascii"),
        }
        sent_at: list[float] = []
        gated = 0.0  # time spent waiting in `may_send`: not the host's, so not in TTFB

        async def on_event(event: str, info: Mapping[str, object]) -> None:
            # httpcore awaits this right before the head is written, with no other await in between: the
            # last moment a late request can still be abandoned without anything reaching the host.
            nonlocal gated
            if event.endswith("send_request_headers.started"):
                if may_send is not None:
                    asked = time.perf_counter()
                    go = await may_send()
                    gated = time.perf_counter() - asked
                    if not go:
                        raise _LateStart("the connection was ready after the request's start limit")
                sent_at.append(time.time())

        request = self._client.build_request(
            method, target, headers=request_headers, extensions={"sni_hostname": host, "trace": on_event}
        )
        response = await self._client.send(request, stream=True)
        try:
            ttfb_ms = (time.perf_counter() - started - gated) * 1000
            chunks: list[bytes] = []
            size = 0
            truncated = False
            if method != "HEAD":
                decoder = BoundedDecoder(response.headers.get("content-encoding"), self._max_body_bytes)
                async for raw in response.aiter_raw():
                    chunk = decoder.feed(raw)
                    size += len(chunk)
                    chunks.append(chunk)
                    if decoder.truncated:
                        break
                truncated = decoder.truncated
        finally:
            await response.aclose()
        return FetchResult(
            url=url,
            status=response.status_code,
            headers={k.lower(): v for k, v in response.headers.items()},
            body=b"".join(chunks),
            truncated=truncated,
            ttfb_ms=ttfb_ms,
            total_ms=(time.perf_counter() - started - gated) * 1000,
            http_version=response.http_version,
            address=verdict.address,
            sent_at=sent_at[0] if sent_at else None,
        )
