"""Handlers for the process-environment tests: one answers with its process id, one fails, one dies."""

from __future__ import annotations

import os
from typing import Any

from seolens_core.adapters._metering import GLOBAL_METER


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    if event.get("die"):
        os._exit(3)  # the sandbox crashes mid-invocation: no answer comes back
    if event.get("fail"):
        raise ValueError(f"bad event {event['fail']}")
    if event.get("count"):
        GLOBAL_METER.add({"sqs.SendMessageBatch": event["count"]}, {"dynamodb.BatchWriteItem": 2.5})
    return {"pid": os.getpid(), "function": context.function_name, "env": os.environ.get("SEOLENS_PROBE")}
