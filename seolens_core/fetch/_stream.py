"""httpcore's network backend on asyncio's own streams, with httpcore's exceptions.

httpcore runs on asyncio through anyio, whose stream opens a cancel scope (`fail_after`) and yields to the
loop (a checkpoint) on every read and write: ~9% of the fetcher's CPU a fetch (`benchmarks/bench_fetch.py`).
The crawler only runs on asyncio, so its streams are asyncio's, with a deadline only where one is given.
"""

from __future__ import annotations

import asyncio
import ssl
import typing

import httpcore

__all__ = ["AsyncioBackend", "AsyncioStream"]

_DRAIN_ABOVE = 64 * 1024
"""Bytes left in the transport's buffer above which a write waits for it to drain (a request head or body)."""


class AsyncioStream(httpcore.AsyncNetworkStream):
    """One connection as asyncio's reader and writer; TLS is started on the same connection."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self._reader = reader
        self._writer = writer

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        try:
            if timeout is None:
                return await self._reader.read(max_bytes)
            async with asyncio.timeout(timeout):
                return await self._reader.read(max_bytes)
        except TimeoutError as exc:
            raise httpcore.ReadTimeout(str(exc) or "read timed out") from exc
        except OSError as exc:
            raise httpcore.ReadError(str(exc) or type(exc).__name__) from exc

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        if not buffer:
            return
        # asyncio's transport drops a write to a lost connection without a word: say so, as anyio's does.
        if self._writer.transport.is_closing():
            raise httpcore.WriteError("the connection is closed")
        try:
            self._writer.write(buffer)
            if self._writer.transport.get_write_buffer_size() > _DRAIN_ABOVE:
                async with asyncio.timeout(timeout):
                    await self._writer.drain()
        except TimeoutError as exc:
            raise httpcore.WriteTimeout(str(exc) or "write timed out") from exc
        except OSError as exc:
            raise httpcore.WriteError(str(exc) or type(exc).__name__) from exc

    async def aclose(self) -> None:
        self._writer.close()

    async def start_tls(
        self,
        ssl_context: ssl.SSLContext,
        server_hostname: str | None = None,
        timeout: float | None = None,
    ) -> httpcore.AsyncNetworkStream:
        try:
            async with asyncio.timeout(timeout):
                await self._writer.start_tls(ssl_context, server_hostname=server_hostname)
        except TimeoutError as exc:
            self._writer.close()
            raise httpcore.ConnectTimeout(str(exc) or "TLS handshake timed out") from exc
        except (
            OSError,
            ssl.SSLError,
        ) as exc:  # as httpcore's anyio stream: a failed handshake is a ConnectError
            self._writer.close()
            raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
        return self

    def get_extra_info(self, info: str) -> typing.Any:
        if info == "socket":
            return self._writer.get_extra_info("socket")
        if info == "ssl_object":
            return self._writer.get_extra_info("ssl_object")
        if info == "client_addr":
            return self._writer.get_extra_info("sockname")
        if info == "server_addr":
            return self._writer.get_extra_info("peername")
        return None


class AsyncioBackend(httpcore.AsyncNetworkBackend):
    """TCP connections opened with `asyncio.open_connection` (TCP_NODELAY, as anyio sets it). The crawler opens
    no Unix socket: `connect_unix_socket` stays httpcore's (NotImplementedError)."""

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: typing.Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        local = (local_address, 0) if local_address else None
        try:
            async with asyncio.timeout(timeout):
                reader, writer = await asyncio.open_connection(host, port, local_addr=local)
        except TimeoutError as exc:
            raise httpcore.ConnectTimeout(str(exc) or "connect timed out") from exc
        except OSError as exc:
            raise httpcore.ConnectError(str(exc) or type(exc).__name__) from exc
        _apply(writer, socket_options)
        return AsyncioStream(reader, writer)

    async def sleep(self, seconds: float) -> None:
        await asyncio.sleep(seconds)


def _apply(writer: asyncio.StreamWriter, options: typing.Iterable[httpcore.SOCKET_OPTION] | None) -> None:
    sock = writer.get_extra_info("socket")
    for option in options or ():
        sock.setsockopt(*option)
