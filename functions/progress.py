"""Progress task of the monitor loop: RUNNING / PAUSED / DRAINED / BUDGET_REACHED / CANCELLED."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from functions._observability import logger
from seolens_core.bootstrap import container


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return container().run(container().progress.check(event["crawl_id"], event.get("previous")))
