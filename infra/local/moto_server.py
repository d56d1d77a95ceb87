"""The embedded AWS: a moto server on 127.0.0.1 with the settings the local runtime relies on.

Server mode (not `mock_aws`) because aiobotocore talks HTTP and because moto's backends are only
thread-safe behind its server (see shared notes on local AWS emulation). By default the server runs in
its own process (`python infra/local/moto_server.py --serve PORT`), so the emulator and the crawler use
both cores instead of sharing one GIL; `in_process=True` (or `SEOLENS_MOTO_INPROCESS=1`) keeps the old
thread. Either way `infra.local.moto_patches` is applied first. The child exits when its stdin closes,
so it never outlives the process that started it.
"""

from __future__ import annotations

import logging
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REGION = "us-east-1"
_REPO_ROOT = Path(__file__).resolve().parents[2]
_STARTUP_TIMEOUT_S = 30.0
EMULATOR_NICENESS = 10
"""The emulator runs below the crawler's CPU priority: on a small machine the crawler's timed work (a
request due in its pacing slot) must not wait behind the emulator's, as it never waits behind AWS's."""


class MotoStartError(RuntimeError):
    """The embedded moto server did not start accepting connections."""


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class EmbeddedMoto:
    """A running moto server; `endpoint_url` is what every client is pointed at."""

    port: int
    _stop: Callable[[], None] = field(repr=False)
    pid: int | None = None

    @property
    def endpoint_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self._stop()


def _set_aws_env() -> None:
    os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
    os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
    os.environ.setdefault("AWS_DEFAULT_REGION", REGION)


def _wait_for_port(port: int, proc: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + _STARTUP_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise MotoStartError(f"moto server exited with code {proc.returncode} on port {port}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.05)
    proc.kill()
    raise MotoStartError(f"moto server did not listen on port {port} within {_STARTUP_TIMEOUT_S} s")


def _start_subprocess(port: int) -> EmbeddedMoto:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(_REPO_ROOT), env.get("PYTHONPATH", "")) if p)
    proc = subprocess.Popen(
        [sys.executable, str(Path(__file__).resolve()), "--serve", str(port)],
        stdin=subprocess.PIPE,
        env=env,
    )
    _wait_for_port(port, proc)

    def stop() -> None:
        if proc.poll() is None:
            assert proc.stdin is not None
            proc.stdin.close()  # the child's watchdog exits on EOF
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    return EmbeddedMoto(port=port, _stop=stop, pid=proc.pid)


def _start_thread(port: int) -> EmbeddedMoto:
    from moto.server import ThreadedMotoServer

    from infra.local import moto_patches

    moto_patches.apply()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    return EmbeddedMoto(port=port, _stop=server.stop)


def start_moto_server(port: int | None = None, *, in_process: bool | None = None) -> EmbeddedMoto:
    """Start moto on 127.0.0.1 (a free port unless one is given) and return its handle."""
    _set_aws_env()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    chosen = port or _free_port()
    if in_process is None:
        in_process = os.environ.get("SEOLENS_MOTO_INPROCESS", "") == "1"
    return _start_thread(chosen) if in_process else _start_subprocess(chosen)


def _serve(port: int) -> None:
    """Child process entry: patch moto, serve until stdin closes."""
    _set_aws_env()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    from moto.moto_server.threaded_moto_server import MotoRequestHandler  # type: ignore[attr-defined]
    from moto.server import DomainDispatcherApplication, create_backend_app  # type: ignore[attr-defined]
    from werkzeug.serving import make_server

    from infra.local import moto_patches

    moto_patches.apply()
    os.nice(int(os.environ.get("SEOLENS_MOTO_NICENESS", EMULATOR_NICENESS)))

    def watchdog() -> None:
        sys.stdin.buffer.read()
        os._exit(0)

    threading.Thread(target=watchdog, daemon=True).start()
    app = DomainDispatcherApplication(create_backend_app)
    server = make_server("127.0.0.1", port, app, True, request_handler=MotoRequestHandler)
    server.serve_forever()


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--serve":
        _serve(int(sys.argv[2]))
    else:
        sys.exit("usage: moto_server.py --serve PORT")
