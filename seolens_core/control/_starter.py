"""ExecutionStarter: the port that starts one state-machine execution per crawl, its Step Functions adapter
and an in-memory fake for tests (no state machine runs)."""

from __future__ import annotations

import abc
import json
from dataclasses import dataclass, field
from typing import Any


class ExecutionStartFailed(RuntimeError):
    """The orchestrator refused to start the crawl's execution."""


class ExecutionStarter(abc.ABC):
    @abc.abstractmethod
    async def start(self, crawl_id: str) -> str:
        """Start the crawl's execution with input `{"crawl_id": ...}`; return the execution's id (ARN)."""


class StepFunctionsStarter(ExecutionStarter):
    """`StartExecution` named after the crawl id, so a retried start cannot run the same crawl twice."""

    def __init__(self, client: Any, state_machine_arn: str | None) -> None:
        self._client = client
        self._arn = state_machine_arn

    async def start(self, crawl_id: str) -> str:
        if not self._arn:
            raise ExecutionStartFailed("STATE_MACHINE_ARN is not configured for this function")
        try:
            resp = await self._client.start_execution(
                stateMachineArn=self._arn, name=crawl_id, input=json.dumps({"crawl_id": crawl_id})
            )
        except self._client.exceptions.ExecutionAlreadyExists:
            raise ExecutionStartFailed(f"an execution named {crawl_id} already exists") from None
        arn: str = resp["executionArn"]
        return arn


@dataclass
class FakeStarter(ExecutionStarter):
    """Records the crawl ids it was asked to start; `fail_with` makes the next start fail."""

    started: list[str] = field(default_factory=list)
    fail_with: Exception | None = None

    async def start(self, crawl_id: str) -> str:
        if self.fail_with is not None:
            error, self.fail_with = self.fail_with, None
            raise error
        self.started.append(crawl_id)
        return f"arn:aws:states:local:000000000000:execution:fake:{crawl_id}"
