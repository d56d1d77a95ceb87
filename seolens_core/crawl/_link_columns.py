"""A batch journal's link rows in columns: grouped by source page, keys named once, targets relative to the
source's origin. Lossless, and under half the compressed bytes: links were four fifths of a journal's body.

A journal is stored in DynamoDB at one write unit per KB. Its rows repeat the same keys and the same source on
every one of a page's ~40 links, and the same origin in every target; zlib's window does not remove all of
it (12.3 KB compressed for a batch of 47 pages, 4.5 KB in columns).
"""

from __future__ import annotations

from typing import Any

RELATIVE = "~target"
"""The key a schema names for a target stored without its source's origin (rows with a key of that name are
stored as they are)."""


def encode_links(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """`{"schemas": [[key, ...], ...], "groups": [[source, [[schema, value, ...], ...]], ...]}` for `rows`
    (dicts with a str `source`; a schema is a row's keys in order, its source given by its group), or
    `{"rows": rows}` when one has none. `decode_links` gives them back equal, each source's in their order."""
    if not all(isinstance(row.get("source"), str) and RELATIVE not in row for row in rows):
        return {"rows": rows}
    schemas: dict[tuple[str, ...], int] = {}
    plans: dict[tuple[str, ...], tuple[int, int, int, int]] = {}
    groups: dict[str, list[list[Any]]] = {}
    origins: dict[str, str] = {}
    for row in rows:
        keys = tuple(row)
        plan = plans.get(keys)
        if plan is None:
            plan = plans[keys] = _plan(keys, schemas)
        at_source, at_target, whole, relative = plan
        values = list(row.values())
        source = values.pop(at_source)
        schema = whole
        if at_target >= 0:
            target = values[at_target]
            origin = origins.get(source)
            if origin is None:
                origin = origins[source] = _origin(source)
            if origin and isinstance(target, str) and target.startswith(origin):
                values[at_target] = target[len(origin) :]
                schema = relative
        groups.setdefault(source, []).append([schema, *values])
    return {"schemas": [list(k) for k in schemas], "groups": [[s, g] for s, g in groups.items()]}


def _plan(keys: tuple[str, ...], schemas: dict[tuple[str, ...], int]) -> tuple[int, int, int, int]:
    """For rows with `keys`: where the source is, where the target is among the other values (-1: none), and
    the schemas (the keys, in order) with the target whole and relative, registered in `schemas`."""
    at_source = keys.index("source")
    at_key = keys.index("target") if "target" in keys else -1
    whole = schemas.setdefault(keys, len(schemas))
    if at_key < 0:
        return at_source, -1, whole, whole
    relative_keys = (*keys[:at_key], RELATIVE, *keys[at_key + 1 :])
    return at_source, at_key - (at_key > at_source), whole, schemas.setdefault(relative_keys, len(schemas))


def decode_links(encoded: dict[str, Any]) -> list[dict[str, Any]]:
    """The rows `encode_links` was given, grouped by source (each source's rows in their order)."""
    if "rows" in encoded:
        return list(encoded["rows"])
    schemas = [tuple(k) for k in encoded.get("schemas", ())]
    out: list[dict[str, Any]] = []
    for source, rows in encoded.get("groups", ()):
        origin = _origin(source)
        for schema, *values in rows:
            row: dict[str, Any] = {}
            given = iter(values)
            for key in schemas[schema]:
                if key == "source":
                    row[key] = source
                elif key == RELATIVE:
                    row["target"] = origin + next(given)
                else:
                    row[key] = next(given)
            out.append(row)
    return out


def _origin(url: Any) -> str:
    """`scheme://host[:port]/` of an absolute URL, "" for anything else (its targets are stored whole)."""
    if not isinstance(url, str):
        return ""
    scheme, sep, rest = url.partition("://")
    if not sep or not scheme:
        return ""
    host = rest.split("/", 1)[0]
    return f"{scheme}://{host}/" if host else ""
