"""The fetch pool: httpcore's decisions and answers, at a cost linear in its connections."""

from __future__ import annotations

import asyncio
import contextlib
import random
import shutil
import ssl
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpcore
import httpx
import pytest

from seolens_core.fetch import AddressPolicy, Fetcher, FetchErrorKind
from seolens_core.fetch._pool import KeptSocketBackend, LinearPool, pooled_transport


class _CountingBackend(httpcore.AsyncNetworkBackend):
    """httpcore's anyio backend, counting the attribute look-ups of its streams."""

    def __init__(self) -> None:
        self.inner = httpcore.AnyIOBackend()
        self.lookups: list[str] = []
        self.streams: list[httpcore.AsyncNetworkStream] = []

    async def connect_tcp(
        self, host: str, port: int, *args: Any, **kwargs: Any
    ) -> httpcore.AsyncNetworkStream:
        stream = await self.inner.connect_tcp(host, port, *args, **kwargs)
        self.streams.append(stream)
        real = stream.get_extra_info

        def counted(info: str) -> Any:
            self.lookups.append(info)
            return real(info)

        stream.get_extra_info = counted  # type: ignore[method-assign]
        return stream

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)


def test_idle_checks_answer_as_httpcores_stream_and_look_the_socket_up_once() -> None:
    """Idle: not readable; data waiting or the server gone: readable, as httpcore's own stream says."""

    async def go() -> tuple[list[tuple[bool, bool]], list[str]]:
        peers: list[asyncio.StreamWriter] = []

        async def accept(_: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            peers.append(writer)

        server = await asyncio.start_server(accept, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        counting = _CountingBackend()
        stream = await KeptSocketBackend(counting).connect_tcp("127.0.0.1", port)
        while not peers:
            await asyncio.sleep(0.01)
        inner = counting.streams[0]

        async def both() -> tuple[bool, bool]:
            await asyncio.sleep(0.05)
            return stream.get_extra_info("is_readable"), inner.get_extra_info("is_readable")

        answers = [await both()]
        peers[0].write(b"HTTP/1.1 200 OK\r\n")
        await peers[0].drain()
        answers.append(await both())
        await stream.read(100)
        answers.append(await both())
        peers[0].close()
        answers.append(await both())
        lookups = list(counting.lookups)
        await stream.aclose()
        server.close()
        return answers, lookups

    answers, lookups = asyncio.run(go())
    assert [ours for ours, _ in answers] == [False, True, False, True]
    assert all(ours == httpcores for ours, httpcores in answers)
    # httpcore's stream asked "is_readable" each time (the test's comparisons); ours looked the socket up once
    assert lookups.count("is_readable") == len(answers) and lookups.count("socket") == 1


def _self_signed(tmp: Path) -> tuple[Path, Path]:
    """A certificate and key for 127.0.0.1 made with the openssl command (skips the test without it)."""
    openssl = shutil.which("openssl")
    if openssl is None:
        pytest.skip("no openssl command to make a test certificate")
    cert, key = tmp / "cert.pem", tmp / "key.pem"
    subprocess.run(
        [
            openssl,
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            str(key),
            "-out",
            str(cert),
        ],
        check=True,
        capture_output=True,
    )
    return cert, key


def test_a_tls_stream_keeps_answering_the_idle_check(tmp_path: Path) -> None:
    """After `start_tls` the stream is still ours: its idle check polls the socket under TLS as httpcore's
    own TLS stream does (not readable while idle, readable once the server has gone)."""
    cert, key = _self_signed(tmp_path)
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_context.load_cert_chain(cert, key)
    client_context = ssl.create_default_context(cafile=str(cert))

    async def go() -> tuple[str, list[tuple[bool, bool]]]:
        peers: list[asyncio.StreamWriter] = []

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
            await writer.drain()
            peers.append(writer)

        server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=server_context)
        port = server.sockets[0].getsockname()[1]
        counting = _CountingBackend()
        plain = await KeptSocketBackend(counting).connect_tcp("127.0.0.1", port)
        stream = await plain.start_tls(client_context, server_hostname="127.0.0.1")
        await stream.write(b"GET / HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        head = b""
        while not head.endswith(b"ok"):
            head += await stream.read(1000)
        while not peers:
            await asyncio.sleep(0.01)
        connection = counting.streams[0]  # the plain stream under TLS: the same socket

        async def both() -> tuple[bool, bool]:
            await asyncio.sleep(0.05)
            return stream.get_extra_info("is_readable"), httpcore._utils.is_socket_readable(
                connection.get_extra_info("socket")
            )

        answers = [await both()]
        peers[0].close()
        answers.append(await both())
        kind = type(stream).__name__
        await stream.aclose()
        server.close()
        return kind, answers

    kind, answers = asyncio.run(go())
    assert kind == "_KeptSocketStream"
    assert [ours for ours, _ in answers] == [False, True]
    assert all(ours == httpcores for ours, httpcores in answers)


def test_the_fetch_pool_drops_a_connection_the_server_closed() -> None:
    """A server that closes each connection after its response without saying so: the next fetch goes out
    on a new connection instead of failing on the closed one (the idle check saw it)."""

    async def go() -> tuple[list[int | None], int, str]:
        connections = 0

        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            nonlocal connections
            connections += 1
            await reader.readuntil(b"\r\n\r\n")
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: 2\r\n\r\nok")
            await writer.drain()
            writer.close()

        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        fetcher = Fetcher(
            user_agent="SEOLensTest/1", policy=AddressPolicy.for_hosts([f"127.0.0.1:{port}"]), http2=False
        )
        statuses = []
        try:
            for _ in range(3):
                result = await fetcher.fetch(f"http://127.0.0.1:{port}/")
                statuses.append(result.status)
                await asyncio.sleep(0.1)  # the close reaches the client before the next request
            pool = fetcher._client._transport._pool  # type: ignore[attr-defined]
            backend = f"{type(pool).__name__} on {type(pool._network_backend).__name__}"
        finally:
            await fetcher.aclose()
            server.close()
        return statuses, connections, backend

    statuses, connections, backend = asyncio.run(go())
    assert backend == "LinearPool on KeptSocketBackend"
    assert statuses == [200, 200, 200]
    assert connections == 3


class _Connection:
    """A pooled connection as the pool's assignment pass sees it (a fixed state, no I/O)."""

    def __init__(self, label: str, origin: str, state: str) -> None:
        self.label, self.origin, self.state = label, origin, state

    def is_closed(self) -> bool:
        return self.state == "closed"

    def has_expired(self) -> bool:
        return self.state == "expired"

    def is_idle(self) -> bool:
        return self.state == "idle"

    def is_available(self) -> bool:
        return self.state in ("idle", "multiplexing")

    def can_handle_request(self, origin: str) -> bool:
        return origin == self.origin


class _Request:
    def __init__(self, origin: str, queued: bool) -> None:
        self.request = SimpleNamespace(url=SimpleNamespace(origin=origin), extensions={})
        self.queued = queued
        self.assigned: list[str] = []
        self.connection: _Connection | None = None

    def is_queued(self) -> bool:
        return self.queued

    def assign_to_connection(self, connection: _Connection) -> None:
        self.assigned.append(connection.label)


def test_linear_pool_assigns_as_httpcores_pool_does() -> None:
    """`LinearPool`'s assignment pass against upstream's (requests without a TLS server name), on 3,000 random pools (closed, expired, idle,
    busy and multiplexing connections to three origins, queued and started requests, tight limits): the
    same connections kept, closed and created, in the same order, and the same request assignments."""
    rng = random.Random(7)
    states = ["closed", "expired", "idle", "idle", "busy", "multiplexing"]
    origins = ["a", "b", "c"]
    outcomes = set()

    def run(pool_class: type[httpcore.AsyncConnectionPool], seed: int) -> tuple[Any, ...]:
        local = random.Random(seed)
        limit = local.randint(1, 8)
        pool = pool_class(max_connections=limit, max_keepalive_connections=local.randint(0, limit))
        made = iter(range(100))
        pool.create_connection = lambda origin: _Connection(f"new{next(made)}-{origin}", origin, "new")  # type: ignore[method-assign,assignment,misc]
        pool._connections = [
            _Connection(f"c{i}", local.choice(origins), local.choice(states))
            for i in range(local.randint(0, limit))
        ]  # type: ignore[assignment]
        requests = [_Request(local.choice(origins), local.random() < 0.7) for _ in range(local.randint(0, 6))]
        pool._requests = requests  # type: ignore[assignment]
        closing = pool._assign_requests_to_connections()
        return (
            [c.label for c in pool._connections],  # type: ignore[attr-defined]
            [c.label for c in closing],  # type: ignore[attr-defined]
            [r.assigned for r in requests],
        )

    for _ in range(3000):
        seed = rng.randrange(1 << 30)
        ours = run(LinearPool, seed)
        assert ours == run(httpcore.AsyncConnectionPool, seed), seed
        kept, closing, assigned = ours
        outcomes.add((bool(closing), any(label.startswith("new") for label in kept), any(assigned)))
    assert len(outcomes) >= 6  # the pools closed, created, reused and left requests waiting in many mixes


_HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n"


def test_fetches_cut_by_the_deadline_mid_body_or_waiting_for_a_connection_leave_the_pool_usable() -> None:
    """Six fetches on a pool of two connections: two stall in their bodies, four wait for a connection; the
    fetcher's deadline (asyncio's) cancels all six, some of them right after the pool made them a connection.
    The pool is left with no request queued and no connection that never connected (httpcore's own pool
    keeps those for good), and serves the next fetch."""

    async def go() -> tuple[list[FetchErrorKind | None], int, list[str], int | None, int]:
        async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            with contextlib.suppress(asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
                while True:
                    head = await reader.readuntil(b"\r\n\r\n")
                    if head.startswith(b"GET /slow"):
                        writer.write(_HEAD % 100 + b"slo")
                        await writer.drain()
                        await asyncio.sleep(5)
                        break
                    writer.write(_HEAD % 2 + b"ok")
                    await writer.drain()
            writer.close()

        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        transport = pooled_transport(http2=False, limits=httpx.Limits(max_connections=2))
        fetcher = Fetcher(
            user_agent="SEOLensTest/1",
            policy=AddressPolicy.for_hosts([f"127.0.0.1:{port}"]),
            http2=False,
            total_timeout_s=0.3,
            transport=transport,
        )
        try:
            cut = await asyncio.gather(*(fetcher.fetch(f"http://127.0.0.1:{port}/slow") for _ in range(6)))
            pool = transport._pool  # type: ignore[attr-defined]
            queued = len(pool._requests)
            unconnected = [
                c.info() for c in pool._connections if c.info() in ("CONNECTING", "CONNECTION FAILED")
            ]
            after = await fetcher.fetch(f"http://127.0.0.1:{port}/ok")
            connections = len(pool._connections)
        finally:
            await fetcher.aclose()
            server.close()
        return (
            [r.error.kind if r.error else None for r in cut],
            queued,
            unconnected,
            after.status,
            connections,
        )

    kinds, queued, unconnected, status, connections = asyncio.run(go())
    assert kinds == [FetchErrorKind.TIMEOUT] * 6
    assert queued == 0
    assert unconnected == []
    assert status == 200
    assert connections <= 2
