"""Powertools Logger and Metrics shared by every handler (service name from POWERTOOLS_SERVICE_NAME)."""

import json
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit
from aws_lambda_powertools.metrics.functions import is_metrics_disabled

from seolens_core.politeness import WindowReport

logger = Logger(service="seolens")
metrics = Metrics(namespace="SEOLens", service="seolens")
tracer = Tracer(service="seolens")


def host_window_emf(origin: str, window: WindowReport) -> dict[str, Any]:
    """One closed AIMD window of one host as an EMF record: delay, concurrency, error rate and p95 as metrics,
    the host as a property. Not a dimension: every host would be a custom metric of its own, billed monthly;
    as a property the per-host timeline is one Logs Insights query away and the metrics stay a handful."""
    emf = EphemeralMetrics(namespace="SEOLens", service="seolens")
    emf.add_metric(name="host_delay_ms", unit=MetricUnit.Milliseconds, value=window.delay_ms)
    emf.add_metric(name="host_concurrency", unit=MetricUnit.Count, value=window.concurrency)
    emf.add_metric(name="host_error_rate", unit=MetricUnit.Percent, value=round(100 * window.error_rate, 2))
    if window.p95_ms is not None:
        emf.add_metric(name="host_p95_ms", unit=MetricUnit.Milliseconds, value=round(window.p95_ms, 1))
    emf.add_metadata(key="host", value=origin)
    emf.add_metadata(key="verdict", value=window.verdict.value)
    emf.add_metadata(key="closed_at", value=window.closed_at)
    return dict(emf.serialize_metric_set())


def emit_host_window(origin: str, window: WindowReport) -> None:
    """Print the window's EMF record for CloudWatch, unless metrics are off (as Powertools' own flush does):
    a local crawl sets POWERTOOLS_METRICS_DISABLED, and its console is the user's, not a log group."""
    if not is_metrics_disabled():
        print(json.dumps(host_window_emf(origin, window), separators=(",", ":")))


def drop_unpublished_metrics() -> None:
    """Forget the metrics a previous invocation could not publish because metrics are off. Powertools keeps
    them, and its auto-flush at 100 values of one metric prints them whatever the switch says: a long local
    crawl printed an EMF line on the user's console every ~100 batches. Call first thing in a handler."""
    if is_metrics_disabled():
        metrics.clear_metrics()
