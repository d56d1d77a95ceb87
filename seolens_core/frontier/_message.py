"""FrontierMessage: one URL of one crawl, with the depth and metadata that travel with it."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

MAX_META_ENTRIES = 32
MAX_META_VALUE = 1024


class MessageError(ValueError):
    """A queue message that is not a valid FrontierMessage (it is dead-lettered and reported, never fetched)."""


SITEMAP_QUEUE_COUNTER = "qs"


@dataclass(frozen=True, slots=True)
class FrontierMessage:
    """A discovered URL on its way to a fetch worker.

    `key` is the 16-hex-digit visited-set key of `url`; `parent` is the key of the page that claimed it (the only
    writer allowed to re-send it after a crash); `meta` is the per-URL string map of the URL Frontier API.
    """

    crawl_id: str
    url: str
    key: str
    depth: int
    parent: str | None = None
    sitemap: bool = False
    lastmod: str | None = None
    meta: dict[str, str] = field(default_factory=dict)
    check_only: bool = False
    tries: int = 0
    holds: int = 0
    redrives: int = 0
    """Times this message came back from the dead-letter queue (see `DeadLetterDrain`)."""
    budget_waits: int = 0
    """Times it came back because the last units of its crawl's page budget were out with fetches in flight."""
    not_before: float = 0.0
    """Epoch seconds before which it is not worth handling: set on a re-send further ahead than SQS can
    delay a message (15 minutes), which then comes back early and is sent on without asking anything."""
    hops: int = 0
    """Redirects followed to reach this URL (0: a link, a sitemap entry or a start URL)."""
    probe: bool = False
    """The http twin of an https start URL, fetched once to see whether it redirects to https: audited, its
    links and named URLs not followed (they would crawl the site's http copy)."""

    @property
    def queue_counter(self) -> str:
        """The crawl counter of queued URLs this one counts in: its link depth's (`q<depth>`, which the
        breadth-first gate reads), or `qs` for a URL a sitemap listed (a sitemap says nothing of how deep a page
        is: counted by its seed depth, thousands of them held every deeper link for its whole hold budget)."""
        return SITEMAP_QUEUE_COUNTER if self.sitemap else f"q{self.depth}"

    def to_json(self) -> str:
        body: dict[str, Any] = {
            "v": 1,
            "crawl_id": self.crawl_id,
            "url": self.url,
            "key": self.key,
            "depth": self.depth,
        }
        if self.parent:
            body["parent"] = self.parent
        if self.sitemap:
            body["sitemap"] = True
        if self.lastmod:
            body["lastmod"] = self.lastmod
        if self.meta:
            body["meta"] = self.meta
        if self.check_only:
            body["check_only"] = True
        if self.tries:
            body["tries"] = self.tries
        if self.holds:
            body["holds"] = self.holds
        if self.redrives:
            body["redrives"] = self.redrives
        if self.budget_waits:
            body["bw"] = self.budget_waits
        if self.not_before:
            body["nb"] = self.not_before
        if self.hops:
            body["rh"] = self.hops
        if self.probe:
            body["probe"] = True
        return json.dumps(body, separators=(",", ":"))

    @classmethod
    def from_json(cls, raw: str) -> FrontierMessage:
        try:
            data = json.loads(raw)
        except (ValueError, TypeError) as exc:
            raise MessageError(f"message body is not JSON: {exc}") from None
        if not isinstance(data, dict) or data.get("v") != 1:
            raise MessageError("message is not a version 1 frontier message")
        try:
            crawl_id, url, key, depth = data["crawl_id"], data["url"], data["key"], data["depth"]
        except KeyError as exc:
            raise MessageError(f"message lacks field {exc.args[0]!r}") from None
        if not (isinstance(crawl_id, str) and isinstance(url, str) and isinstance(key, str)):
            raise MessageError("crawl_id, url and key must be strings")
        if not isinstance(depth, int) or isinstance(depth, bool) or depth < 0:
            raise MessageError("depth must be a non-negative integer")
        if len(key) != 16 or any(c not in "0123456789abcdef" for c in key):
            raise MessageError("key must be 16 lowercase hex digits")
        meta = data.get("meta") or {}
        if (
            not isinstance(meta, dict)
            or len(meta) > MAX_META_ENTRIES
            or not all(
                isinstance(k, str) and isinstance(v, str) and len(v) <= MAX_META_VALUE
                for k, v in meta.items()
            )
        ):
            raise MessageError("meta must be a small map of strings")
        lastmod = data.get("lastmod")
        parent = data.get("parent")
        return cls(
            crawl_id=crawl_id,
            url=url,
            key=key,
            depth=depth,
            parent=parent if isinstance(parent, str) else None,
            sitemap=bool(data.get("sitemap", False)),
            lastmod=lastmod if isinstance(lastmod, str) else None,
            meta=dict(meta),
            check_only=bool(data.get("check_only", False)),
            tries=_count(data.get("tries")),
            holds=_count(data.get("holds")),
            redrives=_count(data.get("redrives")),
            budget_waits=_count(data.get("bw")),
            not_before=_epoch(data.get("nb")),
            hops=_count(data.get("rh")),
            probe=data.get("probe") is True,
        )


def _epoch(value: Any) -> float:
    """A time of the message (epoch seconds); anything else reads as 0."""
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value) or value < 0:
        return 0.0
    return float(value)


MAX_COUNT = 1_000
"""The most a message's counters (tries, holds, redrives, budget waits) are read as: each is a re-send, and
the back-offs computed from them (sums over, and powers of, the count) must stay cheap on a hostile body."""


def _count(value: Any) -> int:
    """A small non-negative counter of the message (at most `MAX_COUNT`); anything else reads as 0."""
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        return 0
    return min(value, MAX_COUNT)
