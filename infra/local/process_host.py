"""Emulated Lambda execution environments as child processes, one per event-source poller.

On AWS every concurrent execution is its own sandbox; locally the fetch workers were threads of one process
and shared its GIL, so a crawl used one core for our code however many workers it had. A child process per
environment runs the same handler (through its own `LambdaHost`) and hands back the answer with the AWS
calls it made, so the crawl's call counts and cost stay whole.
"""

from __future__ import annotations

import contextlib
import logging
import multiprocessing
import os
import pickle
import signal
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from infra.local.deploy import DeployedStack
from infra.local.lambda_host import CURRENT_FUNCTION, LambdaHost, route_lambda_logs
from seolens_core.adapters._metering import GLOBAL_METER, counts_since
from seolens_core.adapters._stored_units import TableSchema

STOP_TIMEOUT_S = 10.0
PRELOAD = ("infra.local.process_host", "infra.local.warm_models")
"""Imported once by the fork server, so each environment starts with the SDKs and the core already in memory
(spawned, each child imported them itself: ~1.7 s of CPU each). Only modules that read no environment variable
at import: the handler's own module (its Powertools objects read their settings then) is imported by the child.
"""


class EnvironmentCrashed(RuntimeError):
    """The child process of an execution environment died mid-invocation (the batch returns to the queue)."""


@dataclass(frozen=True, slots=True)
class _Setup:
    stack: DeployedStack
    environ: Mapping[str, str]
    schemas: Mapping[str, TableSchema]
    log_file: str | None
    function: str


@dataclass(frozen=True, slots=True)
class _Answer:
    ok: bool
    value: Any
    calls: Mapping[str, int]
    items: Mapping[str, float]
    billed_ms: float
    heard: tuple[tuple[str, str, Mapping[str, Any]], ...] = ()
    """Each call as the meter's listeners see it (service, operation, API parameters), when the parent has
    listeners (an IAM audit, a benchmark's breakdown): they hear the children's calls as their own."""


class _CallRecorder:
    """A meter listener in the child that keeps what the parent's listeners would have heard."""

    def __init__(self) -> None:
        self.heard: list[tuple[str, str, Mapping[str, Any]]] = []

    def __call__(self, service: str, operation: str, params: Mapping[str, Any]) -> None:
        # An upload's body is data, not the call's shape, and may be a stream: it does not travel.
        slim = {k: v for k, v in params.items() if k != "Body"}
        try:
            pickle.dumps(slim)
        except Exception:
            slim = {k: v for k, v in slim.items() if isinstance(v, (str, int, float, bool))}
        self.heard.append((service, operation, slim))


def _serve(conn: Connection, setup: _Setup) -> None:
    """A child's loop: one invocation at a time, until the parent sends None or goes away."""
    # Ctrl-C is the parent's: it cancels the crawl, then closes its environments.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    os.environ.clear()
    os.environ.update(setup.environ)
    if setup.log_file:
        route_lambda_logs(Path(setup.log_file))
    GLOBAL_METER.know_tables(setup.schemas)
    host = LambdaHost(setup.stack)
    host.handler(host.function(setup.function))  # imports now: the cold start happens before the first batch
    conn.send("ready")
    while True:
        try:
            request = conn.recv()
        except EOFError:
            return
        if request is None:
            return
        name, payload, listened = request
        calls, items = GLOBAL_METER.snapshot(), GLOBAL_METER.items()
        recorder = _CallRecorder()
        if listened:
            GLOBAL_METER.add_listener(recorder)
        started = time.perf_counter()
        try:
            value, ok = host.invoke(name, payload), True
        except Exception as exc:  # the parent re-raises it, as the Lambda service reports a failed invoke
            value, ok = _picklable(exc), False
        finally:
            if listened:
                GLOBAL_METER.remove_listener(recorder)
        conn.send(
            _Answer(
                ok,
                value,
                counts_since(GLOBAL_METER.snapshot(), calls),
                counts_since(GLOBAL_METER.items(), items),
                (time.perf_counter() - started) * 1000,
                tuple(recorder.heard),
            )
        )


def _picklable(exc: Exception) -> Exception:
    """`exc`, or a RuntimeError naming it if it would not survive the trip to the parent."""
    try:
        pickle.loads(pickle.dumps(exc))
    except Exception:
        return RuntimeError(f"{type(exc).__name__}: {exc}")
    return exc


class _Environment:
    def __init__(self, setup: _Setup) -> None:
        context = _context()
        self._conn, child = context.Pipe()
        self._process = context.Process(target=_serve, args=(child, setup), name="lambda-env", daemon=True)
        self._process.start()
        child.close()
        self._ready = False

    def call(self, name: str, payload: Any) -> _Answer:
        try:
            if not self._ready:
                self._ready = self._conn.recv() == "ready"
            self._conn.send((name, payload, GLOBAL_METER.listening))
            answer = self._conn.recv()
        except (EOFError, OSError) as exc:
            raise EnvironmentCrashed(f"execution environment {self._process.pid} exited") from exc
        assert isinstance(answer, _Answer)
        return answer

    @property
    def alive(self) -> bool:
        return self._process.is_alive()

    def close(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self._conn.send(None)
        self._process.join(STOP_TIMEOUT_S)
        if self._process.is_alive():
            self._process.kill()
            self._process.join()
        self._conn.close()


class ProcessEnvironments:
    """`count` warm environments of one function; each calling thread (a poller) keeps its own."""

    def __init__(self, host: LambdaHost, function: str, count: int) -> None:
        self._host = host
        self._setup = _Setup(
            stack=host.stack,
            environ=dict(os.environ),
            schemas=GLOBAL_METER.schemas(),
            log_file=_lambda_log_file(),
            function=function,
        )
        self._free: list[_Environment] = []
        self._all: list[_Environment] = []
        self._lock = threading.Lock()
        self._mine = threading.local()
        # The fork server imports the core before its first fork (~1 s): the caller goes on meanwhile (the crawl
        # is created and seeded before any batch needs an environment).
        self._starting = threading.Thread(
            target=self._start, args=(count,), name="lambda-env-start", daemon=True
        )
        self._starting.start()

    def _start(self, count: int) -> None:
        for _ in range(count):
            try:
                env = _Environment(self._setup)
            except Exception:  # the first poller that needs one starts it and sees the error
                logging.getLogger(__name__).exception("could not start an execution environment")
                return
            with self._lock:
                self._free.append(env)
                self._all.append(env)

    def invoke(self, name: str, payload: Any) -> Any:
        env = self._environment()
        try:
            answer = env.call(name, payload)
        except EnvironmentCrashed:
            self._mine.env = None  # the next batch of this poller gets a fresh environment (a cold start)
            raise
        GLOBAL_METER.add(answer.calls, answer.items)
        logical_id = self._host.function(name).logical_id
        if answer.heard:
            token = CURRENT_FUNCTION.set(logical_id)
            try:
                for service, operation, params in answer.heard:
                    GLOBAL_METER.tell(service, operation, params)
            finally:
                CURRENT_FUNCTION.reset(token)
        self._host.record(logical_id, answer.billed_ms)
        if not answer.ok:
            raise answer.value
        return answer.value

    def _environment(self) -> _Environment:
        env: _Environment | None = getattr(self._mine, "env", None)
        if env is None or not env.alive:
            self._starting.join()
            with self._lock:
                if self._free:
                    env = self._free.pop()
                else:
                    env = _Environment(self._setup)
                    self._all.append(env)
            self._mine.env = env
        return env

    def close(self) -> None:
        self._starting.join()
        with self._lock:
            envs, self._all, self._free = self._all, [], []
        for env in envs:
            env.close()


def _context() -> multiprocessing.context.ForkServerContext | multiprocessing.context.SpawnContext:
    """Children forked from a fork server (one per parent process, single-threaded), never from the parent,
    which runs threads; spawned where there is no fork server (Windows)."""
    try:
        context = multiprocessing.get_context("forkserver")
    except ValueError:
        return multiprocessing.get_context("spawn")
    assert isinstance(context, multiprocessing.context.ForkServerContext)
    context.set_forkserver_preload(list(PRELOAD))
    return context


def stop_fork_server() -> None:
    """Stop and reap this process's fork server, if one runs: a CLI run leaves no process behind, and the
    environments' CPU time is counted to this process (as the children of a child it waited for)."""
    try:
        from multiprocessing import forkserver
    except ImportError:  # no fork server on this platform
        return
    server = forkserver._forkserver
    stop = getattr(server, "_stop", None)  # no public way to stop it (3.11 to 3.13)
    if stop is None:
        return
    pid = getattr(server, "_forkserver_pid", None)
    if pid is not None and not _children_of(pid):
        # Nothing left to serve: its interpreter's teardown (~0.4 s, at the end of every CLI run) is skipped.
        # Killed or not, it is reaped below, and the CPU time of the children it reaped is counted with it.
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    stop()


def _children_of(pid: int) -> list[int]:
    """The live children of `pid` (Linux); on other systems it is taken to have some."""
    try:
        with open(f"/proc/{pid}/task/{pid}/children", encoding="ascii") as fh:
            return [int(child) for child in fh.read().split()]
    except (OSError, ValueError):
        return [-1]


def _lambda_log_file() -> str | None:
    """Where this process writes the handlers' logs (the CLI's `lambda.log`), for the children to append."""
    for handler in logging.getLogger("seolens").handlers:
        if isinstance(handler, logging.FileHandler):
            return handler.baseFilename
    return None
