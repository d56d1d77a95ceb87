"""The fetcher's network backend on asyncio streams: bytes both ways, and httpcore's errors for each failure."""

from __future__ import annotations

import asyncio
import socket
import ssl
from collections.abc import Awaitable, Callable
from pathlib import Path

import httpcore
import pytest

from seolens_core.fetch._stream import AsyncioBackend
from tests.unit.fetch.test_fetch_pool import _self_signed

Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


async def _serve(handler: Handler, context: ssl.SSLContext | None = None) -> tuple[asyncio.Server, int]:
    server = await asyncio.start_server(handler, "127.0.0.1", 0, ssl=context)
    return server, server.sockets[0].getsockname()[1]


def test_a_stream_carries_bytes_both_ways_and_reads_empty_once_the_server_closed() -> None:
    async def echo_once(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write((await reader.readexactly(5)).upper())
        await writer.drain()
        writer.close()

    async def go() -> tuple[bytes, bytes, tuple[str, int]]:
        server, port = await _serve(echo_once)
        stream = await AsyncioBackend().connect_tcp("127.0.0.1", port, timeout=5)
        await stream.write(b"hello", timeout=5)
        got = b""
        while len(got) < 5:
            got += await stream.read(100, timeout=5)
        after = await stream.read(100, timeout=5)
        peer = stream.get_extra_info("server_addr")
        await stream.aclose()
        server.close()
        return got, after, peer

    got, after, peer = asyncio.run(go())
    assert (got, after) == (b"HELLO", b"")
    assert peer[0] == "127.0.0.1"


def test_a_silent_server_is_a_read_timeout_and_a_closed_stream_refuses_writes() -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()

    async def go() -> None:
        server, port = await _serve(silent)
        stream = await AsyncioBackend().connect_tcp("127.0.0.1", port)
        with pytest.raises(httpcore.ReadTimeout):
            await stream.read(100, timeout=0.05)
        await stream.aclose()
        with pytest.raises(httpcore.WriteError):
            await stream.write(b"late")
        server.close()

    asyncio.run(go())


def test_a_refused_connection_is_a_connect_error() -> None:
    with socket.socket() as sock:  # a port that was just free: nothing listens on it
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]

    async def go() -> None:
        with pytest.raises(httpcore.ConnectError):
            await AsyncioBackend().connect_tcp("127.0.0.1", port, timeout=5)

    asyncio.run(go())


def test_tls_negotiates_http2_by_alpn_and_an_untrusted_certificate_is_a_connect_error(tmp_path: Path) -> None:
    """httpcore picks HTTP/2 from the TLS object's ALPN answer; a handshake that fails is a ConnectError, as
    on httpcore's own backend (the fetcher files it under TLS)."""
    cert, key = _self_signed(tmp_path)
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_context.load_cert_chain(cert, key)
    server_context.set_alpn_protocols(["h2", "http/1.1"])
    trusting = ssl.create_default_context(cafile=str(cert))
    trusting.set_alpn_protocols(["h2", "http/1.1"])
    untrusting = ssl.create_default_context()
    untrusting.load_verify_locations(cadata=_other_ca(tmp_path))

    async def idle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()

    async def go() -> str:
        server, port = await _serve(idle, server_context)
        plain = await AsyncioBackend().connect_tcp("127.0.0.1", port, timeout=5)
        stream = await plain.start_tls(trusting, server_hostname="127.0.0.1", timeout=5)
        protocol = stream.get_extra_info("ssl_object").selected_alpn_protocol()
        await stream.aclose()
        refused = await AsyncioBackend().connect_tcp("127.0.0.1", port, timeout=5)
        with pytest.raises(httpcore.ConnectError):
            await refused.start_tls(untrusting, server_hostname="127.0.0.1", timeout=5)
        server.close()
        return str(protocol)

    assert asyncio.run(go()) == "h2"


def _other_ca(tmp_path: Path) -> str:
    """The certificate of another self-signed authority: one that did not sign the server's."""
    other = tmp_path / "other"
    other.mkdir()
    cert, _ = _self_signed(other)
    return cert.read_text()
