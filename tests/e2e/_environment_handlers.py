"""A handler for the process-environment tests: it answers with its process id, fails or dies, as asked."""

from __future__ import annotations

import os
from typing import Any

import boto3

from seolens_core.adapters._metering import GLOBAL_METER


class TwoArgumentError(Exception):
    """Pickles, but does not unpickle (its args hold one of its two arguments), like some SDK errors."""

    def __init__(self, what: str, detail: str) -> None:
        super().__init__(what)
        self.detail = detail


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    if event.get("die"):
        os._exit(3)  # the sandbox crashes mid-invocation: no answer comes back
    if event.get("fail"):
        raise ValueError(f"bad event {event['fail']}")
    if event.get("odd_error"):
        raise TwoArgumentError("odd", "detail")
    if event.get("list_queues"):  # a real call, through a metered client, to the parent's local cloud
        GLOBAL_METER.attach(boto3.client("sqs")).list_queues(QueueNamePrefix=event["list_queues"])
    if event.get("count"):
        GLOBAL_METER.add({"sqs.SendMessageBatch": event["count"]}, {"dynamodb.BatchWriteItem": 2.5})
    return {
        "pid": os.getpid(),
        "ppid": os.getppid(),
        "function": context.function_name,
        "env": os.environ.get("SEOLENS_PROBE"),
    }
