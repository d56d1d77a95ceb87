"""Report task: orphan analysis, the final report, or a partial report after a failure."""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from functions._observability import logger
from seolens_core.bootstrap import container


@logger.inject_lambda_context
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    app = container()
    return app.run(app.reporter.run(event["crawl_id"], event.get("action", "report"), event.get("error")))
