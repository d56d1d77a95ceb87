"""Shared fixtures: an embedded moto server per test session."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from infra.local.moto_server import EmbeddedMoto, start_moto_server


@pytest.fixture(scope="session")
def moto_server() -> Iterator[EmbeddedMoto]:
    """One moto server for the session; tests namespace their resources (unique names)."""
    server = start_moto_server()
    os.environ["AWS_DEFAULT_REGION"] = "us-east-1"
    try:
        yield server
    finally:
        server.stop()
