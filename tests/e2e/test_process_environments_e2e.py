"""Fetch workers as child processes (`run_crawl(processes=True)`, what `seolens crawl` runs): the same crawl,
every page once, and every AWS call of the children in the crawl's count and cost."""

from __future__ import annotations

import dataclasses
import json
import multiprocessing
import os
import threading
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest

from infra.fixture_site import FixtureServer
from infra.fixture_site.sites import DEMO_EXPECTED, demo_sites
from infra.local import process_host
from infra.local.iam_audit import IamAudit
from infra.local.lambda_host import CURRENT_FUNCTION, LambdaHost
from infra.local.process_host import EnvironmentCrashed, ProcessEnvironments, stop_fork_server
from infra.local.runtime import WORKER, LocalCloud, run_crawl
from seolens_core.adapters._metering import GLOBAL_METER
from seolens_core.settings import CrawlSettings
from tests.e2e.conftest import translated_template

NOT_PAGES = {"/robots.txt", "/sitemap.xml", "/sitemap_index.xml", "/wp-sitemap.xml"}


def test_demo_crawl_in_worker_processes(local_cloud: LocalCloud, tmp_path: Path) -> None:
    server = FixtureServer(demo_sites())
    server.start()
    try:
        partner_host, partner_port = server.host_port("partner")
        settings = CrawlSettings(
            start_urls=(server.base_url("demo") + "/",),
            allow_hosts=(f"{partner_host}:{partner_port}",),
            progress_poll_s=1,
        )
        assert local_cloud.stack is not None
        audit = IamAudit(local_cloud.stack)
        with audit.recording():
            run = run_crawl(local_cloud, settings, workers=3, out_dir=tmp_path, processes=True)
        log = server.log("demo")
    finally:
        server.stop()
    # The children's calls reach the parent's listeners: the IAM audit covers what `seolens crawl` runs.
    worker_actions = {a.action for a in audit.accesses if a.function == "FetchWorkerFunction"}
    assert {"dynamodb:PartiQLUpdate", "dynamodb:BatchWriteItem", "s3:PutObject"} <= worker_actions, (
        worker_actions
    )
    assert audit.violations(translated_template()) == []
    assert run.execution.status == "SUCCEEDED", (run.execution.error, run.execution.cause)
    pages = [
        r.path for r in log if r.path not in NOT_PAGES and not r.path.startswith(DEMO_EXPECTED.trap_prefix)
    ]
    assert {p: n for p, n in Counter(pages).items() if n > 1} == {}
    assert set(pages) == set(DEMO_EXPECTED.crawlable)
    cost = json.loads((tmp_path / "report.json").read_text())["cost"]
    calls = cost["aws_calls"]
    # Only the workers (in the children) lease URLs in PartiQL batches and write batch journals.
    assert calls.get("dynamodb.BatchExecuteStatement", 0) > 0 and calls.get("dynamodb.BatchWriteItem", 0) > 0
    assert cost["units_per_call"]["BatchWriteItem"] > 1  # the children's billed items came back too
    assert run.worker_invocations > 0


@pytest.fixture
def probe_host(local_cloud: LocalCloud) -> LambdaHost:
    """The deployed stack with its worker's handler replaced by the probes above."""
    assert local_cloud.stack is not None
    stack = local_cloud.stack
    worker = dataclasses.replace(stack.functions[WORKER], handler="tests.e2e._environment_handlers.handler")
    return LambdaHost(dataclasses.replace(stack, functions={**stack.functions, WORKER: worker}))


def test_each_thread_keeps_its_environment_and_the_meter_and_bill_come_back(
    probe_host: LambdaHost, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SEOLENS_PROBE", "from-parent")
    envs = ProcessEnvironments(probe_host, WORKER, 2)
    try:
        before_calls, before_items = GLOBAL_METER.snapshot(), GLOBAL_METER.items()
        first = envs.invoke(WORKER, {"count": 3})
        again = envs.invoke(WORKER, {})
        other: dict[str, Any] = {}
        thread = threading.Thread(target=lambda: other.update(envs.invoke(WORKER, {})))
        thread.start()
        thread.join()
        assert first["pid"] == again["pid"] != os.getpid()  # warm: the same sandbox for this poller
        assert other["pid"] not in (first["pid"], os.getpid())
        assert first["env"] == "from-parent" and first["function"] == probe_host.function(WORKER).name
        assert (
            GLOBAL_METER.snapshot().get("sqs.SendMessageBatch", 0)
            - before_calls.get("sqs.SendMessageBatch", 0)
            == 3
        )
        assert GLOBAL_METER.items()["dynamodb.BatchWriteItem"] - before_items.get(
            "dynamodb.BatchWriteItem", 0.0
        ) == pytest.approx(2.5)
        assert probe_host.invocations[WORKER] == 3 and probe_host.billed_ms[WORKER] > 0
    finally:
        envs.close()


def test_the_childrens_calls_reach_the_parents_listeners_as_the_functions_own(probe_host: LambdaHost) -> None:
    heard: list[tuple[str | None, str, str, dict[str, Any]]] = []

    def listener(service: str, operation: str, params: Mapping[str, Any]) -> None:
        heard.append((CURRENT_FUNCTION.get(), service, operation, dict(params)))

    envs = ProcessEnvironments(probe_host, WORKER, 1)
    try:
        envs.invoke(WORKER, {"list_queues": "unheard"})  # nobody listens: nothing is sent back
        GLOBAL_METER.add_listener(listener)
        try:
            envs.invoke(WORKER, {"list_queues": "probe"})
        finally:
            GLOBAL_METER.remove_listener(listener)
    finally:
        envs.close()
    assert heard == [(WORKER, "sqs", "ListQueues", {"QueueNamePrefix": "probe"})]


def test_a_recorded_call_keeps_its_shape_and_leaves_data_and_streams_behind() -> None:
    recorder = process_host._CallRecorder()
    recorder("s3", "PutObject", {"Bucket": "b", "Key": "k", "Body": b"x" * 1000})
    recorder("s3", "PutObject", {"Bucket": "b", "Key": "k", "Extra": threading.Lock()})
    assert recorder.heard == [("s3", "PutObject", {"Bucket": "b", "Key": "k"})] * 2


def test_a_failing_handler_raises_in_the_caller_and_a_dead_one_is_replaced(probe_host: LambdaHost) -> None:
    envs = ProcessEnvironments(probe_host, WORKER, 1)
    try:
        pid = envs.invoke(WORKER, {})["pid"]
        with pytest.raises(ValueError, match="bad event 7"):
            envs.invoke(WORKER, {"fail": 7})
        with pytest.raises(RuntimeError, match="TwoArgumentError: odd"):  # named, even if it cannot travel
            envs.invoke(WORKER, {"odd_error": True})
        assert envs.invoke(WORKER, {})["pid"] == pid  # an error does not cost the environment
        with pytest.raises(EnvironmentCrashed):
            envs.invoke(WORKER, {"die": True})
        assert envs.invoke(WORKER, {})["pid"] != pid  # a cold start replaces the crashed sandbox
    finally:
        envs.close()


def test_environments_fork_from_one_server_which_the_cli_reaps(probe_host: LambdaHost) -> None:
    """Forked from a preloaded server (no import each), never from this threaded process; once stopped, the
    server is gone (no process left behind, its CPU counted to the parent)."""
    envs = ProcessEnvironments(probe_host, WORKER, 2)
    try:
        first = envs.invoke(WORKER, {})
        other: dict[str, Any] = {}
        thread = threading.Thread(target=lambda: other.update(envs.invoke(WORKER, {})))
        thread.start()
        thread.join()
    finally:
        envs.close()
    server = first["ppid"]
    assert other["pid"] != first["pid"] and other["ppid"] == server != os.getpid()
    stop_fork_server()
    assert not Path(f"/proc/{server}").exists()
    again = ProcessEnvironments(probe_host, WORKER, 1)  # a later crawl of this process starts a new server
    try:
        assert again.invoke(WORKER, {})["ppid"] not in (server, os.getpid())
    finally:
        again.close()


def test_without_a_fork_server_environments_are_spawned(monkeypatch: pytest.MonkeyPatch) -> None:
    real = multiprocessing.get_context

    def no_fork_server(method: str | None = None) -> Any:
        if method == "forkserver":
            raise ValueError("cannot find context for 'forkserver'")  # what Windows answers
        return real(method)

    monkeypatch.setattr(multiprocessing, "get_context", no_fork_server)
    assert process_host._context().get_start_method() == "spawn"
    monkeypatch.undo()
    assert process_host._context().get_start_method() == "forkserver"
