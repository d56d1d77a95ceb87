"""httpcore on asyncio's locks, event and semaphore, without anyio's cancellation shield."""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from pathlib import Path

import anyio
import httpcore
import httpx
import pytest
from h2.config import H2Configuration
from h2.connection import H2Connection
from h2.events import RequestReceived, StreamReset
from h2.settings import SettingCodes, Settings
from httpcore._async import connection, connection_pool, http2, http11

from seolens_core.fetch._pool import KeptSocketBackend, LinearPool, pooled_transport
from seolens_core.fetch._sync import (
    AsyncioEvent,
    AsyncioLock,
    AsyncioSemaphore,
    NoShield,
    use_asyncio_primitives,
)
from tests.unit.fetch.test_fetch_pool import _self_signed


def test_building_the_fetch_pool_points_httpcore_at_asyncios_primitives() -> None:
    for _ in range(2):  # idempotent
        pooled_transport(http2=True, limits=httpx.Limits(max_connections=2))
        assert connection.AsyncLock is AsyncioLock
        assert http11.AsyncLock is AsyncioLock and http2.AsyncLock is AsyncioLock
        assert connection_pool.AsyncEvent is AsyncioEvent
        assert http2.AsyncSemaphore is AsyncioSemaphore
        assert {connection_pool.AsyncShieldCancellation, http11.AsyncShieldCancellation} == {NoShield}
        assert http2.AsyncShieldCancellation is NoShield


def test_an_httpcore_without_one_of_the_names_is_left_as_it_is(monkeypatch: pytest.MonkeyPatch) -> None:
    """All names are checked before any is replaced: no half-replaced httpcore."""
    stock = object()
    monkeypatch.setattr(connection, "AsyncLock", stock)
    monkeypatch.delattr(http2, "AsyncSemaphore")
    with pytest.raises(RuntimeError, match="AsyncSemaphore"):
        use_asyncio_primitives()
    assert connection.AsyncLock is stock


def test_anyios_shield_does_not_hold_off_asyncios_own_cancellation() -> None:
    """Why `NoShield` loses nothing: the fetcher's deadline is `asyncio.timeout`, which anyio's shield lets
    through (if anyio ever holds it off, this fails and `_sync.py` must shield too)."""

    async def shielded(log: list[str]) -> None:
        with anyio.CancelScope(shield=True):
            try:
                await asyncio.sleep(1)
                log.append("finished")
            except asyncio.CancelledError:
                log.append("cancelled inside the shield")
                raise

    async def go() -> list[str]:
        log: list[str] = []
        try:
            async with asyncio.timeout(0.05):
                await shielded(log)
        except TimeoutError:
            log.append("timed out")
        task = asyncio.ensure_future(shielded(log))
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return log

    assert asyncio.run(go()) == ["cancelled inside the shield", "timed out", "cancelled inside the shield"]


def test_the_event_returns_once_set_and_is_a_pool_timeout_otherwise() -> None:
    async def go() -> tuple[float, float, type[BaseException] | None]:
        ready = AsyncioEvent()
        ready.set()
        started = time.perf_counter()
        await ready.wait(timeout=5)
        at_once = time.perf_counter() - started

        later = AsyncioEvent()
        asyncio.get_running_loop().call_later(0.05, later.set)
        started = time.perf_counter()
        await later.wait(timeout=5)
        woken = time.perf_counter() - started

        raised = None
        try:
            await AsyncioEvent().wait(timeout=0.05)
        except httpcore.PoolTimeout as exc:
            raised = type(exc)
        return at_once, woken, raised

    at_once, woken, raised = asyncio.run(go())
    assert at_once < 0.01
    assert 0.04 <= woken < 1
    assert raised is httpcore.PoolTimeout


def test_the_lock_excludes_and_the_semaphore_is_bounded() -> None:
    async def go() -> tuple[list[str], bool]:
        lock, order = AsyncioLock(), []

        async def hold(name: str) -> None:
            async with lock:
                order.append(f"{name} in")
                await asyncio.sleep(0.01)
                order.append(f"{name} out")

        await asyncio.gather(hold("a"), hold("b"))
        semaphore = AsyncioSemaphore(1)
        await semaphore.acquire()
        await semaphore.release()
        try:
            await semaphore.release()
        except ValueError:
            return order, True
        return order, False

    order, bounded = asyncio.run(go())
    assert order == ["a in", "a out", "b in", "b out"]
    assert bounded


def test_http2_streams_share_one_connection_within_the_servers_stream_limit(tmp_path: Path) -> None:
    """HTTP/2 through the fetch pool on asyncio's primitives: eight requests on one connection to a server
    allowing three streams at a time never have more than three open; one cancelled mid-stream leaves the
    connection serving the others, and the next request."""
    cert, key = _self_signed(tmp_path)
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_context.load_cert_chain(cert, key)
    server_context.set_alpn_protocols(["h2"])
    client_context = ssl.create_default_context(cafile=str(cert))
    client_context.set_alpn_protocols(["h2", "http/1.1"])
    open_streams: set[int] = set()
    most_open = 0
    connections = 0

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        nonlocal connections, most_open
        connections += 1
        h2 = H2Connection(H2Configuration(client_side=False))
        # In the first SETTINGS frame: a limit lowered by a later one finds streams open past it, which
        # httpcore answers with LocalProtocolError (its own pool as well as ours).
        h2.local_settings = Settings(client=False, initial_values={SettingCodes.MAX_CONCURRENT_STREAMS: 3})
        h2.initiate_connection()
        writer.write(h2.data_to_send())

        async def answer(stream_id: int, path: bytes) -> None:
            await asyncio.sleep(0.05 if path != b"/stall" else 5)
            open_streams.discard(stream_id)
            body = path
            h2.send_headers(stream_id, [(":status", "200"), ("content-length", str(len(body)))])
            h2.send_data(stream_id, body, end_stream=True)
            writer.write(h2.data_to_send())

        answering: set[asyncio.Task[None]] = set()
        with contextlib.suppress(ConnectionError, asyncio.CancelledError):
            while data := await reader.read(65535):
                for event in h2.receive_data(data):
                    if isinstance(event, RequestReceived):
                        open_streams.add(event.stream_id)
                        most_open = max(most_open, len(open_streams))
                        path = dict(event.headers)[b":path"]
                        task = asyncio.ensure_future(answer(event.stream_id, path))
                        answering.add(task)
                        task.add_done_callback(answering.discard)
                    elif isinstance(event, StreamReset):
                        open_streams.discard(event.stream_id)
                writer.write(h2.data_to_send())
        for task in list(answering):
            task.cancel()
        writer.close()

    async def go() -> tuple[list[bytes], bool, bytes]:
        server = await asyncio.start_server(serve, "127.0.0.1", 0, ssl=server_context)
        port = server.sockets[0].getsockname()[1]
        use_asyncio_primitives()
        pool = LinearPool(
            ssl_context=client_context, http1=True, http2=True, network_backend=KeptSocketBackend()
        )

        async def get(path: str) -> bytes:
            response = await pool.request("GET", f"https://127.0.0.1:{port}{path}")
            assert response.extensions["http_version"] == b"HTTP/2"
            return response.content

        try:
            stalled = asyncio.ensure_future(get("/stall"))
            bodies = await asyncio.gather(*(get(f"/p{i}") for i in range(8)))
            stalled.cancel()
            cancelled = (await asyncio.gather(stalled, return_exceptions=True))[0]
            after = await asyncio.wait_for(get("/after"), timeout=5)
        finally:
            await pool.aclose()
            server.close()
        return list(bodies), isinstance(cancelled, asyncio.CancelledError), after

    bodies, cancelled, after = asyncio.run(go())
    assert bodies == [f"/p{i}".encode() for i in range(8)]
    assert cancelled and after == b"/after"
    assert connections == 1
    assert most_open == 3
