"""Where the seed cursor lives between rounds: in S3, so the state machine's state stays small.

Step Functions limits a state to 256 KiB, and a cursor holds every `<sitemap><loc>` still to read, every
sitemap seen and every finding: a 50,000-child index is megabytes. Each round writes its cursor to a new
object and hands the state machine only the key (and two counts to read in the console); a retried round
gets the same key as input and reads the same cursor, so a retry replays the round exactly.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

from seolens_core.adapters.results import ResultsStore, kind_prefix

CURSOR_KIND = "seed-cursor"


class SeedCursors:
    """Saves a round's cursor to the results bucket and loads it back from the key the state carries."""

    def __init__(self, results: ResultsStore) -> None:
        self._results = results

    async def load(self, ref: dict[str, Any]) -> dict[str, Any]:
        """The cursor a state machine's `cursor` refers to (a cursor kept inline is returned as it is)."""
        if "key" not in ref:
            return ref
        cursor: dict[str, Any] = json.loads(await self._results.get_file(str(ref["key"])))
        return cursor

    async def save(self, crawl_id: str, cursor: dict[str, Any]) -> dict[str, Any]:
        """Store `cursor`; the small reference for the state machine."""
        key = f"{kind_prefix(crawl_id, CURSOR_KIND)}{uuid.uuid4().hex}.json"
        await self._results.put_object(key, json.dumps(cursor, separators=(",", ":")).encode("utf-8"))
        return {"key": key, "read": cursor.get("read", 0), "todo": len(cursor.get("todo", ()))}
