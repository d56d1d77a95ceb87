"""HTTP API (API Gateway HTTP API, payload 2.0, IAM-authorised): routes only; logic in seolens_core.control.

Callers are kept apart: a crawl is owned by the IAM identity that started it (the authorizer's `userArn`), and
a caller lists, reads and controls its own crawls only (another's is a 404). `/frontier*` pauses every crawl:
it is for operators, granted by its own IAM policy (`CrawlApiOperatorPolicy`; callers get
`CrawlApiCallerPolicy`). Errors: malformed JSON 400, no caller identity 403, schema violations 422 (naming the
field), unknown crawl 404, impossible status change or report not ready 409, execution not started 502.
Secrets are never echoed (CrawlRecord.public_settings()).
"""

from __future__ import annotations

import os
import time
from functools import lru_cache
from typing import Annotated, Any

from aws_lambda_powertools.event_handler import APIGatewayHttpResolver, Response, content_types
from aws_lambda_powertools.event_handler.exceptions import NotFoundError
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError
from aws_lambda_powertools.event_handler.openapi.models import APIKey, APIKeyIn
from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query
from aws_lambda_powertools.event_handler.openapi.types import OpenAPIResponse
from aws_lambda_powertools.logging import correlation_paths
from aws_lambda_powertools.utilities.typing import LambdaContext
from pydantic import ValidationError

from functions._observability import logger
from seolens_core.adapters.crawls import BadCursor, CrawlRecord, CrawlStatus
from seolens_core.api_models import (
    ApiDefaults,
    CrawlList,
    CrawlStarted,
    CrawlSummary,
    CrawlView,
    ErrorBody,
    FrontierState,
    Progress,
    ReportFile,
    ReportLinks,
    StartCrawlRequest,
)
from seolens_core.bootstrap import container
from seolens_core.control import (
    REPORT_LINK_EXPIRY_S,
    CrawlControl,
    CrawlNotFound,
    ExecutionStartFailed,
    ReportNotReady,
    StatusConflict,
    control_of,
    progress_view,
)

API_TITLE = "SEO Lens crawl API"
API_VERSION = "1.0.0"
CrawlId = Annotated[str, Path(description="Crawl id (as returned by POST /crawls)")]
SIGV4 = APIKey.model_validate(
    {
        "type": "apiKey",
        "in": APIKeyIn.header,
        "name": "Authorization",
        "description": "AWS Signature Version 4 (IAM); API Gateway's IAM authorizer checks it.",
        "x-amazon-apigateway-authtype": "awsSigv4",
    }
)

app = APIGatewayHttpResolver(enable_validation=True)

_ERRORS: dict[int, OpenAPIResponse] = {
    400: {"description": "Malformed JSON body", "content": {"application/json": {"model": ErrorBody}}},
    403: {
        "description": "No IAM caller identity in the request",
        "content": {"application/json": {"model": ErrorBody}},
    },
    404: {"description": "Unknown crawl id", "content": {"application/json": {"model": ErrorBody}}},
    409: {
        "description": "Impossible in the crawl's status",
        "content": {"application/json": {"model": ErrorBody}},
    },
    422: {
        "description": "Invalid request (the message names the field)",
        "content": {"application/json": {"model": ErrorBody}},
    },
    500: {
        "description": "Internal error (logged with the request id)",
        "content": {"application/json": {"model": ErrorBody}},
    },
    502: {
        "description": "Recorded as FAILED: execution not started",
        "content": {"application/json": {"model": ErrorBody}},
    },
}


def _responses(ok: int, model: type[Any], description: str, *errors: int) -> dict[int, OpenAPIResponse]:
    out: dict[int, OpenAPIResponse] = {
        ok: {"description": description, "content": {"application/json": {"model": model}}}
    }
    for status in (*errors, 403, 422, 500):
        out[status] = _ERRORS[status]
    return out


class NoCallerIdentity(PermissionError):
    """The request carries no IAM identity (every route is IAM-authorised; this is not API Gateway's event)."""


def _caller() -> str:
    """The caller's IAM identity: a user's ARN, or an assumed role's session ARN (session name included, as
    CloudTrail names it), from the IAM authorizer's part of the request context."""
    arn = app.current_event.request_context.authorizer.iam.user_arn
    if not arn:
        raise NoCallerIdentity("the request has no IAM caller identity")
    return arn


def _control() -> CrawlControl:
    return control_of(container())


@lru_cache(maxsize=1)
def _defaults() -> ApiDefaults:
    return ApiDefaults.from_env(dict(os.environ))


def _summary(r: CrawlRecord) -> CrawlSummary:
    return CrawlSummary(
        crawl_id=r.crawl_id,
        status=r.status.value,
        site=r.site,
        created_at=r.created_at,
        finished_at=r.finished_at,
        counters=r.counters,
    )


def _view(r: CrawlRecord, frontier_paused: bool) -> CrawlView:
    return CrawlView(
        **_summary(r).model_dump(),
        error=r.error,
        settings=r.public_settings(),
        progress=Progress(**progress_view(r, time.time())),
        cost=None,
        frontier_paused=frontier_paused,
    )


def _status_url(crawl_id: str) -> str:
    domain = app.current_event.request_context.domain_name
    return f"https://{domain}/crawls/{crawl_id}" if domain else f"/crawls/{crawl_id}"


def _error(
    status: int, code: str, message: str, details: list[dict[str, Any]] | None = None
) -> Response[Any]:
    body = ErrorBody(error=code, message=message, details=details).model_dump(exclude_none=True)
    return Response(status_code=status, content_type=content_types.APPLICATION_JSON, body=body)


# ------------------------------------------------------------------ routes
@app.post("/crawls", summary="Start a crawl", responses=_responses(202, CrawlStarted, "Accepted", 400, 502))
def start_crawl(request: Annotated[StartCrawlRequest, Body()]) -> Response[CrawlStarted]:
    settings = request.to_settings(_defaults())
    record = container().run(_control().start(settings, owner=_caller()))
    url = _status_url(record.crawl_id)
    body = CrawlStarted(
        crawl_id=record.crawl_id, status=record.status.value, site=record.site, status_url=url
    )
    return Response(
        status_code=202, content_type=content_types.APPLICATION_JSON, body=body, headers={"Location": url}
    )


@app.get(
    "/crawls", summary="The caller's crawls, newest first", responses=_responses(200, CrawlList, "Crawls")
)
def list_crawls(
    limit: Annotated[int, Query(ge=1, le=100)] = 50,
    status: Annotated[CrawlStatus | None, Query()] = None,
    cursor: Annotated[str | None, Query(max_length=2048, description="`next_cursor` of the previous page")] = None,
) -> CrawlList:
    page = container().run(_control().recent(_caller(), limit=limit, status=status, cursor=cursor))
    return CrawlList(crawls=[_summary(r) for r in page.records], next_cursor=page.cursor)


@app.get(
    "/crawls/<id>",
    summary="A crawl's state, counters and progress",
    responses=_responses(200, CrawlView, "The crawl", 404),
)
def get_crawl(id: CrawlId) -> CrawlView:
    control = _control()
    record = container().run(control.get(id, owner=_caller()))
    return _view(record, container().run(control.frontier_paused()))


@app.post(
    "/crawls/<id>/pause",
    summary="Pause fetching (URLs are kept)",
    responses=_responses(200, CrawlSummary, "Paused", 404, 409),
)
def pause_crawl(id: CrawlId) -> CrawlSummary:
    return _summary(container().run(_control().pause(id, owner=_caller())))


@app.post(
    "/crawls/<id>/resume",
    summary="Resume a paused crawl",
    responses=_responses(200, CrawlSummary, "Running", 404, 409),
)
def resume_crawl(id: CrawlId) -> CrawlSummary:
    return _summary(container().run(_control().resume(id, owner=_caller())))


@app.post(
    "/crawls/<id>/cancel",
    summary="Cancel a crawl",
    responses=_responses(200, CrawlSummary, "Cancelled", 404, 409),
)
def cancel_crawl(id: CrawlId) -> CrawlSummary:
    return _summary(container().run(_control().cancel(id, owner=_caller())))


@app.get(
    "/frontier",
    summary="The operator switch: is the whole frontier paused? (operators: CrawlApiOperatorPolicy)",
    responses=_responses(200, FrontierState, "State"),
)
def frontier_state() -> FrontierState:
    return FrontierState(paused=container().run(_control().frontier_paused()))


@app.post(
    "/frontier/pause",
    summary="Pause fetching for every crawl, URLs kept (operators: CrawlApiOperatorPolicy)",
    responses=_responses(200, FrontierState, "Paused"),
)
def pause_frontier() -> FrontierState:
    container().run(_control().set_frontier_paused(True))
    return FrontierState(paused=True)


@app.post(
    "/frontier/resume",
    summary="Resume every crawl (operators: CrawlApiOperatorPolicy)",
    responses=_responses(200, FrontierState, "Running"),
)
def resume_frontier() -> FrontierState:
    container().run(_control().set_frontier_paused(False))
    return FrontierState(paused=False)


@app.get(
    "/crawls/<id>/report",
    summary="Short-lived download links",
    responses=_responses(200, ReportLinks, "Presigned links", 404, 409),
)
def crawl_report(id: CrawlId) -> ReportLinks:
    control, caller = _control(), _caller()
    record = container().run(control.get(id, owner=caller))
    links = container().run(control.report_links(id, REPORT_LINK_EXPIRY_S, owner=caller))
    return ReportLinks(
        crawl_id=record.crawl_id,
        status=record.status.value,
        expires_in_s=REPORT_LINK_EXPIRY_S,
        files=[ReportFile(name=link.name, url=link.url) for link in links],
    )


# ------------------------------------------------------------------ errors
@app.exception_handler(RequestValidationError)  # type: ignore[untyped-decorator]
def _invalid(exc: RequestValidationError) -> Response[Any]:
    errors = [dict(e) for e in exc.errors()]
    if any(e.get("type") == "json_invalid" for e in errors):
        return _error(400, "malformed_json", "request body is not valid JSON")
    details = [
        {
            "loc": [str(p) for p in e.get("loc", ())],
            "msg": str(e.get("msg", "")),
            "type": str(e.get("type", "")),
        }
        for e in errors
    ]
    message = "; ".join(f"{'.'.join(d['loc'])}: {d['msg']}" for d in details)
    return _error(422, "invalid_request", message, details)


@app.exception_handler(ValidationError)  # type: ignore[untyped-decorator]
def _invalid_settings(exc: ValidationError) -> Response[Any]:
    details = [
        {"loc": ["body", *(str(p) for p in e["loc"])], "msg": e["msg"], "type": e["type"]}
        for e in exc.errors()
    ]
    message = "; ".join(f"{'.'.join(d['loc'])}: {d['msg']}" for d in details)
    return _error(422, "invalid_request", message, details)


@app.exception_handler(CrawlNotFound)  # type: ignore[untyped-decorator]
def _not_found(exc: CrawlNotFound) -> Response[Any]:
    return _error(404, "not_found", f"no crawl with id {exc.args[0]!r}")


@app.not_found
def _no_route(exc: NotFoundError) -> Response[Any]:
    return _error(404, "not_found", f"no route {app.current_event.http_method} {app.current_event.path}")


@app.exception_handler(NoCallerIdentity)  # type: ignore[untyped-decorator]
def _no_caller(exc: NoCallerIdentity) -> Response[Any]:
    return _error(403, "forbidden", str(exc))


@app.exception_handler(BadCursor)  # type: ignore[untyped-decorator]
def _bad_cursor(exc: BadCursor) -> Response[Any]:
    detail = [{"loc": ["query", "cursor"], "msg": str(exc), "type": "value_error"}]
    return _error(422, "invalid_request", f"query.cursor: {exc}", detail)


@app.exception_handler(StatusConflict)  # type: ignore[untyped-decorator]
def _conflict(exc: StatusConflict) -> Response[Any]:
    return _error(409, "status_conflict", str(exc))


@app.exception_handler(ReportNotReady)  # type: ignore[untyped-decorator]
def _not_ready(exc: ReportNotReady) -> Response[Any]:
    return _error(409, "report_not_ready", str(exc))


@app.exception_handler(ExecutionStartFailed)  # type: ignore[untyped-decorator]
def _not_started(exc: ExecutionStartFailed) -> Response[Any]:
    logger.warning("execution not started", extra={"reason": str(exc)})  # the reason stays in the logs
    return _error(502, "not_started", "the crawl was recorded as FAILED: its execution could not be started")


@app.exception_handler(Exception)  # type: ignore[untyped-decorator]
def _unexpected(exc: Exception) -> Response[Any]:
    logger.exception("unhandled API error")
    return _error(500, "internal_error", "internal error (logged with the request id)")


def openapi_json() -> str:
    """The OpenAPI document checked in as docs/openapi.json."""
    return app.get_openapi_json_schema(
        title=API_TITLE,
        version=API_VERSION,
        description=(
            "Start, list, control and download SEO Lens crawls. Every route is IAM-authorised (SigV4): a caller"
            " sees and controls only the crawls its IAM identity started; /frontier is for operators."
        ),
        security_schemes={"sigv4": SIGV4},
        security=[{"sigv4": []}],
    )


@logger.inject_lambda_context(correlation_id_path=correlation_paths.API_GATEWAY_HTTP)
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    return app.resolve(event, context)


if __name__ == "__main__":  # regenerate the checked-in document: python -m functions.api > docs/openapi.json
    print(openapi_json())
