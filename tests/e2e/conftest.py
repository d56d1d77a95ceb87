"""End-to-end fixtures: one local cloud (embedded moto + the template's stack) for the whole session.

Every crawl gets its own crawl id and every fixture site its own port, so crawls never share state except
what production shares too (per-host politeness, keyed by origin).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from infra.local.runtime import LocalCloud
from infra.local.template import load_template, read_definition, state_machine_sources, translate


@pytest.fixture(scope="session")
def local_cloud() -> Iterator[LocalCloud]:
    cloud = LocalCloud(stack_name="seolens-e2e").start()
    try:
        yield cloud
    finally:
        cloud.stop()


@pytest.fixture(autouse=True)
def _its_cloud_is_active(request: pytest.FixtureRequest) -> None:
    """A test of `local_cloud` talks to that cloud even when another cloud of this session was started later
    (the emulated Lambda environment is process-wide; see `LocalCloud.activate`)."""
    if "local_cloud" in request.fixturenames:
        request.getfixturevalue("local_cloud").activate()


def translated_template() -> dict[str, Any]:
    """template.yaml as CloudFormation sees it after the SAM transform (for the IAM audits)."""
    root = Path(__file__).resolve().parents[2]
    template = load_template(root / "template.yaml")
    definitions = {k: read_definition(p) for k, p in state_machine_sources(template, root).items()}
    return translate(
        template, code_uri="s3://seolens-test/code.zip", definitions=definitions, region="us-east-1"
    )
