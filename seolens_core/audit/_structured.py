"""Structured data: JSON-LD blocks search engines cannot use (invalid JSON, items without @context or @type)."""

from __future__ import annotations

from collections.abc import Iterator

from seolens_core.audit._catalogue import FindingCode
from seolens_core.html import PageFacts

F = FindingCode


def structured_data_signals(facts: PageFacts) -> Iterator[tuple[str, str]]:
    """(code, detail) of the page's JSON-LD problems, from the facts `extract_page` read in each block."""
    if facts.jsonld_invalid:
        first = facts.jsonld_invalid[0]
        yield F.JSONLD_INVALID, f"{len(facts.jsonld_invalid)} of {facts.jsonld_blocks} blocks: {first}"
    if facts.jsonld_without_context:
        yield F.JSONLD_NO_CONTEXT, f"{facts.jsonld_without_context} top-level items without @context"
    if facts.jsonld_without_type:
        yield F.JSONLD_NO_TYPE, f"{facts.jsonld_without_type} top-level items without @type"
