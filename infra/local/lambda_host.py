"""Runs the template's Lambda handlers in this process, as the Lambda service would call them."""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import importlib
import logging
import os
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from infra.local import faults
from infra.local.deploy import DeployedStack, FunctionConfig
from seolens_core.bootstrap import container, reset_container

CURRENT_FUNCTION: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "seolens_function", default=None
)
"""The logical id of the function whose handler runs in this context (for the IAM audit)."""

Handler = Callable[[Any, Any], Any]

DISCARD_ROUNDS = 10
"""Rounds of cancelling a crashed environment's tasks (each round's cleanup may start a few more)."""

LOCAL_LAMBDA_ENV = {
    # Powertools' async batch processor keeps one event loop per execution environment only when it believes
    # it runs in Lambda; each emulated environment is a thread with its own loop (see seolens_core.bootstrap).
    "LAMBDA_TASK_ROOT": os.getcwd(),
    "POWERTOOLS_TRACE_DISABLED": "true",
    "POWERTOOLS_METRICS_DISABLED": "true",
    "POWERTOOLS_LOG_LEVEL": "WARNING",
    "POWERTOOLS_DEV": "false",
}


@dataclass
class LambdaContext:
    """The fields of the Lambda context object that handlers and Powertools read."""

    function_name: str
    memory_limit_in_mb: int
    timeout_s: int
    invoked_function_arn: str
    aws_request_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    function_version: str = "$LATEST"
    log_group_name: str = "/aws/lambda/local"
    log_stream_name: str = "local"
    _deadline: float = field(default=0.0)

    def __post_init__(self) -> None:
        self._deadline = time.monotonic() + self.timeout_s

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.monotonic()) * 1000))


class LambdaHost:
    """Resolves a function (by logical id or ARN) to its handler and calls it with a fresh context."""

    def __init__(self, stack: DeployedStack) -> None:
        self._stack = stack
        self._by_arn = {f.arn: f for f in stack.functions.values()}
        self._handlers: dict[str, Handler] = {}
        self._lock = threading.Lock()
        self.invocations: dict[str, int] = {}
        self.billed_ms: dict[str, float] = {}

    @property
    def stack(self) -> DeployedStack:
        return self._stack

    def apply_environment(self, env: Mapping[str, str] | None = None) -> None:
        """Export the deployed functions' environment (as moto resolved it) plus the local Lambda flags."""
        merged: dict[str, str] = {}
        for config in self._stack.functions.values():
            merged.update(config.environment)
        merged.update(LOCAL_LAMBDA_ENV)
        merged.update(env or {})
        os.environ.update(merged)

    def function(self, name_or_arn: str) -> FunctionConfig:
        config = self._stack.functions.get(name_or_arn) or self._by_arn.get(name_or_arn)
        if config is None:
            for candidate in self._stack.functions.values():
                if name_or_arn in (candidate.name, candidate.arn.split(":")[-1]):
                    return candidate
            raise KeyError(f"no function {name_or_arn!r} in the deployed stack")
        return config

    def handler(self, config: FunctionConfig) -> Handler:
        with self._lock:
            cached = self._handlers.get(config.logical_id)
            if cached is None:
                module_name, _, attr = config.handler.rpartition(".")
                module = importlib.import_module(module_name.replace("/", "."))
                cached = getattr(module, attr)
                self._handlers[config.logical_id] = cached
            return cached

    def invoke(self, name_or_arn: str, payload: Any) -> Any:
        config = self.function(name_or_arn)
        handler = self.handler(config)
        context = LambdaContext(config.name, config.memory_mb, config.timeout_s, config.arn)
        started = time.perf_counter()
        injector = faults.current()
        token = CURRENT_FUNCTION.set(config.logical_id)
        try:
            if injector is None:
                return handler(payload, context)
            return self._invoke_with_faults(injector, config, handler, payload, context)
        finally:
            CURRENT_FUNCTION.reset(token)
            self.record(config.logical_id, (time.perf_counter() - started) * 1000)

    def record(self, logical_id: str, billed_ms: float) -> None:
        """Count one invocation of `logical_id` and the time it was billed for."""
        with self._lock:
            self.invocations[logical_id] = self.invocations.get(logical_id, 0) + 1
            self.billed_ms[logical_id] = self.billed_ms.get(logical_id, 0.0) + billed_ms

    def _invoke_with_faults(
        self,
        injector: faults.FaultInjector,
        config: FunctionConfig,
        handler: Handler,
        payload: Any,
        context: Any,
    ) -> Any:
        app = container()
        for client in (app.clients.dynamodb, app.clients.sqs, app.clients.s3):
            injector.attach(client)
        injector.arm(config.logical_id, payload)
        try:
            injector.maybe_crash("start")
            result = handler(payload, context)
            injector.maybe_crash("before_delete")
            return result
        except faults.InjectedCrash:
            _discard_environment()
            raise
        finally:
            injector.disarm()


def route_lambda_logs(path: Path) -> None:
    """Write the handlers' logs (and the local runtime's) to `path` instead of stderr."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s"))
    for name in ("seolens", "seolens.local", "infra"):
        logger = logging.getLogger(name)
        logger.handlers = [handler]
        logger.propagate = False
    logging.getLogger("asyncio").setLevel(logging.CRITICAL)
    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    logging.getLogger("moto").setLevel(logging.CRITICAL)


def _discard_environment() -> None:
    """A crashed runtime is replaced: cancel what it left running, drop its container (next: a cold start)."""
    app = container()
    loop = app.loop
    # A cancelled task's cleanup may start new ones (a batch's commit): cancel until none is left, or its
    # coroutines are destroyed with the closed loop, inside the SDK's context, as unraisable errors.
    for _ in range(DISCARD_ROUNDS):
        pending = [] if loop.is_closed() else [t for t in asyncio.all_tasks(loop) if not t.done()]
        if not pending:
            break
        for task in pending:
            task.cancel()
        with contextlib.suppress(BaseException):  # a dying environment may raise anything; it is discarded
            loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
    try:
        reset_container()
    except Exception:  # closing a crashed environment's clients is best effort
        import seolens_core.bootstrap as bootstrap

        bootstrap._local.container = None
