"""A container's thread tells sniffio it runs asyncio (httpcore and anyio ask it per lock and cancel scope)."""

from __future__ import annotations

import threading

import sniffio

from seolens_core.adapters._aws import Resources
from seolens_core.bootstrap import Container

RESOURCES = Resources("crawls", "urls", "hosts", "http://q/frontier", "http://q/dead", "bucket")


def test_container_thread_names_asyncio_until_closed() -> None:
    seen: dict[str, object] = {}

    def environment() -> None:
        seen["before"] = sniffio.thread_local.name
        app = Container(RESOURCES)

        async def ask() -> str:
            return sniffio.current_async_library()

        seen["inside"] = app.run(ask())
        seen["named"] = sniffio.thread_local.name
        app.close()
        seen["after"] = sniffio.thread_local.name

    thread = threading.Thread(target=environment)
    thread.start()
    thread.join()
    assert seen == {"before": None, "inside": "asyncio", "named": "asyncio", "after": None}
    assert sniffio.thread_local.name is None  # another thread's setting never leaks into this one
