"""Two emulated clouds in one process (a test session has two): a crawl runs entirely on the cloud it was
given, even when the other one was started after it (the emulated Lambda environment is process-wide)."""

from __future__ import annotations

import functools
import threading
from pathlib import Path

from infra.fixture_site import ProcessFixtureServer
from infra.fixture_site.sites import NumberedPages, steady_latency_site
from infra.local.runtime import LocalCloud, run_crawl
from seolens_core.settings import CrawlSettings


def test_a_crawl_runs_on_its_own_cloud_after_another_cloud_started(
    control_cloud: LocalCloud, tmp_path: Path
) -> None:
    other = LocalCloud(stack_name="seolens-second").start()  # now the process environment is the other's
    try:
        with ProcessFixtureServer([functools.partial(steady_latency_site, 0.0, pages=3, name="s")]) as server:
            ip, port = server.host_port("s")
            settings = CrawlSettings(
                start_urls=(server.url("s", "/"),), progress_poll_s=1, allow_hosts=(f"{ip}:{port}",)
            )
            cancel = threading.Event()
            timer = threading.Timer(90, cancel.set)  # a crawl on the wrong queue would wait for ever
            timer.start()
            try:
                run = run_crawl(control_cloud, settings, workers=2, out_dir=tmp_path, cancel=cancel)
            finally:
                timer.cancel()
            fetched = {r.path for r in server.log("s") if r.status == 200}
    finally:
        other.stop()
    assert run.execution.status == "SUCCEEDED"
    assert set(NumberedPages(3).paths()) <= fetched
