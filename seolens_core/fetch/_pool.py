"""The fetch pool: httpx's transport on httpcore's pool, without two costs that grow with its connections.

httpcore's pool re-examines every pooled connection each time a request starts or ends. Two parts of that
cost more than the request itself once a container holds a few dozen connections (one host at a concurrency
of 32, or many hosts kept alive): for each idle connection it counts the pool by building a list of every
connection (quadratic: encode/httpcore#1035, still open), and it asks the connection's stream whether
its socket is readable, which on anyio's stream rebuilds a map of socket attributes (a `getpeername()` system
call) before polling. `LinearPool` counts with `len`, `KeptSocketBackend`'s streams poll a socket looked up once.
"""

from __future__ import annotations

import socket
import ssl
import typing
import weakref

import httpcore
import httpx
from httpcore._async.interfaces import AsyncConnectionInterface
from httpcore._utils import is_socket_readable  # httpcore's own poll, so the answer stays httpcore's

from seolens_core.fetch._stream import AsyncioBackend
from seolens_core.fetch._sync import use_asyncio_primitives

__all__ = ["KeptSocketBackend", "LinearPool", "pooled_transport"]

_NOT_LOOKED_UP: typing.Any = object()


class _KeptSocketStream(httpcore.AsyncNetworkStream):
    """One connection's stream: everything goes to httpcore's stream, `is_readable` polls the kept socket."""

    def __init__(self, inner: httpcore.AsyncNetworkStream) -> None:
        self._inner = inner
        self._socket: socket.socket | None = _NOT_LOOKED_UP

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return await self._inner.read(max_bytes, timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self._inner.write(buffer, timeout)

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        return _KeptSocketStream(await self._inner.start_tls(ssl_context, server_hostname, timeout))

    def get_extra_info(self, info: str) -> typing.Any:
        if info != "is_readable":
            return self._inner.get_extra_info(info)
        if self._socket is _NOT_LOOKED_UP:
            self._socket = self._inner.get_extra_info("socket")  # the same object for the stream's life
        return is_socket_readable(self._socket)


class KeptSocketBackend(httpcore.AsyncNetworkBackend):
    """A network backend (`AsyncioBackend` unless given) whose streams answer the pool's idle check from the
    socket kept at connect."""

    def __init__(self, inner: httpcore.AsyncNetworkBackend | None = None) -> None:
        self._inner = inner if inner is not None else AsyncioBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        stream = await self._inner.connect_tcp(host, port, timeout, local_address, socket_options)
        return _KeptSocketStream(stream)

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        return _KeptSocketStream(await self._inner.connect_unix_socket(path, timeout, socket_options))

    async def sleep(self, seconds: float) -> None:
        await self._inner.sleep(seconds)


class LinearPool(httpcore.AsyncConnectionPool):
    """httpcore 1.0's pool, assigning requests to connections as it does, in time linear in its connections.

    `_assign_requests_to_connections` is upstream's (1.0.9) with its decisions unchanged: the surplus-idle
    test compares the number of connections (upstream builds a list of them to count it, per idle
    connection) with the keep-alive limit; a request takes the first connection that can serve it (found
    without listing the others) and lists the idle ones only when it must close one. One decision is
    added: a connection no request holds that never connected is closed. Upstream keeps it for good when
    the request it was made for is cancelled before connecting it (a fetch's deadline while it waits for
    a connection): an HTTP/1.1 one is then neither idle, closed nor available, and holds a slot of the
    pool until the pool is full of them and every fetch times out.

    Connections are matched by origin and by TLS server name (SNI, the `sni_hostname` extension), not by
    origin alone: the fetcher connects to a checked IP address, so two host names on one IP:port share an
    origin, and reusing a.test's verified connection for b.test would skip b.test's certificate check.
    """

    def __init__(self, *args: typing.Any, **kwargs: typing.Any) -> None:
        super().__init__(*args, **kwargs)
        self._server_names: weakref.WeakKeyDictionary[AsyncConnectionInterface, object] = (
            weakref.WeakKeyDictionary()
        )

    def _new_connection(self, origin: httpcore.Origin, server_name: object) -> AsyncConnectionInterface:
        connection = self.create_connection(origin)
        self._server_names[connection] = server_name
        self._connections.append(connection)
        return connection

    def _assign_requests_to_connections(self) -> list[AsyncConnectionInterface]:
        closing_connections = []
        held = {id(request.connection) for request in self._requests if request.connection is not None}
        for connection in list(self._connections):
            if connection.is_closed():
                self._connections.remove(connection)
            elif (
                connection.has_expired()
                or (connection.is_idle() and len(self._connections) > self._max_keepalive_connections)
                or (id(connection) not in held and _never_connected(connection))
            ):
                self._connections.remove(connection)
                closing_connections.append(connection)

        names = self._server_names
        for pool_request in [request for request in self._requests if request.is_queued()]:
            origin = pool_request.request.url.origin
            name = pool_request.request.extensions.get("sni_hostname")
            available = next(
                (
                    c
                    for c in self._connections
                    if c.can_handle_request(origin) and names.get(c) == name and c.is_available()
                ),
                None,
            )
            if available is not None:
                pool_request.assign_to_connection(available)
            elif len(self._connections) < self._max_connections:
                pool_request.assign_to_connection(self._new_connection(origin, name))
            else:
                idle = next((c for c in self._connections if c.is_idle()), None)
                if idle is not None:
                    self._connections.remove(idle)
                    closing_connections.append(idle)
                    pool_request.assign_to_connection(self._new_connection(origin, name))
        return closing_connections


def _never_connected(connection: AsyncConnectionInterface) -> bool:
    """An `httpcore.AsyncHTTPConnection` whose connect has not started or succeeded (`_connection` is its
    connection once made; failed connects are `is_closed()`)."""
    return isinstance(connection, httpcore.AsyncHTTPConnection) and connection._connection is None


def crawler_ssl_context() -> ssl.SSLContext:
    """The verifying TLS context of the fetch path: certifi's CA bundle, host names checked (tests that
    serve TLS on loopback replace this function to trust their own CA)."""
    return httpx.create_ssl_context(trust_env=False)


def pooled_transport(
    *, http2: bool, limits: httpx.Limits, ssl_context: ssl.SSLContext | None = None
) -> httpx.AsyncHTTPTransport:
    """httpx's transport with its connection pool built as httpx builds it (no proxy, no environment), as a
    `LinearPool` on `KeptSocketBackend`: httpx takes neither, so its pool is replaced. httpcore's locks and
    shields become asyncio's (`_sync.py`)."""
    use_asyncio_primitives()
    # One CA bundle load, shared by the transport and the pool that replaces its own.
    if ssl_context is None:
        ssl_context = crawler_ssl_context()
    transport = httpx.AsyncHTTPTransport(verify=ssl_context, http2=http2, limits=limits, trust_env=False)
    if not isinstance(getattr(transport, "_pool", None), httpcore.AsyncConnectionPool):
        raise RuntimeError("httpx.AsyncHTTPTransport no longer keeps an httpcore pool in `_pool`")
    transport._pool = LinearPool(
        ssl_context=ssl_context,
        max_connections=limits.max_connections,
        max_keepalive_connections=limits.max_keepalive_connections,
        keepalive_expiry=limits.keepalive_expiry,
        http1=True,
        http2=http2,
        network_backend=KeptSocketBackend(),
    )
    return transport
