"""Fetch worker: SQS batch in, pages fetched politely, failed record ids out (partial batch response)."""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import urlsplit

from aws_lambda_powertools.metrics import MetricUnit
from aws_lambda_powertools.utilities.batch import (
    AsyncBatchProcessor,
    EventType,
    async_process_partial_response,
)
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord
from aws_lambda_powertools.utilities.typing import LambdaContext

from functions._observability import drop_unpublished_metrics, emit_host_window, logger, metrics, tracer
from seolens_core.adapters._metering import GLOBAL_METER
from seolens_core.bootstrap import container
from seolens_core.frontier import FrontierMessage, MessageError


@logger.inject_lambda_context
@tracer.capture_lambda_handler
@metrics.log_metrics
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    drop_unpublished_metrics()
    app = container()
    calls_before = GLOBAL_METER.total()
    verdicts_before = dict(app.worker.window_verdicts)
    records = event.get("Records", [])
    ends_at = time.time() + context.get_remaining_time_in_millis() / 1000
    batch = app.worker.batch([(r.get("messageId", ""), r.get("body", "")) for r in records], ends_at)

    async def record_handler(record: SQSRecord) -> str:
        try:
            outcome = await batch.handle(record.message_id, record.body)
        except Exception:
            logger.exception("record failed; it will be retried", extra=_log_keys(record.body))
            raise
        logger.debug("url processed", extra={**_log_keys(record.body), "outcome": outcome})
        return outcome

    processor = app.extras.setdefault("processor", AsyncBatchProcessor(event_type=EventType.SQS))
    response = async_process_partial_response(
        event=event, record_handler=record_handler, processor=processor, context=context
    )
    for outcome, count in batch.outcomes.items():
        metrics.add_metric(name=f"urls_{outcome}", unit=MetricUnit.Count, value=count)
    for origin, window in app.worker.take_closed_windows():  # each host's AIMD timeline, as EMF records
        emit_host_window(origin, window)
    for verdict, count in app.worker.window_verdicts.items():  # "degrade" windows are the AIMD back-offs
        if count - verdicts_before.get(verdict, 0):
            metrics.add_metric(
                name=f"host_windows_{verdict}",
                unit=MetricUnit.Count,
                value=count - verdicts_before.get(verdict, 0),
            )
    metrics.add_metric(name="aws_calls", unit=MetricUnit.Count, value=GLOBAL_METER.total() - calls_before)
    metrics.add_metric(
        name="batch_failures", unit=MetricUnit.Count, value=len(response.get("batchItemFailures", []))
    )
    return dict(response)


def _log_keys(body: str) -> dict[str, str]:
    """crawl_id, host and URL of a record for structured logs (never headers or cookies)."""
    try:
        msg = FrontierMessage.from_json(body)
    except MessageError:
        return {"crawl_id": "?", "host": "?", "url": "?"}
    return {"crawl_id": msg.crawl_id, "host": urlsplit(msg.url).netloc, "url": msg.url}
