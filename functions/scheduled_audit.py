"""EventBridge schedule -> one crawl per site of SCHEDULED_SITES (same control service as the API)."""

from __future__ import annotations

import os
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from functions._observability import logger
from seolens_core.bootstrap import container
from seolens_core.control import AuditConfig, control_of, start_audits


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    config = AuditConfig.from_env(os.environ)
    app = container()
    result = app.run(start_audits(control_of(app), config))
    for failure in result["failed"]:
        logger.error("scheduled audit not started", extra=failure)
    logger.info(
        "scheduled audits started", extra={"count": len(result["started"]), "trigger": event.get("source")}
    )
    return result
