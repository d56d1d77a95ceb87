"""Each closed AIMD window of a host becomes one EMF record: metrics by service, the host as a property."""

from __future__ import annotations

import json

import pytest

from functions._observability import emit_host_window, host_window_emf
from seolens_core.politeness import Verdict, WindowReport


def test_a_window_is_an_emf_record_with_the_host_as_a_property() -> None:
    window = WindowReport(
        closed_at=1700000000.5,
        n=50,
        errors=5,
        p95_ms=612.34,
        verdict=Verdict.DEGRADE,
        delay_ms=500,
        concurrency=2,
    )
    emf = host_window_emf("https://shop.example:443", window)
    [directive] = emf["_aws"]["CloudWatchMetrics"]
    assert directive["Namespace"] == "SEOLens"
    assert directive["Dimensions"] == [["service"]]  # never a dimension per host
    names = {m["Name"]: m["Unit"] for m in directive["Metrics"]}
    assert names == {
        "host_delay_ms": "Milliseconds",
        "host_concurrency": "Count",
        "host_error_rate": "Percent",
        "host_p95_ms": "Milliseconds",
    }
    assert emf["host_delay_ms"] == [500.0] and emf["host_concurrency"] == [2.0]
    assert emf["host_error_rate"] == [10.0] and emf["host_p95_ms"] == [612.3]
    assert emf["host"] == "https://shop.example:443" and emf["verdict"] == "degrade"


def test_a_window_without_latency_samples_has_no_p95_metric() -> None:
    window = WindowReport(
        closed_at=1.0, n=50, errors=50, p95_ms=None, verdict=Verdict.DEGRADE, delay_ms=1000, concurrency=1
    )
    emf = host_window_emf("http://down.example:80", window)
    names = {m["Name"] for m in emf["_aws"]["CloudWatchMetrics"][0]["Metrics"]}
    assert "host_p95_ms" not in names and emf["host_error_rate"] == [100.0]


def test_the_record_is_printed_for_cloudwatch_and_not_on_a_local_console(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A 20,000-page local crawl printed 2,228 of these on the user's console: the local runtime turns metrics
    off (POWERTOOLS_METRICS_DISABLED), and the record follows Powertools' own flush."""
    window = WindowReport(
        closed_at=1.0, n=50, errors=0, p95_ms=20.0, verdict=Verdict.HEALTHY, delay_ms=0, concurrency=4
    )
    monkeypatch.delenv("POWERTOOLS_DEV", raising=False)
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "false")
    emit_host_window("https://shop.example:443", window)
    [line] = capsys.readouterr().out.splitlines()
    assert json.loads(line)["host"] == "https://shop.example:443"
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    emit_host_window("https://shop.example:443", window)
    assert capsys.readouterr().out == ""


def test_metrics_off_are_dropped_not_printed_every_hundred_values(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Powertools' auto-flush at 100 values of a metric ignores POWERTOOLS_METRICS_DISABLED; unpublished values
    pile up across invocations, so a 20,000-page local crawl printed four EMF lines on the user's console."""
    from aws_lambda_powertools.metrics import MetricUnit

    from functions._observability import drop_unpublished_metrics, metrics

    monkeypatch.delenv("POWERTOOLS_DEV", raising=False)
    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    metrics.clear_metrics()
    for _ in range(150):  # one value per invocation
        drop_unpublished_metrics()
        metrics.add_metric(name="urls_fetched", unit=MetricUnit.Count, value=1)
    assert capsys.readouterr().out == ""
    for _ in range(150):  # the same without the drop: Powertools prints at the 100th value
        metrics.add_metric(name="urls_fetched", unit=MetricUnit.Count, value=1)
    assert "urls_fetched" in capsys.readouterr().out
    metrics.clear_metrics()
