"""The fetch pool's streams: httpcore's answers to the idle check, from a socket looked up once."""

from __future__ import annotations

import asyncio
from typing import Any

import httpcore

from seolens_core.fetch import AddressPolicy, Fetcher
from seolens_core.fetch._streams import KeptSocketBackend


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
            ours = stream.get_extra_info("is_readable")
            return ours, httpcore._utils.is_socket_readable(inner.get_extra_info("socket"))

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
    # one "socket" look-up from our stream, then only the test's own (one per comparison)
    assert lookups.count("socket") == 1 + len(answers)


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
            backend = type(fetcher._client._transport._pool._network_backend).__name__  # type: ignore[attr-defined]
        finally:
            await fetcher.aclose()
            server.close()
        return statuses, connections, backend

    statuses, connections, backend = asyncio.run(go())
    assert backend == "KeptSocketBackend"
    assert statuses == [200, 200, 200]
    assert connections == 3
