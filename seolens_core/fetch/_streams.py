"""The fetch pool's network streams: httpcore's anyio streams, with the idle check reading a kept socket.

httpcore asks every idle pooled connection whether its socket is readable (a server-closed connection)
each time a request starts or ends. Its anyio stream answers by rebuilding anyio's map of socket attributes,
a `getpeername()` system call and a dict of lambdas, before polling: with a few dozen pooled connections,
several percent of a fetch worker's CPU. These streams look the socket up once and poll it directly.
"""

from __future__ import annotations

import socket
import ssl
import typing

import httpcore
import httpx
from httpcore._utils import is_socket_readable  # httpcore's own poll, so the answer stays httpcore's

__all__ = ["KeptSocketBackend", "pooled_transport"]

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
    """httpcore's anyio backend whose streams answer the pool's idle check from the socket kept at connect."""

    def __init__(self, inner: httpcore.AsyncNetworkBackend | None = None) -> None:
        self._inner = inner if inner is not None else httpcore.AnyIOBackend()

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


def pooled_transport(*, http2: bool, limits: httpx.Limits) -> httpx.AsyncHTTPTransport:
    """httpx's transport, its connection pool built as httpx builds it (no proxy, no environment) on
    `KeptSocketBackend`. httpx takes no network backend, so its pool is replaced."""
    transport = httpx.AsyncHTTPTransport(http2=http2, limits=limits, trust_env=False)
    if not isinstance(getattr(transport, "_pool", None), httpcore.AsyncConnectionPool):
        raise RuntimeError("httpx.AsyncHTTPTransport no longer keeps an httpcore pool in `_pool`")
    transport._pool = httpcore.AsyncConnectionPool(
        ssl_context=httpx.create_ssl_context(trust_env=False),
        max_connections=limits.max_connections,
        max_keepalive_connections=limits.max_keepalive_connections,
        keepalive_expiry=limits.keepalive_expiry,
        http1=True,
        http2=http2,
        network_backend=KeptSocketBackend(),
    )
    return transport
