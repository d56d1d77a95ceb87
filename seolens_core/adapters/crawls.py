"""CrawlStore: the crawls table (status, settings, atomic counters) and the operator's global pause switch."""

from __future__ import annotations

import asyncio
import enum
import json
import random
import re
import time
import zlib
from dataclasses import dataclass, field
from typing import Any

from seolens_core.frontier import SITEMAP_QUEUE_COUNTER
from seolens_core.settings import CrawlSettings

GLOBAL_CONTROL_ID = "__frontier__"
SETTINGS_LEVEL = 9
PAGES_RESERVED = "n_reserved"
"""Page-budget units taken by workers before their fetches (`reserve_pages`); a unit not spent on a fetch is
given back with the batch's counters, so `n_reserved` >= `n_fetched` and never passes `max_pages`."""
_COUNTER = re.compile(rf"n_\w+|q\d+|{SITEMAP_QUEUE_COUNTER}")


class CrawlStatus(enum.StrEnum):
    QUEUED = "QUEUED"
    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    CANCELLED = "CANCELLED"
    FINISHING = "FINISHING"
    COMPLETED = "COMPLETED"
    FAILED = "FAILED"

    @property
    def accepts_fetches(self) -> bool:
        return self in (CrawlStatus.QUEUED, CrawlStatus.RUNNING)

    @property
    def terminal(self) -> bool:
        return self in (CrawlStatus.CANCELLED, CrawlStatus.COMPLETED, CrawlStatus.FAILED)


class CrawlNotFound(LookupError):
    """No crawl with that id."""


class StatusConflict(RuntimeError):
    """The crawl is not in a status that allows this change."""


@dataclass(frozen=True, slots=True)
class CrawlRecord:
    crawl_id: str
    status: CrawlStatus
    settings: CrawlSettings
    site: str
    created_at: str
    started_epoch: float
    counters: dict[str, int] = field(default_factory=dict)
    finished_at: str | None = None
    error: str | None = None

    @property
    def frontier_depth(self) -> int | None:
        """The shallowest link depth that still has queued URLs (per-depth counters `q<d>`; sitemap URLs, in
        `qs`, are outside it), None when unknown."""
        depths = [int(k[1:]) for k, v in self.counters.items() if k[:1] == "q" and k[1:].isdigit() and v > 0]
        return min(depths) if depths else None

    def budget_spent(self, now: float | None = None) -> str | None:
        """ "page budget" once `max_pages` pages are fetched, "time budget" once `max_seconds` have passed
        (given `now`), else None: past either, nothing more of the crawl is fetched."""
        settings = self.settings
        if settings.max_pages is not None and self.counters.get("n_fetched", 0) >= settings.max_pages:
            return "page budget"
        if (
            now is not None
            and settings.max_seconds is not None
            and now - self.started_epoch >= settings.max_seconds
        ):
            return "time budget"
        return None

    @property
    def pages_taken(self) -> int:
        """Pages of the budget fetched or reserved for a fetch in flight (`PAGES_RESERVED`)."""
        return max(self.counters.get("n_fetched", 0), self.counters.get(PAGES_RESERVED, 0))

    @property
    def queued(self) -> int:
        """URLs queued by the crawl's own counters (claims in, finishes out: `q<d>` and `qs`). A hint, not
        the truth: a flush that crashed between its claims and its counters leaves them off by its batch."""
        return sum(
            v
            for k, v in self.counters.items()
            if k == SITEMAP_QUEUE_COUNTER or (k[:1] == "q" and k[1:].isdigit())
        )


def _now_iso(now: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now))


class CrawlStore:
    """Crawl items keyed by `crawl_id`; counters are DynamoDB ADD updates (exact under concurrency)."""

    def __init__(self, client: Any, table: str) -> None:
        self._client = client
        self._table = table

    async def create(self, crawl_id: str, settings: CrawlSettings, site: str, now: float) -> CrawlRecord:
        created_at = _now_iso(now)
        item: dict[str, Any] = {
            "crawl_id": {"S": crawl_id},
            "status": {"S": CrawlStatus.QUEUED.value},
            # Compressed: the item is rewritten by every flush's counter update, billed per started KB, and the
            # settings' JSON (~1.1 KB) alone took it over one.
            "settings": {"B": zlib.compress(settings.to_storage().encode("utf-8"), SETTINGS_LEVEL)},
            "site": {"S": site},
            "created_at": {"S": created_at},
            "started_epoch": {"N": repr(now)},
        }
        await self._client.put_item(
            TableName=self._table, Item=item, ConditionExpression="attribute_not_exists(crawl_id)"
        )
        return CrawlRecord(crawl_id, CrawlStatus.QUEUED, settings, site, created_at, now)

    async def get(self, crawl_id: str) -> CrawlRecord:
        resp = await self._client.get_item(
            TableName=self._table, Key={"crawl_id": {"S": crawl_id}}, ConsistentRead=True
        )
        item = resp.get("Item")
        if not item or "settings" not in item:
            raise CrawlNotFound(crawl_id)
        return _record(item)

    async def list(self, limit: int = 50) -> list[CrawlRecord]:
        resp = await self._client.scan(TableName=self._table, Limit=max(limit * 2, 100))
        records = [_record(i) for i in resp.get("Items", []) if "settings" in i]
        records.sort(key=lambda r: r.created_at, reverse=True)
        return records[:limit]

    async def previous_of_site(self, site: str, before: str) -> CrawlRecord | None:
        """The latest finished crawl of `site` created before `before` (for audit comparisons)."""
        resp = await self._client.query(
            TableName=self._table,
            IndexName="by_site",
            KeyConditionExpression="site = :s AND created_at < :b",
            ExpressionAttributeValues={":s": {"S": site}, ":b": {"S": before}},
            ScanIndexForward=False,
            Limit=20,
        )
        for item in resp.get("Items", []):
            if item.get("status", {}).get("S") == CrawlStatus.COMPLETED.value:
                return await self.get(item["crawl_id"]["S"])
        return None

    async def add_counters(
        self, crawl_id: str, deltas: dict[str, int], *, once: dict[str, Any] | None = None
    ) -> bool:
        """ADD `deltas` to the crawl's counters. With `once` (a TransactWriteItems element carrying a
        condition, e.g. UrlStore.journal_close), both happen in one transaction: the counters are added only
        if that condition holds, so a batch republished after a crash is counted once. Returns False when
        `once`'s condition failed (already applied)."""
        deltas = {k: v for k, v in deltas.items() if v}
        if not deltas and once is None:
            return True
        update: dict[str, Any] = {}
        if deltas:
            update = {
                "TableName": self._table,
                "Key": {"crawl_id": {"S": crawl_id}},
                "UpdateExpression": "ADD " + ", ".join(f"#c{i} :v{i}" for i in range(len(deltas))),
                "ExpressionAttributeNames": {f"#c{i}": name for i, name in enumerate(deltas)},
                "ExpressionAttributeValues": {f":v{i}": {"N": str(v)} for i, v in enumerate(deltas.values())},
            }
        if once is None:
            await self._client.update_item(**update)
            return True
        items = [once] + ([{"Update": update}] if update else [])
        for attempt in range(8):
            try:
                await self._client.transact_write_items(TransactItems=items)
                return True
            except self._client.exceptions.TransactionCanceledException as exc:
                reasons = exc.response.get("CancellationReasons") or []
                codes = [r.get("Code", "None") for r in reasons]
                if codes and codes[0] == "ConditionalCheckFailed":
                    return False
                if attempt == 7 or not any(c in ("TransactionConflict", "ThrottlingError") for c in codes):
                    raise
            await asyncio.sleep(min(0.05 * 2**attempt, 2.0) * (1 + random.random()))
        return True  # unreachable: the last attempt raises

    async def reserve_pages(self, crawl_id: str, wanted: int, max_pages: int) -> int:
        """Take up to `wanted` of the crawl's page budget (`n_reserved`, never past `max_pages`); returns how
        many were granted (0: spent). One conditional ADD; when fewer are left, one read and the rest."""
        for _ in range(8):
            if wanted <= 0:
                return 0
            try:
                await self._client.update_item(
                    TableName=self._table,
                    Key={"crawl_id": {"S": crawl_id}},
                    UpdateExpression=f"ADD {PAGES_RESERVED} :k",
                    ConditionExpression=f"attribute_exists(crawl_id) AND (attribute_not_exists({PAGES_RESERVED})"
                    f" OR {PAGES_RESERVED} <= :limit)",
                    ExpressionAttributeValues={
                        ":k": {"N": str(wanted)},
                        ":limit": {"N": str(max_pages - wanted)},
                    },
                )
                return wanted
            except self._client.exceptions.ConditionalCheckFailedException:
                record = await self.get(crawl_id)  # raises CrawlNotFound for an unknown crawl
                wanted = min(wanted, max_pages - record.counters.get(PAGES_RESERVED, 0))
        return 0  # the budget moved on every try: take nothing rather than risk passing it

    async def set_status(
        self,
        crawl_id: str,
        status: CrawlStatus,
        *,
        allowed_from: tuple[CrawlStatus, ...] | None = None,
        now: float | None = None,
        error: str | None = None,
    ) -> None:
        names = {"#s": "status"}
        values: dict[str, Any] = {":s": {"S": status.value}}
        sets = ["#s = :s"]
        if status.terminal and now is not None:
            sets.append("finished_at = :f")
            values[":f"] = {"S": _now_iso(now)}
        if error:
            sets.append("error_text = :e")
            values[":e"] = {"S": error[:2000]}
        condition = "attribute_exists(crawl_id)"
        if allowed_from:
            placeholders = []
            for i, allowed in enumerate(allowed_from):
                values[f":a{i}"] = {"S": allowed.value}
                placeholders.append(f":a{i}")
            condition += f" AND #s IN ({', '.join(placeholders)})"
        try:
            await self._client.update_item(
                TableName=self._table,
                Key={"crawl_id": {"S": crawl_id}},
                UpdateExpression="SET " + ", ".join(sets),
                ConditionExpression=condition,
                ExpressionAttributeNames=names,
                ExpressionAttributeValues=values,
            )
        except self._client.exceptions.ConditionalCheckFailedException:
            current = await self.get(crawl_id)  # raises CrawlNotFound for unknown ids
            raise StatusConflict(f"crawl {crawl_id} is {current.status.value}") from None

    async def get_with_switch(self, crawl_id: str) -> tuple[CrawlRecord, bool]:
        """The crawl's record and the operator switch (is the whole frontier paused?) in one BatchGetItem."""
        keys = [{"crawl_id": {"S": crawl_id}}, {"crawl_id": {"S": GLOBAL_CONTROL_ID}}]
        request: dict[str, Any] = {self._table: {"Keys": keys, "ConsistentRead": True}}
        items: list[dict[str, Any]] = []
        for _ in range(8):  # unprocessed keys (throttling) are asked again
            resp = await self._client.batch_get_item(RequestItems=request)
            items.extend(resp.get("Responses", {}).get(self._table, []))
            request = resp.get("UnprocessedKeys") or {}
            if not request:
                break
        else:
            raise RuntimeError("crawl record still unprocessed after 8 attempts")
        by_id = {item["crawl_id"]["S"]: item for item in items}
        item = by_id.get(crawl_id)
        if not item or "settings" not in item:
            raise CrawlNotFound(crawl_id)
        paused = bool(by_id.get(GLOBAL_CONTROL_ID, {}).get("paused", {}).get("BOOL", False))
        return _record(item), paused

    async def frontier_paused(self) -> bool:
        resp = await self._client.get_item(
            TableName=self._table, Key={"crawl_id": {"S": GLOBAL_CONTROL_ID}}, ConsistentRead=True
        )
        return bool(resp.get("Item", {}).get("paused", {}).get("BOOL", False))

    async def set_frontier_paused(self, paused: bool) -> None:
        await self._client.put_item(
            TableName=self._table, Item={"crawl_id": {"S": GLOBAL_CONTROL_ID}, "paused": {"BOOL": paused}}
        )


def stored_settings(item: dict[str, Any]) -> str:
    """The settings JSON of a crawl item: compressed, or as text (items written before compression)."""
    value = item["settings"]
    if "B" in value:
        return zlib.decompress(bytes(value["B"])).decode("utf-8")
    return str(value["S"])


def _record(item: dict[str, Any]) -> CrawlRecord:
    counters = {k: int(v["N"]) for k, v in item.items() if _COUNTER.match(k) and "N" in v}
    return CrawlRecord(
        crawl_id=item["crawl_id"]["S"],
        status=CrawlStatus(item["status"]["S"]),
        settings=CrawlSettings.model_validate(json.loads(stored_settings(item))),
        site=item.get("site", {}).get("S", ""),
        created_at=item.get("created_at", {}).get("S", ""),
        started_epoch=float(item.get("started_epoch", {}).get("N", "0")),
        counters=counters,
        finished_at=item.get("finished_at", {}).get("S"),
        error=item.get("error_text", {}).get("S"),
    )
