"""CrawlStore: the crawls table (status, settings, atomic counters) and the operator's global pause switch.

A crawl item names its `owner` (the IAM identity of the API caller who started it; the `by_owner` index lists
an owner's crawls newest first) and holds the crawl's secrets (`--cookie`, `--header`) apart from its settings:
sealed by a `SecretSealer` (KMS, bound to the crawl id) in `secrets`, removed when the crawl ends.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import enum
import json
import random
import re
import time
import zlib
from dataclasses import dataclass, field
from typing import Any

from seolens_core.adapters.secrets import SecretSealer
from seolens_core.frontier import SITEMAP_QUEUE_COUNTER
from seolens_core.settings import CrawlSettings

GLOBAL_CONTROL_ID = "__frontier__"
SETTINGS_LEVEL = 9
PAGES_RESERVED = "n_reserved"
"""Page-budget units taken by workers before their fetches (`reserve_pages`); a unit not spent on a fetch is
given back with the batch's counters, so `n_reserved` >= `n_fetched` and never passes `max_pages`."""
_COUNTER = re.compile(rf"n_\w+|q\d+|{SITEMAP_QUEUE_COUNTER}")
BY_OWNER = "by_owner"
SECRETS = "secrets"


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


class BadCursor(ValueError):
    """A list cursor that this store did not hand to this owner."""


@dataclass(frozen=True, slots=True)
class CrawlPage:
    """One page of an owner's crawls, newest first; `cursor` asks for the next (None: no more)."""

    records: list[CrawlRecord]
    cursor: str | None


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
    owner: str | None = None
    sealed_secrets: bytes | None = field(default=None, repr=False)
    """The crawl's secrets as `SecretSealer.seal` made them (None: none, or the crawl has ended)."""
    secret_names: tuple[str, ...] = ()
    """The names of the secret headers (`Cookie` for the cookie), kept after the crawl for its settings view."""

    def public_settings(self) -> dict[str, Any]:
        """The settings as reports and the API show them: every secret masked, named as configured."""
        view = self.settings.public_view()
        headers = [n for n in self.secret_names if n != "Cookie"]
        if headers or "Cookie" in self.secret_names:
            view["extra_headers"] = dict.fromkeys(headers, "***")
            view["cookie"] = "***" if "Cookie" in self.secret_names else None
        return view

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

    def __init__(self, client: Any, table: str, sealer: SecretSealer | None = None) -> None:
        self._client = client
        self._table = table
        self._sealer = sealer

    async def create(
        self, crawl_id: str, settings: CrawlSettings, site: str, now: float, *, owner: str | None = None
    ) -> CrawlRecord:
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
        if owner:
            item["owner"] = {"S": owner}
        sealed: bytes | None = None
        secrets = settings.secrets_json()
        if secrets is not None:
            if self._sealer is None:
                raise ValueError("a crawl with secrets needs a key to seal them (SECRETS_KEY_ID)")
            sealed = await self._sealer.seal(crawl_id, secrets.encode("utf-8"))
            item[SECRETS] = {"B": sealed}
            item["secret_names"] = {"L": [{"S": name} for name in _secret_names(settings)]}
        await self._client.put_item(
            TableName=self._table, Item=item, ConditionExpression="attribute_not_exists(crawl_id)"
        )
        return CrawlRecord(
            crawl_id,
            CrawlStatus.QUEUED,
            settings.without_secrets(),
            site,
            created_at,
            now,
            owner=owner,
            sealed_secrets=sealed,
            secret_names=_secret_names(settings) if sealed is not None else (),
        )

    async def fetch_settings(self, record: CrawlRecord) -> CrawlSettings:
        """The settings a fetcher of the crawl needs: its secrets unsealed (the crawl item holds them sealed)."""
        if record.sealed_secrets is None:
            return record.settings
        if self._sealer is None:
            raise ValueError("this crawl's secrets are sealed and no key was given to open them")
        opened = await self._sealer.open(record.crawl_id, record.sealed_secrets)
        return record.settings.with_secrets(opened.decode("utf-8"))

    async def get(self, crawl_id: str) -> CrawlRecord:
        resp = await self._client.get_item(
            TableName=self._table, Key={"crawl_id": {"S": crawl_id}}, ConsistentRead=True
        )
        item = resp.get("Item")
        if not item or "settings" not in item:
            raise CrawlNotFound(crawl_id)
        return _record(item)

    async def of_owner(
        self, owner: str, limit: int = 50, status: CrawlStatus | None = None, cursor: str | None = None
    ) -> CrawlPage:
        """`owner`'s crawls newest first (the `by_owner` index), `limit` at most, from `cursor` on."""
        query: dict[str, Any] = {
            "TableName": self._table,
            "IndexName": BY_OWNER,
            "KeyConditionExpression": "#o = :o",
            "ExpressionAttributeNames": {"#o": "owner"},
            "ExpressionAttributeValues": {":o": {"S": owner}},
            "ScanIndexForward": False,
        }
        if status is not None:
            query["FilterExpression"] = "#s = :s"
            query["ExpressionAttributeNames"]["#s"] = "status"
            query["ExpressionAttributeValues"][":s"] = {"S": status.value}
        if cursor is not None:
            query["ExclusiveStartKey"] = _cursor_key(cursor, owner)
        keys: list[dict[str, Any]] = []
        last: dict[str, Any] | None = None
        for _ in range(20):  # a status filter reads more than it keeps: a bounded number of index pages
            resp = await self._client.query(**query, Limit=limit - len(keys))
            keys += [{k: item[k] for k in ("crawl_id", "owner", "created_at")} for item in resp.get("Items", [])]
            last = resp.get("LastEvaluatedKey")
            if last is None or len(keys) >= limit:
                break
            query["ExclusiveStartKey"] = last
        if len(keys) >= limit:
            last = keys[-1]
        records = await self._get_many([k["crawl_id"]["S"] for k in keys])
        return CrawlPage(records, _cursor_text(last) if last is not None else None)

    async def _get_many(self, crawl_ids: list[str]) -> list[CrawlRecord]:
        """The records of `crawl_ids`, in that order (BatchGetItem, 100 keys at most: the API's page limit)."""
        if not crawl_ids:
            return []
        request: dict[str, Any] = {
            self._table: {"Keys": [{"crawl_id": {"S": c}} for c in crawl_ids], "ConsistentRead": True}
        }
        items: dict[str, CrawlRecord] = {}
        for _ in range(8):
            resp = await self._client.batch_get_item(RequestItems=request)
            for item in resp.get("Responses", {}).get(self._table, []):
                if "settings" in item:
                    items[item["crawl_id"]["S"]] = _record(item)
            request = resp.get("UnprocessedKeys") or {}
            if not request:
                break
        return [items[c] for c in crawl_ids if c in items]

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
        # An ended crawl fetches nothing more: its secrets go with the status change.
        removes = f" REMOVE {SECRETS}" if status.terminal else ""
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
                UpdateExpression="SET " + ", ".join(sets) + removes,
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
        owner=item.get("owner", {}).get("S"),
        sealed_secrets=bytes(item[SECRETS]["B"]) if SECRETS in item else None,
        secret_names=tuple(v["S"] for v in item.get("secret_names", {}).get("L", [])),
    )


def _secret_names(settings: CrawlSettings) -> tuple[str, ...]:
    return (*settings.extra_headers, *(("Cookie",) if settings.cookie is not None else ()))


def _cursor_text(key: dict[str, Any]) -> str:
    raw = json.dumps({k: key[k]["S"] for k in ("crawl_id", "owner", "created_at")}, separators=(",", ":"))
    return base64.urlsafe_b64encode(raw.encode("utf-8")).decode("ascii").rstrip("=")


def _cursor_key(cursor: str, owner: str) -> dict[str, Any]:
    """The index key a cursor stands for; BadCursor unless it is a cursor of `owner`'s list."""
    try:
        data = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise BadCursor("cursor is not one this API returned") from None
    if (
        not isinstance(data, dict)
        or set(data) != {"crawl_id", "owner", "created_at"}
        or not all(isinstance(v, str) for v in data.values())
        or data["owner"] != owner
    ):
        raise BadCursor("cursor is not one this API returned to this caller")
    return {k: {"S": v} for k, v in data.items()}
