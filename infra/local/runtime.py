"""The local runtime: the template's resources in an embedded moto server (or AWS_ENDPOINT_URL), the same
handlers (the fetch workers in this process's threads or in child processes), an SQS event-source emulator for
the worker and the state machine run by a local executor.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import sys
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import boto3

from infra.local.asl import AslExecutor, Execution
from infra.local.deploy import DeployedStack, deploy_template
from infra.local.esm import EventSourceMapping
from infra.local.lambda_host import LambdaHost
from infra.local.moto_server import REGION, EmbeddedMoto, launch_moto_server
from infra.local.process_host import ProcessEnvironments
from seolens_core.adapters._gather import all_or_cancel
from seolens_core.adapters._metering import GLOBAL_METER, INDEX_WRITES, counts_since
from seolens_core.adapters._stored_units import TableSchema
from seolens_core.adapters.crawls import CrawlRecord, CrawlStatus
from seolens_core.bootstrap import container, reset_container
from seolens_core.costs import LIST_PRICES, Usage, billed_units, cost_of
from seolens_core.settings import CrawlSettings
from seolens_core.urls import NormalizedURL, normalize

REPO_ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = REPO_ROOT / "template.yaml"
WORKER = "FetchWorkerFunction"
IDLE_QUEUE_PAUSE_S = 4.0
log = logging.getLogger("seolens.local")


class LocalCloud:
    """Embedded AWS with the stack deployed from template.yaml; `endpoint_url` overrides the embedded server,
    `moto` is an embedded server launched earlier (`launch_moto_server`), used instead of starting one."""

    def __init__(
        self,
        *,
        endpoint_url: str | None = None,
        template: Path = TEMPLATE,
        stack_name: str = "seolens-local",
        parameters: dict[str, str] | None = None,
        moto: EmbeddedMoto | None = None,
    ) -> None:
        self._endpoint_override = endpoint_url or os.environ.get("AWS_ENDPOINT_URL")
        self._template = template
        self._stack_name = stack_name
        self._parameters = parameters
        self.moto: EmbeddedMoto | None = moto
        self.stack: DeployedStack | None = None
        self.host: LambdaHost | None = None

    @property
    def endpoint_url(self) -> str:
        if self._endpoint_override:
            return self._endpoint_override
        assert self.moto is not None
        return self.moto.endpoint_url

    def start(self) -> LocalCloud:
        # Every emulated Lambda environment is a thread of this process: a short GIL switch interval keeps a
        # worker that is due to send a request from waiting behind another thread's CPU work (pacing jitter).
        sys.setswitchinterval(0.001)
        os.environ.setdefault("AWS_ACCESS_KEY_ID", "testing")
        os.environ.setdefault("AWS_SECRET_ACCESS_KEY", "testing")
        os.environ.setdefault("AWS_DEFAULT_REGION", REGION)
        if not self._endpoint_override:
            self.moto = (self.moto or launch_moto_server()).wait_ready()
        os.environ["AWS_ENDPOINT_URL"] = self.endpoint_url
        self.stack = deploy_template(self.endpoint_url, self._template, self._stack_name, self._parameters)
        self._disable_moto_triggers()
        self._meter_tables()
        self.host = LambdaHost(self.stack)
        self.host.apply_environment()
        return self

    def activate(self) -> None:
        """Make this cloud the one this process's emulated Lambda environments talk to. The environment
        is process-wide: with two clouds in one process (a test session), the one started last would
        otherwise serve the other's crawls (its queue polled, the other's tables and queue written)."""
        assert self.host is not None
        os.environ["AWS_ENDPOINT_URL"] = self.endpoint_url
        self.host.apply_environment()
        reset_container()  # this thread's container may hold clients and resources of the other cloud

    def _disable_moto_triggers(self) -> None:
        """moto would run its own SQS trigger (through Docker) on every SendMessage; the emulator replaces it."""
        assert self.stack is not None
        client = boto3.client("lambda", endpoint_url=self.endpoint_url, region_name=self.stack.region)
        for mapping in self.stack.event_source_mappings:
            client.update_event_source_mapping(UUID=mapping.uuid, Enabled=False)

    def _meter_tables(self) -> None:
        """Tell the call meter the deployed tables' keys and indexes, so a crawl's cost counts index writes."""
        assert self.stack is not None
        client = boto3.client("dynamodb", endpoint_url=self.endpoint_url, region_name=self.stack.region)
        GLOBAL_METER.know_tables(
            {
                name: TableSchema.from_description(client.describe_table(TableName=name)["Table"])
                for name in self.stack.table_names.values()
            }
        )

    def stop(self) -> None:
        reset_container()
        if self.moto is not None:
            self.moto.stop()
            self.moto = None

    def __enter__(self) -> LocalCloud:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@dataclass
class CrawlRun:
    crawl_id: str
    execution: Execution
    record: CrawlRecord
    outputs: dict[str, Path] = field(default_factory=dict)
    cost: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0
    worker_invocations: int = 0
    event_source_cpu_s: float = 0.0
    """CPU the local event source mappings spent (receives, deletes, hand-offs to worker processes): the Lambda
    service's work in the cloud, done in this process here."""


ProgressCallback = Callable[[CrawlRecord, EventSourceMapping], None]


def site_of(settings: CrawlSettings) -> str:
    first = normalize(settings.start_urls[0])
    return first.origin if isinstance(first, NormalizedURL) else settings.start_urls[0]


def run_crawl(
    cloud: LocalCloud,
    settings: CrawlSettings,
    *,
    workers: int = 4,
    out_dir: Path | None = None,
    on_progress: ProgressCallback | None = None,
    progress_every_s: float = 0.5,
    cancel: threading.Event | None = None,
    crawl_id: str | None = None,
    unordered_queue: float = 0.0,
    processes: bool = False,
    wait_out_window: bool = False,
) -> CrawlRun:
    """Run one crawl to its end (drained, budget, cancelled or failed) and download its outputs.

    With `processes`, each fetch worker environment is a child process (`ProcessEnvironments`): the workers
    use every core, as Lambda's sandboxes do; without, threads of this process (faster to start, and what
    fault injection and the IAM audit hook into). `wait_out_window`: the fetch workers' event source buffers
    records for its whole batching window, as the Lambda service does (see `EventSourceMapping`)."""
    assert cloud.stack is not None and cloud.host is not None
    stack, host = cloud.stack, cloud.host
    cloud.activate()
    app = container()
    crawl_id = crawl_id or uuid.uuid4().hex[:16]
    started = time.monotonic()
    calls_before = GLOBAL_METER.snapshot()
    items_before = GLOBAL_METER.items()
    billed_before = dict(host.billed_ms)
    invocations_before = dict(host.invocations)
    environments = ProcessEnvironments(host, WORKER, workers) if processes else None
    app.run(app.crawls.create(crawl_id, settings, site_of(settings), time.time()))
    # Every queue-triggered function of the template: the fetch workers on the frontier (`workers` emulated
    # environments) and the dead-letter drain (one, polling an idle queue every few seconds).
    mappings: list[EventSourceMapping] = []
    esm: EventSourceMapping | None = None
    for mapping in stack.event_source_mappings:
        is_worker = mapping.function_logical_id == WORKER
        poller = EventSourceMapping(
            queue_url=stack.queue_urls[mapping.queue_logical_id],
            queue_arn=stack.queue_arns[mapping.queue_logical_id],
            invoke=functools.partial(
                environments.invoke if environments is not None and is_worker else host.invoke,
                mapping.function_logical_id,
            ),
            endpoint_url=cloud.endpoint_url,
            region=stack.region,
            batch_size=mapping.batch_size,
            batching_window_s=mapping.maximum_batching_window_s,
            workers=workers if is_worker else 1,
            on_thread_exit=reset_container,
            reorder=unordered_queue if is_worker else 0.0,
            idle_pause_s=0.0 if is_worker else IDLE_QUEUE_PAUSE_S,
            receive_ahead=is_worker,
            wait_out_window=wait_out_window and is_worker,
            invokes_elsewhere=environments is not None and is_worker,
        )
        mappings.append(poller)
        esm = poller if is_worker else esm
    assert esm is not None, f"the template has no queue event for {WORKER}"
    executor = AslExecutor(
        stack.state_machine_definition,
        invoke=host.invoke,
        state_machine_name=cloud._stack_name,
        enforce_task_timeouts=False,  # one emulated environment (thread) runs every task, as in one container
    )
    cancel = cancel or threading.Event()
    result: dict[str, Execution] = {}

    def _execute() -> None:
        try:
            result["execution"] = executor.run({"crawl_id": crawl_id}, cancel=cancel, name=crawl_id)
        finally:
            reset_container()

    for poller in mappings:
        poller.start()
    runner = threading.Thread(target=_execute, name="state-machine", daemon=True)
    runner.start()
    cancelled_sent = False
    try:
        while runner.is_alive():
            runner.join(progress_every_s)
            if on_progress is not None:
                on_progress(app.run(app.crawls.get(crawl_id)), esm)
    except KeyboardInterrupt:
        if not cancelled_sent:
            app.run(app.crawls.set_status(crawl_id, CrawlStatus.CANCELLED, now=time.time()))
            cancelled_sent = True
        runner.join()
    finally:
        for poller in mappings:
            poller.signal_stop()
    try:  # the outputs are final once the execution has ended: downloaded while the pollers' last receives end
        outputs = download_outputs(crawl_id, out_dir) if out_dir is not None and "execution" in result else {}
    finally:
        for poller in mappings:
            poller.stop()
        if environments is not None:
            environments.close()
    execution = result["execution"]
    record = app.run(app.crawls.get(crawl_id))
    run = CrawlRun(crawl_id, execution, record, seconds=time.monotonic() - started)
    run.worker_invocations = host.invocations.get(WORKER, 0)
    run.event_source_cpu_s = sum(poller.stats.cpu_s for poller in mappings)
    run.cost = crawl_cost(
        calls=counts_since(GLOBAL_METER.snapshot(), calls_before),
        items=counts_since(GLOBAL_METER.items(), items_before),
        host=host,
        billed_ms=counts_since(host.billed_ms, billed_before),
        invocations=counts_since(host.invocations, invocations_before),
        transitions=execution.transitions,
        pages=record.counters.get("n_fetched", 0) + record.counters.get("n_checked", 0),
    )
    if out_dir is not None:
        run.outputs = outputs
        report_path = run.outputs.get("report.json")
        if report_path is not None:
            report = json.loads(report_path.read_text(encoding="utf-8"))
            report["cost"] = run.cost
            report["local_runtime"] = {"event_source_cpu_s": round(run.event_source_cpu_s, 3)}
            report_path.write_text(json.dumps(report, indent=2, default=str), encoding="utf-8")
    return run


def crawl_cost(
    *,
    calls: dict[str, int],
    items: dict[str, float] | None = None,
    host: LambdaHost,
    billed_ms: dict[str, float],
    invocations: dict[str, int],
    transitions: int,
    pages: int,
) -> dict[str, Any]:
    """What this crawl would cost on AWS at list prices: every API call it made (workers, seed, report and the
    event source mapping's receives and deletes), Lambda time at each function's configured memory, and the
    state machine's transitions."""
    gb_seconds = sum(ms / 1000 * host.function(fn).memory_mb / 1024 for fn, ms in billed_ms.items())
    per_call = {key.partition(".")[2]: n / calls[key] for key, n in (items or {}).items() if calls.get(key)}
    usage = Usage(
        calls=calls,
        batch_items=per_call,
        index_write_units=(items or {}).get(INDEX_WRITES, 0.0),
        lambda_invocations=sum(invocations.values()),
        lambda_gb_seconds=gb_seconds,
        sfn_transitions=transitions,
    )
    units = billed_units(usage)
    cost = cost_of(units)
    total_calls = sum(calls.values())
    per_page = cost.total / pages if pages else None
    return {
        "aws_calls": dict(sorted(calls.items())),
        "aws_calls_total": total_calls,
        "aws_calls_per_page": round(total_calls / pages, 2) if pages else None,
        "lambda_gb_seconds": round(gb_seconds, 3),
        "state_transitions": transitions,
        "billed_units": {k: round(v, 1) for k, v in asdict(units).items() if k != "unpriced"},
        "units_per_call": {k: round(v, 2) for k, v in sorted(per_call.items())},
        "cost_usd": {k: round(v, 6) for k, v in cost.as_dict().items()},
        "cost_per_100k_pages_usd": round(per_page * 100_000, 4) if per_page is not None else None,
        "prices": asdict(LIST_PRICES),
    }


def download_outputs(crawl_id: str, out_dir: Path) -> dict[str, Path]:
    """The crawl's report files, downloaded side by side into `out_dir`, each streamed to its file."""
    app = container()
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = {key.rsplit("/", 1)[-1]: key for key in app.run(app.results.report_keys(crawl_id))}

    async def download_all() -> None:  # a failed download cancels the others (their partial files go)
        await all_or_cancel(*(app.results.download(key, out_dir / name) for name, key in paths.items()))

    app.run(download_all())
    return {name: out_dir / name for name in paths}
