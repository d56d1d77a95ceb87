"""RFC 3339 timestamps as ASL uses them (Wait.Timestamp, Timestamp* choice rules, context times)."""

from __future__ import annotations

import re
from datetime import UTC, datetime

_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})")


def parse_timestamp(value: object) -> float | None:
    """Epoch seconds of an RFC 3339 timestamp with a zone (uppercase T and Z), or None if it is not one."""
    if not isinstance(value, str) or not _RFC3339.fullmatch(value):
        return None
    try:
        return datetime.fromisoformat(value).timestamp()
    except ValueError:
        return None


def format_timestamp(epoch: float) -> str:
    """`2024-01-02T03:04:05.678Z`, the form Step Functions uses in the context object."""
    text = datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds")
    return text.replace("+00:00", "Z")
