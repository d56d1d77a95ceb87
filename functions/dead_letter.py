"""Dead-letter drain: frontier messages that failed too often, redriven or finished (partial batch response)."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import (
    AsyncBatchProcessor,
    EventType,
    async_process_partial_response,
)
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions._observability import drop_unpublished_metrics, logger, metrics, tracer
from seolens_core.bootstrap import container


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    drop_unpublished_metrics()
    app = container()
    drain = app.dead_letter_drain
    position = {r.get("messageId", ""): i for i, r in enumerate(event.get("Records", []))}

    async def record_handler(record: SQSRecord) -> str:
        outcome = await drain.handle(record.message_id, record.body, position.get(record.message_id, 0))
        logger.warning("dead-lettered message", extra={"outcome": outcome, "body": record.body[:500]})
        metrics.add_metric(name=f"dead_letters_{outcome}", unit=MetricUnit.Count, value=1)
        return outcome

    processor = app.extras.setdefault("processor", AsyncBatchProcessor(event_type=EventType.SQS))
    return dict(
        async_process_partial_response(
            event=event, record_handler=record_handler, processor=processor, context=context
        )
    )
