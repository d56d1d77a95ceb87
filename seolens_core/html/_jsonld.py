"""JSON-LD blocks (`<script type="application/ld+json">`): their `@type`s and what keeps search engines from
reading them (invalid JSON, a top-level item without `@context` or without `@type`).

A top-level item is an object of the block, of a top-level array, or of a top-level `@graph`; `@context` is
looked for on the item or on the object holding its `@graph`. The walk is bounded, so a hostile document
cannot make it expensive.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

MAX_NODES = 10_000
MAX_PROBLEMS = 10


@dataclass(frozen=True, slots=True)
class JsonLdBlock:
    """What one block says: its `@type` values, and its problems in words (empty when it reads fine)."""

    types: frozenset[str]
    invalid: str | None = None
    without_context: int = 0
    without_type: int = 0


def _types(data: Any) -> Iterator[str]:
    stack = [data]
    seen = 0
    while stack and seen < MAX_NODES:
        item = stack.pop()
        seen += 1
        if isinstance(item, dict):
            kind = item.get("@type")
            if isinstance(kind, str):
                yield kind
            elif isinstance(kind, list):
                yield from (k for k in kind if isinstance(k, str))
            stack.extend(v for v in item.values() if isinstance(v, (dict, list)))
        elif isinstance(item, list):
            stack.extend(v for v in item if isinstance(v, (dict, list)))


def _top_items(data: Any) -> Iterator[tuple[dict[str, Any], bool]]:
    """The block's top-level items, each with whether a `@context` applies to it."""
    roots = data if isinstance(data, list) else [data]
    for root in roots[:MAX_NODES]:
        if not isinstance(root, dict):
            continue
        graph = root.get("@graph")
        if isinstance(graph, list):
            for node in graph[:MAX_NODES]:
                if isinstance(node, dict):
                    yield node, "@context" in root or "@context" in node
        else:
            yield root, "@context" in root


def read_block(raw: str) -> JsonLdBlock:
    """One block's types and problems; never raises."""
    try:
        data: Any = json.loads(raw)
    except RecursionError:
        return JsonLdBlock(frozenset(), "nested too deeply to read")
    except ValueError as exc:
        return JsonLdBlock(frozenset(), str(exc)[:200])
    if not isinstance(data, (dict, list)):
        return JsonLdBlock(frozenset(), f"a JSON {type(data).__name__}, not an object")
    items = list(_top_items(data))
    return JsonLdBlock(
        frozenset(_types(data)),
        without_context=sum(1 for _, has_context in items if not has_context),
        without_type=sum(1 for item, _ in items if not item.get("@type")),
    )
