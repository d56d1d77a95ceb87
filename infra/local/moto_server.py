"""The embedded AWS: a moto server on 127.0.0.1 with the settings the local runtime relies on.

Server mode (not `mock_aws`) because aiobotocore talks HTTP and because moto's backends are only
thread-safe behind its server (see shared notes on local AWS emulation). By default the server runs in
its own process (`python infra/local/moto_server.py --serve PORT`), so the emulator and the crawler use
both cores instead of sharing one GIL; `in_process=True` (or `SEOLENS_MOTO_INPROCESS=1`) keeps the old
thread. Either way `infra.local.moto_patches` is applied first. The child exits when its stdin closes,
so it never outlives the process that started it. The child serves with gunicorn's threaded worker, which
keeps connections open between calls (`SEOLENS_MOTO_SERVER=werkzeug`: moto's own server, one connection per
call); the in-process thread is moto's own server.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import io
import logging
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from gunicorn.app.base import BaseApplication

REGION = "us-east-1"
_REPO_ROOT = Path(__file__).resolve().parents[2]
_STARTUP_TIMEOUT_S = 30.0
EMULATOR_NICENESS = 10
"""The emulator runs below the crawler's CPU priority: on a small machine the crawler's timed work (a
request due in its pacing slot) must not wait behind the emulator's, as it never waits behind AWS's."""


class MotoStartError(RuntimeError):
    """The embedded moto server did not start accepting connections."""


class MotoVersionError(MotoStartError):
    """The installed moto is not the one the emulator's patches are written against."""


def check_moto_version() -> None:
    """Refuse an unpinned moto before starting it: without the patches, upstream moto cannot run the
    crawler's PartiQL batches (patch 27), and every crawl would fail on its first claim instead of here."""
    from infra.local.moto_patches import PINNED_MOTO_VERSION, moto_version

    found = moto_version()
    if found != PINNED_MOTO_VERSION:
        raise MotoVersionError(
            f"moto {found} is installed; the embedded emulator needs moto {PINNED_MOTO_VERSION} "
            f"(pip install 'moto[server]=={PINNED_MOTO_VERSION}', as scripts/bootstrap does)"
        )


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
    _wait: Callable[[], None] | None = field(default=None, repr=False)

    @property
    def endpoint_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def wait_ready(self) -> EmbeddedMoto:
        """Block until the server listens (a no-op once it has)."""
        if self._wait is not None:
            self._wait()
            self._wait = None
        return self

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

    def stop() -> None:
        if proc.poll() is None:
            assert proc.stdin is not None
            proc.stdin.close()  # the child's watchdog exits on EOF
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    return EmbeddedMoto(
        port=port, _stop=stop, pid=proc.pid, _wait=functools.partial(_wait_for_port, port, proc)
    )


def _start_thread(port: int) -> EmbeddedMoto:
    from moto.server import ThreadedMotoServer

    from infra.local import moto_patches

    moto_patches.apply()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    return EmbeddedMoto(port=port, _stop=server.stop)


def start_moto_server(port: int | None = None, *, in_process: bool | None = None) -> EmbeddedMoto:
    """Start moto on 127.0.0.1 (a free port unless one is given) and return its handle once it listens."""
    return launch_moto_server(port, in_process=in_process).wait_ready()


def launch_moto_server(port: int | None = None, *, in_process: bool | None = None) -> EmbeddedMoto:
    """Start moto without waiting for it (`wait_ready()` does): the CLI launches it before its own imports,
    so the server's start-up and warm-up run on the other core meanwhile."""
    check_moto_version()
    _set_aws_env()
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    chosen = port or _free_port()
    if in_process is None:
        in_process = os.environ.get("SEOLENS_MOTO_INPROCESS", "") == "1"
    return _start_thread(chosen) if in_process else _start_subprocess(chosen)


WARM_SERVICES = ("cloudformation", "s3", "sqs", "dynamodb", "lambda", "states")
"""Endpoint prefixes of the services a local run calls, whose moto backends are built before the first
request: moto builds one on its first call (cloudformation's imports every resource type, ~0.9 s), which the
deployment waited for."""


def _warm(app: Any) -> None:
    for prefix in WARM_SERVICES:
        backend = app.get_backend_for_host(f"{prefix}.{REGION}.amazonaws.com")
        with app.lock:
            if backend not in app.app_instances:
                app.app_instances[backend] = app.create_app(backend)


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

    keepalive = os.environ.get("SEOLENS_MOTO_SERVER", "keepalive") != "werkzeug"

    def watchdog() -> None:
        sys.stdin.buffer.read()
        if keepalive:
            # gunicorn's master would log the kill as an error ("Perhaps out of memory?") on the user's console.
            logging.getLogger("gunicorn.error").disabled = True
            _end_workers()
        os._exit(0)

    threading.Thread(target=watchdog, daemon=True).start()
    app = DomainDispatcherApplication(create_backend_app)
    _tune_gc()
    if not keepalive:
        _warm(app)
        server = make_server("127.0.0.1", port, app, True, request_handler=MotoRequestHandler)
        server.serve_forever()
    else:
        _KeepAliveServer(app, port).run()


EMULATOR_GC_THRESHOLDS = (20_000, 50, 100)
"""The emulator's garbage collector runs 28x less often than Python's default (700, 10, 10): its heap (every
item and message of the crawl, as Python objects) only grows, and each full collection walks all of it. Measured
on a 6,000-page crawl: 8.2 s of the emulator's 87.8 s CPU in collections (18 full ones), 2.8 s of 77.0 s after."""


def _tune_gc() -> None:
    """Fewer collections, and moto's imported modules moved out of the collector's sight (`gc.freeze`: done
    before gunicorn forks its worker, they are never traversed again)."""
    gc.set_threshold(*EMULATOR_GC_THRESHOLDS)
    gc.collect()
    gc.freeze()


def _end_workers() -> None:
    """Kill and reap this process's children (gunicorn's worker): no orphan outlives the emulator, and the
    worker's CPU time is counted in this process's children's, as the benchmarks read it. Without /proc
    (not Linux) nothing is reaped here: gunicorn's worker exits by itself once its parent is gone."""
    me = str(os.getpid())
    try:
        entries = os.listdir("/proc")
    except OSError:
        return
    for entry in entries:
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii") as fh:
                ppid = fh.read().rsplit(")", 1)[1].split()[1]
        except (OSError, IndexError, ValueError):
            continue
        if ppid == me:
            with contextlib.suppress(OSError):
                os.kill(int(entry), signal.SIGKILL)
                os.waitpid(int(entry), 0)


class _KeepAliveServer(BaseApplication):  # type: ignore[misc]
    """moto's WSGI app behind gunicorn's threaded worker, which keeps connections open between requests.

    werkzeug's server (moto's own) closes every connection after one answer, so each AWS call paid a TCP
    connect and a new connection on both sides: 15-20% of the CPU of a call in the emulator and in the
    crawler alike (measured with aiobotocore, 4,000 calls). One worker process (moto's state lives in it);
    threads enough for every long-poll ReceiveMessage to hold one while other calls go on; idle connections
    kept longer than the SDK keeps them (it must close them first, or it reuses a closed one)."""

    def __init__(self, app: Any, port: int) -> None:
        self._app = app
        self._port = port
        super().__init__()

    def load_config(self) -> None:
        settings = {
            "bind": f"127.0.0.1:{self._port}",
            "workers": 1,
            "worker_class": "gthread",
            "threads": 128,
            "keepalive": 60,
            "timeout": 0,
            "graceful_timeout": 1,
            "loglevel": "error",
            "accesslog": None,
            # S3 metadata names may hold underscores (moto's own handler keeps them too).
            "header_map": "dangerous",
        }
        if os.path.isdir("/dev/shm"):  # gunicorn's advice: its heartbeat file off the disk (a utime a loop)
            settings["worker_tmp_dir"] = "/dev/shm"
        for key, value in settings.items():
            self.cfg.set(key, value)

    def load(self) -> Any:
        # In the worker process, before it accepts: connections made meanwhile wait in the listen backlog.
        _warm(self._app)
        return _whole_requests(_json_calls_direct(self._app))


def _json_calls_direct(app: Any) -> Any:
    """moto's app, with the JSON-protocol calls of DynamoDB and SQS (`X-Amz-Target`, POST to `/`) handed to
    their moto handler as moto's Flask view does it, without the Flask request and application contexts,
    URL routing and the per-request service lookup around it: a tenth of the emulator's CPU in a crawl, for
    the calls that are nine tenths of its requests. Anything else (S3, Step Functions, moto's own API, a
    request with an `Origin` for CORS) goes through the app unchanged."""
    from botocore.exceptions import ClientError
    from flask import Response
    from moto.dynamodb.responses import DynamoHandler
    from moto.moto_api import recorder
    from moto.moto_server.werkzeug_app import BackendRequest
    from moto.sqs.responses import SQSResponse

    handlers = {"DynamoDB_20120810": DynamoHandler.dispatch, "AmazonSQS": SQSResponse().dispatch}

    def direct(environ: dict[str, Any], start_response: Any) -> Any:
        target = environ.get("HTTP_X_AMZ_TARGET", "")
        handler = handlers.get(target.partition(".")[0]) if "." in target else None
        if (
            handler is None
            or environ.get("REQUEST_METHOD") != "POST"
            or environ.get("PATH_INFO") != "/"
            or "HTTP_ORIGIN" in environ
        ):
            return app(environ, start_response)
        request = BackendRequest(environ)
        recorder._record_request(request)
        try:
            result = handler(request, request.raw_url, dict(request.headers))
        except ClientError as exc:
            result = 400, {}, exc.response["Error"]["Message"]
        status, headers, content = result if len(result) == 3 else (200, {}, result)
        return Response(response=content, status=status, headers=headers)(environ, start_response)

    return direct


def _whole_requests(app: Any) -> Any:
    """moto's app, given only requests whose body arrived whole. gunicorn hands a body cut short (the client
    died mid-request) to the app as a short read, and moto stored it: a worker killed while uploading a
    results part left an empty object under its key with the full body's checksum, and the report could not
    read it back (the crash e2e test). AWS never acts on a partial request; neither does the emulator now."""

    def whole(environ: dict[str, Any], start_response: Any) -> Any:
        declared = environ.get("CONTENT_LENGTH") or ""
        length = int(declared) if declared.isdigit() else 0
        if length > 0:
            body = environ["wsgi.input"].read(length)
            if len(body) < length:
                start_response("400 Bad Request", [("Content-Length", "0"), ("Connection", "close")])
                return [b""]
            environ["wsgi.input"] = io.BytesIO(body)
        return app(environ, start_response)

    return whole


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--serve":
        _serve(int(sys.argv[2]))
    else:
        sys.exit("usage: moto_server.py --serve PORT")
