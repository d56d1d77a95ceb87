"""One S3 object per worker batch: its page, pacing and link rows as sections of one JSON-lines body.

Why: a PUT costs as much as 12 write units, and a polite crawl's batches are small (returns come one
slot apart), so an object per kind per batch made S3 the largest cost of a paced crawl. The first line
names each section's byte range in the rest of the body; the small sections come first, so a reader of
pages or pacing rows fetches the head of the object, never the links.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from seolens_core.adapters._json import dump_lines, loads

__all__ = ["BATCH_KINDS", "HEAD_BYTES", "MalformedPart", "decode_head", "encode_batch", "sections"]

BATCH_KINDS = ("pages", "pacing", "links")
"""The kinds a batch part holds, in the order they are written (the large one last)."""
HEAD_BYTES = 64 * 1024
"""What a reader of the small sections fetches first (a ranged GET); a section beyond it is fetched on."""


class MalformedPart(ValueError):
    """A batch part whose head does not describe its body."""


def encode_batch(sections: Mapping[str, Iterable[dict[str, Any]]]) -> bytes | None:
    """The object's body: a head line `{"v": 1, "sections": {kind: [start, end]}}`, then each non-empty
    section's JSON lines (offsets are relative to the end of the head line). None when every section is
    empty."""
    bodies: list[bytes] = []
    ranges: dict[str, list[int]] = {}
    offset = 0
    for kind in BATCH_KINDS:
        body = dump_lines(sections.get(kind, ()))
        if body:
            ranges[kind] = [offset, offset + len(body)]
            bodies.append(body)
            offset += len(body)
    unknown = set(sections) - set(BATCH_KINDS)
    if unknown:
        raise ValueError(f"not a batch part kind: {sorted(unknown)}")
    if not bodies:
        return None
    head = dump_lines([{"v": 1, "sections": ranges}])
    return head + b"".join(bodies)


def decode_head(data: bytes) -> dict[str, tuple[int, int]]:
    """{kind: (start, end)}, absolute byte offsets in the object, from its first bytes."""
    end = data.find(b"\n")
    if end < 0:
        raise MalformedPart("no head line in the first bytes of the part")
    try:
        head = loads(data[:end])
        return {
            str(kind): (end + 1 + int(start), end + 1 + int(stop))
            for kind, (start, stop) in head["sections"].items()
        }
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise MalformedPart(f"unreadable part head: {exc}") from exc


def sections(
    data: bytes, kinds: Iterable[str], head: Mapping[str, tuple[int, int]] | None = None
) -> dict[str, bytes]:
    """The JSON lines of each of `kinds` (empty where the part has none), by the part's `head` (decoded from
    `data` when not given); `data` must reach the end of each."""
    ranges = decode_head(data) if head is None else head
    out: dict[str, bytes] = {}
    for kind in kinds:
        start, end = ranges.get(kind, (0, 0))
        if end > len(data):
            raise MalformedPart(f"the {kind} section ends at byte {end}, beyond the {len(data)} bytes given")
        out[kind] = data[start:end]
    return out
