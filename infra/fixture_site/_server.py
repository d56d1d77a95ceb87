"""The fixture server: asyncio streams on 127.0.0.0/8, one listening socket per site, a request log.

It runs its own event loop in a background thread so synchronous tests and the async crawler alike can
talk to it. HTTP/1.1 only: keep-alive, HEAD, Content-Length or chunked framing, no pipelining guarantees.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import math
import os
import socket
import ssl
import struct
import sys
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Self

from infra.fixture_site._http import BadRequest, Headers, Request, chunk, parse_head, render_head
from infra.fixture_site._routes import RouteContext, RouteLike, not_found, resolve, text

_ORIGINS_USED: set[tuple[str, int]] = set()

_CHUNK = 16 * 1024
_POLL = 0.05


@dataclass(frozen=True, slots=True)
class SiteSpec:
    """A named fixture host: exact-path routes, an optional fallback for every other path, and its address.

    Routes are looked up by path without the query; the fallback (or a 404) answers the rest.
    port 0 picks a free port at start; any 127.x.y.z address works on Linux. With `tls`, the site's port
    answers TLS and plain HTTP alike (told apart by the first byte; `RequestRecord.tls` says which) and its
    base URL is https: the same host and port over both schemes, as a misconfigured real site can be.
    """

    name: str
    routes: Mapping[str, RouteLike] = field(default_factory=dict)
    fallback: RouteLike | None = None
    ip: str = "127.0.0.1"
    port: int = 0
    tls: ssl.SSLContext | None = None

    def route_for(self, path: str) -> RouteLike:
        route = self.routes.get(path)
        if route is not None:
            return route
        return self.fallback if self.fallback is not None else not_found()


@dataclass(frozen=True, slots=True)
class RequestRecord:
    """One request as the server saw it.

    start/end are time.monotonic() (end None while in flight); start_wall is time.time() at arrival.
    status is None when no complete response head was sent. outcome: 'in_flight', 'ok', 'client_gone'
    (the client closed first), 'reset' (scripted RST), 'cancelled' (server stopped), 'error'.
    connection numbers TCP connections per server, so reuse (keep-alive) is visible.
    """

    site: str
    host_header: str | None
    method: str
    path: str
    start: float
    start_wall: float
    end: float | None
    status: int | None
    bytes_sent: int
    client: tuple[str, int]
    connection: int
    outcome: str
    headers: Headers = ()
    tls: bool = False

    @property
    def duration(self) -> float | None:
        return None if self.end is None else self.end - self.start

    def header(self, name: str) -> str | None:
        wanted = name.lower()
        return next((v for k, v in self.headers if k.lower() == wanted), None)


@dataclass(slots=True)
class _Entry:
    """The mutable log entry behind a RequestRecord, updated by the loop thread under the log lock."""

    site: str
    request: Request
    start: float
    start_wall: float
    connection: int
    end: float | None = None
    status: int | None = None
    bytes_sent: int = 0
    outcome: str = "in_flight"
    tls: bool = False

    def snapshot(self) -> RequestRecord:
        return RequestRecord(
            site=self.site,
            host_header=self.request.host,
            method=self.request.method,
            path=self.request.target,
            start=self.start,
            start_wall=self.start_wall,
            end=self.end,
            status=self.status,
            bytes_sent=self.bytes_sent,
            client=self.request.client,
            connection=self.connection,
            outcome=self.outcome,
            headers=self.request.headers,
            tls=self.tls,
        )


class RequestLog:
    """Thread-safe list of log entries; finished entries can also go to a JSON-lines file."""

    def __init__(self, sink: IO[str] | None = None) -> None:
        self._lock = threading.Lock()
        self._entries: list[_Entry] = []
        self._sink = sink

    def begin(self, site: str, request: Request, connection: int, tls: bool = False) -> _Entry:
        entry = _Entry(site, request, time.monotonic(), time.time(), connection, tls=tls)
        with self._lock:
            self._entries.append(entry)
        return entry

    def update(self, entry: _Entry, *, status: int | None = None, sent: int = 0) -> None:
        with self._lock:
            if status is not None:
                entry.status = status
            entry.bytes_sent += sent

    def finish(self, entry: _Entry, outcome: str) -> None:
        with self._lock:
            entry.end = time.monotonic()
            if entry.outcome == "in_flight":
                entry.outcome = outcome
            if self._sink is not None:
                record = asdict(entry.snapshot())
                record["headers"] = dict(entry.request.headers)
                self._sink.write(json.dumps(record) + "\n")
                self._sink.flush()

    def set_outcome(self, entry: _Entry, outcome: str) -> None:
        with self._lock:
            entry.outcome = outcome

    def records(self, site: str | None = None) -> list[RequestRecord]:
        with self._lock:
            return [e.snapshot() for e in self._entries if site is None or e.site == site]

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()


@dataclass(slots=True)
class _Bound:
    spec: SiteSpec
    server: asyncio.AbstractServer | None = None
    port: int = 0
    requests: int = 0

    @property
    def base_url(self) -> str:
        return f"{'https' if self.spec.tls else 'http'}://{self.spec.ip}:{self.port}"


class _ClientGone(Exception):
    pass


class LogQueries:
    """What tests ask of a fixture server's request log; subclasses say where records and addresses come from."""

    def log(self, site: str | None = None) -> list[RequestRecord]:
        """Every request so far (of one site, or all), in arrival order."""
        raise NotImplementedError

    def start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def close(self) -> None:
        """Release what outlives `stop` (the log stays readable until then); called when the `with` ends."""

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
        self.close()

    def host_port(self, site: str) -> tuple[str, int]:
        raise NotImplementedError

    def base_url(self, site: str) -> str:
        """'http://IP:PORT' of a started site (no trailing slash)."""
        ip, port = self.host_port(site)
        return f"http://{ip}:{port}"

    def url(self, site: str, path: str = "/") -> str:
        return self.base_url(site) + path

    def paths(self, site: str) -> list[str]:
        """Requested targets (path with query) of a site, in arrival order."""
        return [r.path for r in self.log(site)]

    def count(self, site: str, path: str) -> int:
        """Requests for `path`: exact target when it has a query, else any query of that path."""
        if "?" in path:
            return sum(1 for r in self.log(site) if r.path == path)
        return sum(1 for r in self.log(site) if r.path.split("?", 1)[0] == path)

    def gaps(self, site: str, *, skip: Sequence[str] = ("/robots.txt",)) -> list[float]:
        """Seconds between consecutive request arrivals on a site (paths in `skip` left out), for
        asserting a crawl delay: `min(server.gaps(site)) >= delay`."""
        starts = sorted(r.start for r in self.log(site) if r.path.split("?", 1)[0] not in skip)
        return [later - earlier for earlier, later in itertools.pairwise(starts)]

    def peak_concurrency(self, site: str) -> int:
        """The most requests a site was answering at once (in-flight requests count as open)."""
        events: list[tuple[float, int]] = []
        for record in self.log(site):
            events.append((record.start, 1))
            events.append((record.end if record.end is not None else float("inf"), -1))
        peak = current = 0
        for _, step in sorted(events):
            current += step
            peak = max(peak, current)
        return peak

    def settled_log(self, site: str | None = None, timeout: float = 5.0) -> list[RequestRecord]:
        """The log once no request is in flight (or after `timeout`): a request is logged as ended after its
        last byte is written, which can be after the client has read that byte."""
        self.wait_until(lambda s: all(r.end is not None for r in s.log(site)), timeout)
        return self.log(site)

    def wait_until(self, predicate: Callable[[Any], bool], timeout: float = 5.0) -> bool:
        """Poll `predicate(self)` until true or `timeout` seconds pass; returns its last value."""
        deadline = time.monotonic() + timeout
        while not predicate(self):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)
        return True


class FixtureServer(LogQueries):
    """Serve fixture sites from a background thread; use as a context manager or start()/stop()."""

    def __init__(
        self,
        sites: Sequence[SiteSpec],
        *,
        log_path: str | Path | None = None,
        max_head_bytes: int = 64 * 1024,
    ) -> None:
        names = [s.name for s in sites]
        if len(set(names)) != len(names):
            raise ValueError(f"site names must be unique: {names}")
        self._sites = {s.name: _Bound(s) for s in sites}
        self._log_path = Path(log_path) if log_path is not None else None
        self._sink: IO[str] | None = None
        self._log = RequestLog()
        self._max_head = max_head_bytes
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._tasks: set[asyncio.Task[Any]] = set()
        self._connections = itertools.count(1)
        self._urls: dict[str, str] = {}

    # lifecycle

    def start(self) -> None:
        """Bind every site and start serving; raises if an address cannot be bound."""
        if self._thread is not None:
            raise RuntimeError("fixture server already started")
        if self._log_path is not None:
            self._sink = self._log_path.open("a", encoding="utf-8")
            self._log = RequestLog(self._sink)
        loop = asyncio.new_event_loop()
        thread = threading.Thread(target=loop.run_forever, name="fixture-site", daemon=True)
        thread.start()
        self._loop, self._thread = loop, thread
        try:
            asyncio.run_coroutine_threadsafe(self._open(), loop).result(timeout=10)
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Close listeners, cut open connections (hung requests end as 'cancelled'), join the thread."""
        loop, thread = self._loop, self._thread
        if loop is None or thread is None:
            return
        with contextlib.suppress(Exception):
            asyncio.run_coroutine_threadsafe(self._close(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(timeout=10)
        loop.close()
        self._loop = self._thread = None
        if self._sink is not None:
            self._sink.close()
            self._sink = None

    # addresses

    def host_port(self, site: str) -> tuple[str, int]:
        bound = self._bound(site)
        return bound.spec.ip, bound.port

    def base_url(self, site: str) -> str:
        """'http://IP:PORT' of a started site, 'https://' for a TLS site (no trailing slash)."""
        return self._bound(site).base_url

    @property
    def sites(self) -> Mapping[str, SiteSpec]:
        return {name: bound.spec for name, bound in self._sites.items()}

    def log(self, site: str | None = None) -> list[RequestRecord]:
        """Every request so far (of one site, or all), in arrival order; in-flight ones have end=None."""
        return self._log.records(site)

    def clear_log(self) -> None:
        self._log.clear()

    def _bound(self, site: str) -> _Bound:
        bound = self._sites[site]
        if bound.server is None:
            raise RuntimeError(f"site {site!r} is not being served (call start())")
        return bound

    # serving (event loop thread)

    async def _open(self) -> None:
        for name, bound in self._sites.items():

            async def handler(
                reader: asyncio.StreamReader, writer: asyncio.StreamWriter, bound: _Bound = bound
            ) -> None:
                await self._connection(bound, reader, writer)

            for _ in range(50):
                server = await self._listen(bound.spec, handler)
                port = int(server.sockets[0].getsockname()[1])
                origin = (bound.spec.ip, port)
                # A fresh site never reuses an origin an earlier site of this process had: crawlers keep
                # per-host state (robots.txt for up to 24 h, pacing), as they must on the real web.
                if bound.spec.port or origin not in _ORIGINS_USED:
                    break
                server.close()
                await server.wait_closed()
            _ORIGINS_USED.add(origin)
            bound.server = server
            bound.port = port
            self._urls[name] = bound.base_url

    async def _listen(
        self, spec: SiteSpec, handler: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Any]
    ) -> asyncio.Server:
        if spec.tls is None:
            return await asyncio.start_server(handler, host=spec.ip, port=spec.port, limit=self._max_head)
        tls, limit = spec.tls, self._max_head
        return await asyncio.get_running_loop().create_server(
            lambda: _TlsOrPlain(tls, handler, limit), host=spec.ip, port=spec.port
        )

    async def _close(self) -> None:
        servers = [b.server for b in self._sites.values() if b.server is not None]
        for server in servers:
            server.close()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for server in servers:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(server.wait_closed(), timeout=2)

    async def _connection(
        self, bound: _Bound, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        number = next(self._connections)
        peer = writer.get_extra_info("peername")
        client = (str(peer[0]), int(peer[1])) if isinstance(peer, tuple) else ("", 0)
        tls = writer.get_extra_info("ssl_object") is not None
        aborted = False
        try:
            while True:
                try:
                    raw = await reader.readuntil(b"\r\n\r\n")
                except (asyncio.IncompleteReadError, ConnectionError):
                    return
                except asyncio.LimitOverrunError:
                    await self._plain(writer, 431, "request head too large\n")
                    return
                try:
                    request = parse_head(raw, client)
                except BadRequest:
                    await self._plain(writer, 400, "bad request\n")
                    return
                if request.header("transfer-encoding") is not None:
                    await self._plain(writer, 501, "chunked request bodies are not supported\n")
                    return
                length = request.header("content-length")
                if length is not None:
                    try:
                        body = await reader.readexactly(int(length))
                    except (ValueError, asyncio.IncompleteReadError, ConnectionError):
                        return
                    request = Request(
                        request.method, request.target, request.version, request.headers, body, client
                    )
                bound.requests += 1
                entry = self._log.begin(bound.spec.name, request, number, tls=tls)
                outcome = "cancelled"
                keep = False
                try:
                    keep, outcome = await self._respond(bound, request, entry, reader, writer)
                except _ClientGone:
                    outcome = "client_gone"
                except (ConnectionError, OSError):
                    outcome = "client_gone"
                finally:
                    self._log.finish(entry, outcome)
                if outcome == "reset":
                    aborted = True
                if not keep:
                    return
        finally:
            if task is not None:
                self._tasks.discard(task)
            if not aborted:
                writer.close()
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(writer.wait_closed(), timeout=1)

    async def _respond(
        self,
        bound: _Bound,
        request: Request,
        entry: _Entry,
        reader: asyncio.StreamReader,
        writer: asyncio.StreamWriter,
    ) -> tuple[bool, str]:
        ctx = RouteContext(
            site=bound.spec.name,
            base_url=bound.base_url,
            now=entry.start,
            number=bound.requests,
            sites=dict(self._urls),
            tls=entry.tls,
        )
        try:
            response = await resolve(bound.spec.route_for(request.path), request, ctx)
        except Exception:
            traceback.print_exc(file=sys.stderr)
            response = text("fixture route failed\n", status=500)
        keep_alive = _client_keeps_alive(request) and not (
            response.close or response.endless or response.content_length is not None
        )
        if response.delay > 0:
            await _wait_or_gone(reader, response.delay)
        body = response.encoded_body()
        head = render_head(response, len(body), keep_alive=keep_alive)
        send_body = request.method != "HEAD" and response.has_body()

        if response.reset_after is not None:
            wire = head + (body if send_body else b"")
            part = wire[: response.reset_after]
            if part:
                writer.write(part)
                await writer.drain()
            self._log.update(
                entry, status=response.status if len(part) >= len(head) else None, sent=len(part)
            )
            _abort(writer)
            return False, "reset"

        writer.write(head)
        await writer.drain()
        self._log.update(entry, status=response.status, sent=len(head))
        if not send_body:
            return keep_alive, "ok"
        if response.endless:
            while True:
                await self._send(writer, entry, chunk(body))
                if reader.at_eof():
                    raise _ClientGone
                await asyncio.sleep(response.endless_interval)
        if response.trickle is not None:
            for i in range(len(body)):
                await self._send(writer, entry, body[i : i + 1])
                if i + 1 < len(body):
                    await asyncio.sleep(response.trickle)
                    if reader.at_eof():
                        raise _ClientGone
        elif response.chunked:
            for i in range(0, len(body), _CHUNK):
                await self._send(writer, entry, chunk(body[i : i + _CHUNK]))
            await self._send(writer, entry, chunk(b""))
        else:
            await self._send(writer, entry, body)
        return keep_alive, "ok"

    async def _send(self, writer: asyncio.StreamWriter, entry: _Entry, payload: bytes) -> None:
        if writer.is_closing():
            raise _ClientGone
        writer.write(payload)
        await writer.drain()
        self._log.update(entry, sent=len(payload))

    async def _plain(self, writer: asyncio.StreamWriter, status: int, message: str) -> None:
        response = text(message, status=status)
        with contextlib.suppress(ConnectionError, OSError):
            writer.write(render_head(response, len(response.body), keep_alive=False) + response.body)
            await writer.drain()


class _TlsOrPlain(asyncio.StreamReaderProtocol):
    """A connection of a TLS site: nothing is read until the first byte arrives; a TLS handshake starts
    with 0x16 (a ClientHello record), anything else is plain HTTP. Then it is an ordinary stream connection."""

    def __init__(
        self,
        tls: ssl.SSLContext,
        handler: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Any],
        limit: int,
    ) -> None:
        super().__init__(asyncio.StreamReader(limit=limit), handler)
        self._tls = tls
        self._choosing: asyncio.Task[None] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        transport.pause_reading()  # before the loop's first read: the first byte stays in the socket
        self._choosing = asyncio.get_running_loop().create_task(self._choose(transport))

    async def _choose(self, transport: asyncio.Transport) -> None:
        loop = asyncio.get_running_loop()
        try:
            first = await _peek_byte(transport.get_extra_info("socket").fileno())
            if first == b"\x16":
                tls_transport = await loop.start_tls(transport, self, self._tls, server_side=True)
                if tls_transport is None:
                    raise ConnectionError("TLS handshake did not finish")
                super().connection_made(tls_transport)
            else:
                super().connection_made(transport)
                transport.resume_reading()
        except (OSError, ssl.SSLError, ConnectionError):
            transport.abort()


async def _peek_byte(fileno: int) -> bytes:
    """The socket's first byte, left unread (b"" when the peer closed first)."""
    loop = asyncio.get_running_loop()
    peek = socket.socket(fileno=os.dup(fileno))
    try:
        readable: asyncio.Future[None] = loop.create_future()

        def ready() -> None:
            if not readable.done():
                readable.set_result(None)

        loop.add_reader(peek.fileno(), ready)
        try:
            await readable
        finally:
            loop.remove_reader(peek.fileno())
        return peek.recv(1, socket.MSG_PEEK)
    finally:
        peek.close()


def _client_keeps_alive(request: Request) -> bool:
    tokens = {t.strip().lower() for t in (request.header("connection") or "").split(",")}
    if "close" in tokens:
        return False
    return request.version == "HTTP/1.1" or "keep-alive" in tokens


async def _wait_or_gone(reader: asyncio.StreamReader, seconds: float) -> None:
    """Sleep `seconds` (math.inf: forever), ending early with _ClientGone if the client closes."""
    deadline = math.inf if math.isinf(seconds) else time.monotonic() + seconds
    while True:
        if reader.at_eof():
            raise _ClientGone
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return
        await asyncio.sleep(min(remaining, _POLL))


def _abort(writer: asyncio.StreamWriter) -> None:
    """Close with an RST: linger 0 makes the kernel drop the connection instead of a FIN handshake."""
    sock = writer.get_extra_info("socket")
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    writer.transport.abort()
