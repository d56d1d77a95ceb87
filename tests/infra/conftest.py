"""Shared inputs for the template tests: the repo's template, parsed and translated once."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from infra.local.template import load_template, read_definition, state_machine_sources, translate

ROOT = Path(__file__).resolve().parents[2]
TEMPLATE = ROOT / "template.yaml"
REGION = "us-east-1"


@pytest.fixture(scope="session")
def sam_template() -> dict[str, Any]:
    return load_template(TEMPLATE)


@pytest.fixture(scope="session")
def definitions(sam_template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {k: read_definition(p) for k, p in state_machine_sources(sam_template, ROOT).items()}


@pytest.fixture(scope="session")
def translated(sam_template: dict[str, Any], definitions: dict[str, dict[str, Any]]) -> dict[str, Any]:
    os.environ.setdefault("AWS_DEFAULT_REGION", REGION)
    return translate(
        sam_template, code_uri="s3://seolens-test-code/code.zip", definitions=definitions, region=REGION
    )
