"""The embedded AWS: a moto server on 127.0.0.1 with the settings the local runtime relies on.

Server mode (not `mock_aws`) because aiobotocore talks HTTP and because moto's backends are only
thread-safe behind its server (see shared notes on local AWS emulation).
"""

from __future__ import annotations

import logging
import os
import socket
from dataclasses import dataclass, field

from moto.server import ThreadedMotoServer

REGION = "us-east-1"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class EmbeddedMoto:
    """A running moto server; `endpoint_url` is what every client is pointed at."""

    port: int
    _server: ThreadedMotoServer = field(repr=False)

    @property
    def endpoint_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self._server.stop()


def start_moto_server(port: int | None = None) -> EmbeddedMoto:
    """Start moto on 127.0.0.1 (a free port unless one is given) and return its handle."""
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    os.environ.setdefault("AWS_DEFAULT_REGION", REGION)
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    chosen = port or _free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=chosen, verbose=False)
    server.start()
    return EmbeddedMoto(port=chosen, _server=server)
