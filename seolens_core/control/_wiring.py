"""Builds the crawl control service from a Container (the composition root), cached per container.

A test (or the local runtime) injects another ExecutionStarter with
`container.extras[STARTER_KEY] = FakeStarter()` before the first call.
"""

from __future__ import annotations

from seolens_core.bootstrap import Container
from seolens_core.control._service import CrawlControl
from seolens_core.control._starter import ExecutionStarter, StepFunctionsStarter

STARTER_KEY = "execution_starter"
_CONTROL_KEY = "crawl_control"


def control_of(app: Container) -> CrawlControl:
    cached = app.extras.get(_CONTROL_KEY)
    if isinstance(cached, CrawlControl):
        return cached
    starter = app.extras.get(STARTER_KEY)
    if not isinstance(starter, ExecutionStarter):
        starter = StepFunctionsStarter(app.clients.stepfunctions, app.resources.state_machine_arn)
    control = CrawlControl(app.crawls, app.results, starter)
    app.extras[_CONTROL_KEY] = control
    return control
