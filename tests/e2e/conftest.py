"""End-to-end fixtures: one local cloud (embedded moto + the template's stack) for the whole session.

Every crawl gets its own crawl id and every fixture site its own port, so crawls never share state except
what production shares too (per-host politeness, keyed by origin).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from infra.local.runtime import LocalCloud


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
