"""docs/OUTPUTS.md must list every catalogue finding code with its current severity, category and title."""

from __future__ import annotations

import re
from pathlib import Path

import seolens_core.crawl._findings  # noqa: F401  (registers the pipeline's codes in the catalogue)
from seolens_core.audit import CATALOGUE, FindingDef

DOC = Path(__file__).resolve().parents[2] / "docs" / "OUTPUTS.md"
_ROW = re.compile(r"^\| `(ALERT_[A-Z0-9_]+)` \| ([a-z]+) \| ([a-z_]+) \| (.+?) \|$", re.MULTILINE)


def _documented() -> dict[str, tuple[str, str, str]]:
    return {m[1]: (m[2], m[3], m[4]) for m in _ROW.finditer(DOC.read_text(encoding="utf-8"))}


def _expected(d: FindingDef) -> tuple[str, str, str]:
    return d.severity.value, d.category.value, d.title


def test_pipeline_codes_are_registered() -> None:
    # Guards the test itself: without the pipeline registrations it would check only the built-in codes.
    assert "ALERT_DEAD_LETTER" in CATALOGUE and "ALERT_TRAP_CALENDAR" in CATALOGUE


def test_every_catalogue_code_is_documented() -> None:
    documented = _documented()
    missing = sorted(d.code for d in CATALOGUE if d.code not in documented)
    assert not missing, f"codes missing from the catalogue table in docs/OUTPUTS.md: {missing}"


def test_documented_rows_match_the_catalogue() -> None:
    documented = _documented()
    stale = {
        d.code: (documented[d.code], _expected(d))
        for d in CATALOGUE
        if d.code in documented and documented[d.code] != _expected(d)
    }
    assert not stale, f"docs/OUTPUTS.md rows (documented, actual) out of date: {stale}"


def test_no_documented_code_outside_the_catalogue() -> None:
    unknown = sorted(set(_documented()) - {d.code for d in CATALOGUE})
    assert not unknown, f"docs/OUTPUTS.md documents codes the catalogue does not define: {unknown}"
