"""UrlStore: the visited set. A URL is enqueued only by the writer whose conditional put created its item.

Items are keyed by (crawl_id, url_key); `pending_crawl` exists until a URL is done, so a query of the crawl's
partition filtered on it answers "is anything of this crawl still queued, delayed, leased or suspended?"
exactly. No index: a sparse one cost two write units a URL (in at the claim, out at the finish), a quarter
of a crawl's writes; the query reads the partition (half a read unit per 4 KB) and the progress check asks
it only when the crawl's queue counters do not already say it is running.

A fetched URL is done without a write of its own: its fetch lease names the journal of its batch (`jr`), and
the URL is done once that journal's body exists (`finish` writes it before anything is published). Every
reader of "done" resolves `jr` (`delivery`, `pending`, `claim`): a per-URL finish was a third of a crawl's
write units.
"""

from __future__ import annotations

import asyncio
import contextlib
import zlib
from collections import OrderedDict
from collections.abc import AsyncIterator, Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from seolens_core.adapters._gather import all_or_cancel
from seolens_core.adapters._json import dumps, loads
from seolens_core.frontier import FrontierMessage

TTL_SECONDS = 30 * 24 * 3600
QUEUED = "queued"
FETCHING = "fetching"
DONE = "done"
NOT_CRAWLED_OUTCOMES = ("not_crawled", "not_crawled_budget")
"""Outcomes of URLs finished without a fetch because their crawl was stopping (budget, cancel)."""
JOURNAL_MARK = "~j-"
"""Sort-key prefix of a batch's publication marker (not hex, so never a url_key; sorts after them)."""
JOURNAL_BODY = "~b-"
BATCH_MAX_STATEMENTS = 25
"""DynamoDB's limit of statements per BatchExecuteStatement."""
BATCH_ATTEMPTS = 4
_REFUSED = ("ConditionalCheckFailed", "DuplicateItem")
_TRANSIENT = (
    "ThrottlingError",
    "ProvisionedThroughputExceeded",
    "RequestLimitExceeded",
    "TransactionConflict",
    "InternalServerError",
)
STATE_PROJECTION = "crawl_id, url_key, url_state, claimed_by, outcome, jr, lease_until"
"""What the existence checks before a claim (and the duplicate-delivery checks) read of a URL's item."""
SPREAD_ABOVE = 50_000
"""URLs above which `pending` reads the partition in key ranges at once: a query returns 1 MB a page, and a
million URLs (~250 MB) one page after the other outlast the progress function's 30 s."""
KEY_RANGES = (*"0123456789abcdef", "~")
"""The first characters of every sort key: hex url_keys, then the journals' items."""
JOURNALED_MAX = 200_000
"""Journals a store remembers to have their body (`UrlStore._bodies`) before it forgets them all."""
JOURNAL_MAX_BYTES = 300_000
"""Compressed journal bodies above this are not stored (the batch then publishes before it finishes)."""


@dataclass(frozen=True, slots=True)
class Journal:
    """What one flush publishes for one crawl (`body`: pages, link columns, outgoing, counters), stored before
    the flush publishes anything: its body makes done the URLs whose leases name it, so a crash before
    publication is repaired by republishing it instead of fetching again. The marker item carries
    `pending_crawl`, so the crawl is not drained while a journal is unpublished; it is deleted together with
    the counter update (counters applied once)."""

    crawl_id: str
    part: str
    blob: bytes
    """zlib-compressed JSON of the body."""

    @classmethod
    def build(cls, crawl_id: str, part: str, body: dict[str, Any]) -> Journal:
        return cls(crawl_id, part, zlib.compress(dumps(body), 6))

    def body(self) -> dict[str, Any]:
        out: dict[str, Any] = loads(zlib.decompress(self.blob))
        return out


@dataclass(frozen=True, slots=True)
class Delivery:
    """What a delivery of some URLs finds (`UrlStore.delivery`): each URL's state (`queued`, `fetching` while
    another delivery's lease is live, `done`, absent for an unknown URL), the journal that finished each done
    URL, and those journals still unpublished (their flush crashed: publish them, never fetch again)."""

    states: dict[tuple[str, str], str]
    parts: dict[tuple[str, str], str]
    open: dict[tuple[str, str], Journal]


@dataclass(frozen=True, slots=True)
class PendingUrl:
    url: str
    key: str
    depth: int
    host: str
    outcome: str | None = None
    """None while queued; `not_crawled` or `not_crawled_budget` for a URL finished unfetched (crawl stopped)."""
    leased_until: float | None = None
    """While a delivery holds the URL's fetch lease (`claim_fetch`): when the lease ends."""


@dataclass(frozen=True, slots=True)
class FetchClaim:
    """The answer of `claim_fetch`: granted, or refused with the end of the lease another delivery holds
    (None when the URL is already done)."""

    granted: bool
    held_until: float | None = None


@dataclass(frozen=True, slots=True)
class Claimed:
    """`send`: every message to enqueue (re-sends included); `new`: the URLs first discovered by this call."""

    send: list[FrontierMessage]
    new: list[FrontierMessage]


def _refused(item: dict[str, Any], now: float, lease_s: float) -> FetchClaim:
    """A refused fetch claim, from the item as the failed condition saw it."""
    if item.get("url_state", {}).get("S") == FETCHING:
        held_until = float(item.get("lease_until", {}).get("N", repr(now + lease_s)))
        return FetchClaim(False, held_until=held_until)
    return FetchClaim(False)


class SeenCache:
    """A bounded, per-container memory of keys known to exist and who claimed them, so repeated links cost
    no AWS call; a key this same parent claimed is never skipped (its retry must be able to re-send it)."""

    def __init__(self, max_entries: int = 500_000) -> None:
        self._max = max_entries
        self._keys: OrderedDict[tuple[str, str], str] = OrderedDict()

    def skips(self, crawl_id: str, key: str, claimer: str) -> bool:
        owner = self._keys.get((crawl_id, key))
        return owner is not None and owner != claimer

    def add(self, crawl_id: str, key: str, claimer: str) -> None:
        self._keys[(crawl_id, key)] = claimer
        if len(self._keys) > self._max:
            self._keys.popitem(last=False)


def _pending_claim_of(item: dict[str, Any], msg: FrontierMessage) -> bool:
    """The stored item is a claim `msg`'s parent made and the URL is not fetched yet: the parent (retried,
    or its write retried) must send it, or nobody will."""
    owner = item.get("claimed_by", {}).get("S", "")
    return item.get("url_state", {}).get("S") in (QUEUED, FETCHING) and owner == (msg.parent or "seed")


class UrlStore:
    def __init__(self, client: Any, table: str, seen: SeenCache | None = None) -> None:
        self._client = client
        self._table = table
        self._seen = seen if seen is not None else SeenCache()
        self._journaled: set[tuple[str, str]] = set()
        """Journals found to have their body: a body is never deleted (it expires with its crawl), so the URLs
        a lease of it names are done for good and it is not read again (a warm progress check reads each
        journal of a crawl once)."""

    def claimed_elsewhere(self, crawl_id: str, key: str, claimer: str) -> bool:
        """Known here to exist, claimed by another parent than `claimer`: `claim` would skip it unasked."""
        return self._seen.skips(crawl_id, key, claimer)

    def _item(
        self, msg: FrontierMessage, host: str, now: float, *, done_outcome: str | None
    ) -> dict[str, Any]:
        item: dict[str, Any] = {
            "crawl_id": {"S": msg.crawl_id},
            "url_key": {"S": msg.key},
            "url": {"S": msg.url},
            "depth": {"N": str(msg.depth)},
            "host": {"S": host},
            "claimed_by": {"S": msg.parent or "seed"},
            "expires_at": {"N": str(int(now) + TTL_SECONDS)},
        }
        if msg.sitemap:
            item["sitemap"] = {"BOOL": True}
        if done_outcome is None:
            item["url_state"] = {"S": QUEUED}
            item["pending_crawl"] = {"S": msg.crawl_id}
        else:
            item["url_state"] = {"S": DONE}
            item["outcome"] = {"S": done_outcome}
        return item

    async def claim(
        self,
        messages: Sequence[FrontierMessage],
        hosts: Sequence[str],
        now: float,
        *,
        consistent: bool = False,
    ) -> Claimed:
        """The messages this writer must enqueue: newly created items, plus items this same parent claimed
        earlier but may not have sent (a retried parent re-sends them; the fetch side dedups).

        The existence check reads eventually consistent unless `consistent`: a URL a stale read misses meets
        its item in the conditional put (which answers with it), and a stale "queued, claimed by this parent"
        only re-sends a message the fetch side drops. Links are most of the reads: half the read units. A
        caller that counts `new` asks for consistent reads: a stale miss of its own earlier claim would come
        back as new."""
        todo = [
            (m, h)
            for m, h in zip(messages, hosts, strict=True)
            if not self._seen.skips(m.crawl_id, m.key, m.parent or "seed")
        ]
        if not todo:
            return Claimed([], [])
        unique: dict[tuple[str, str], tuple[FrontierMessage, str]] = {}
        for m, h in todo:
            unique.setdefault((m.crawl_id, m.key), (m, h))
        existing = await self._get_many([k for k in unique], consistent=consistent)
        winners: list[FrontierMessage] = []
        to_put: list[tuple[FrontierMessage, str]] = []
        for ident, (msg, host) in unique.items():
            item = existing.get(ident)
            if item is None:
                to_put.append((msg, host))
                continue
            self._seen.add(*ident, item.get("claimed_by", {}).get("S", ""))
            if _pending_claim_of(item, msg):
                winners.append(msg)
        results = await self._put_new_many(to_put, now)
        new: list[FrontierMessage] = []
        for (msg, _), won in zip(to_put, results, strict=True):
            if won:
                self._seen.add(msg.crawl_id, msg.key, msg.parent or "seed")
                winners.append(msg)
                new.append(msg)
        return Claimed(await self._unpublished_claims(winners, existing), new)

    async def _unpublished_claims(
        self, winners: list[FrontierMessage], items: dict[tuple[str, str], dict[str, Any]]
    ) -> list[FrontierMessage]:
        """`winners` without the URLs already fetched: leased with a journal whose body exists (done)."""
        leased = {
            (m.crawl_id, m.key): items[(m.crawl_id, m.key)]["jr"]["S"]
            for m in winners
            if (item := items.get((m.crawl_id, m.key))) is not None
            and item.get("url_state", {}).get("S") == FETCHING
            and "jr" in item
        }
        if not leased:
            return winners
        bodies = await self._bodies({(c, part) for (c, _), part in leased.items()})
        return [m for m in winners if (m.crawl_id, leased.get((m.crawl_id, m.key), "")) not in bodies]

    async def _bodies(
        self, parts: Iterable[tuple[str, str]], *, consistent: bool = True
    ) -> set[tuple[str, str]]:
        """The journals among (crawl_id, part) whose body exists. A caller for whom a journal missed by a stale
        read only means "ask again later" (the drain check) reads eventually consistent: half the units."""
        idents = list(dict.fromkeys(parts))
        known = {ident for ident in idents if ident in self._journaled}
        asked = [(c, JOURNAL_BODY + p) for c, p in idents if (c, p) not in known]
        if asked:
            found = await self._get_many(asked, projection="crawl_id, url_key", consistent=consistent)
            if len(self._journaled) > JOURNALED_MAX:
                self._journaled.clear()
            for c, key in found:
                self._journaled.add((c, key[len(JOURNAL_BODY) :]))
                known.add((c, key[len(JOURNAL_BODY) :]))
        return known

    async def _put_new_many(self, todo: Sequence[tuple[FrontierMessage, str]], now: float) -> list[bool]:
        """Create the items of `todo` where none exists yet; True where this call created it.

        Conditional INSERTs, 25 to a BatchExecuteStatement, instead of one conditional PutItem each: a call
        saved per new URL (issue 9's calls per page) at the same write unit an item. A transaction would bill
        two, and a batch answers each statement on its own, so a lost condition costs no retry of the others.
        """
        if len(todo) == 1:
            return [await self._put_new(*todo[0], now)]
        inserts = {i: self._insert(msg, host, now) for i, (msg, host) in enumerate(todo)}
        written, refused, left = await self._execute(inserts)
        won = [False] * len(todo)
        for i in written:
            won[i] = True
        if refused:
            # The item exists. Ours to send if this parent's own write created it: one that landed though its
            # answer was lost (the SDK retried the batch and met its own item), or the URL is never queued.
            items = await self._get_many([(todo[i][0].crawl_id, todo[i][0].key) for i in refused])
            mine = []
            for i in refused:
                item = items.get((todo[i][0].crawl_id, todo[i][0].key))
                if item is None:  # gone since (expired): a put of its own decides
                    left.append(i)
                elif _pending_claim_of(item, todo[i][0]):
                    mine.append(todo[i][0])
            unpublished = {(m.crawl_id, m.key) for m in await self._unpublished_claims(mine, items)}
            for i in refused:
                won[i] = (todo[i][0].crawl_id, todo[i][0].key) in unpublished
        # Failing after every attempt: one conditional put each (never lose a URL).
        results = await all_or_cancel(*(self._put_new(*todo[i], now) for i in left))
        for i, ok in zip(left, results, strict=True):
            won[i] = ok
        return won

    async def _execute(
        self, statements: dict[int, dict[str, Any]]
    ) -> tuple[list[int], dict[int, dict[str, Any]], list[int]]:
        """Run single-item write statements (by index), 25 to a BatchExecuteStatement, all at once, again
        without the ones refused or written: (written, refused with the item the failed condition returned
        ({} for none), failing after every attempt or with an error a retry would not cure)."""
        todo = list(statements)
        written: list[int] = []
        refused: dict[int, dict[str, Any]] = {}
        left: list[int] = []
        for attempt in range(BATCH_ATTEMPTS):
            if attempt:
                await asyncio.sleep(min(0.05 * 2**attempt, 1.0))
            chunks = [todo[i : i + BATCH_MAX_STATEMENTS] for i in range(0, len(todo), BATCH_MAX_STATEMENTS)]
            answers = await all_or_cancel(
                *(
                    self._client.batch_execute_statement(Statements=[statements[i] for i in chunk])
                    for chunk in chunks
                )
            )
            todo = []
            for chunk, answer in zip(chunks, answers, strict=True):
                responses = answer.get("Responses") or []
                if len(responses) != len(chunk):
                    raise RuntimeError(f"{len(responses)} answers to {len(chunk)} statements")
                for i, response in zip(chunk, responses, strict=True):
                    code = (response.get("Error") or {}).get("Code")
                    if code is None:
                        written.append(i)
                    elif code in _REFUSED:
                        refused[i] = response["Error"].get("Item") or {}
                    elif code in _TRANSIENT:
                        todo.append(i)
                    else:
                        left.append(i)  # a single write says what is wrong with it
            if not todo:
                break
        return written, refused, left + todo

    def _insert(self, msg: FrontierMessage, host: str, now: float) -> dict[str, Any]:
        """`_create` as a PartiQL statement: INSERT fails (`DuplicateItem`) where an item with the key exists."""
        item = self._item(msg, host, now, done_outcome=None)
        names = ", ".join(f"'{name}': ?" for name in item)
        return {
            "Statement": f'INSERT INTO "{self._table}" VALUE {{{names}}}',
            "Parameters": list(item.values()),
        }

    def _create(self, msg: FrontierMessage, host: str, now: float) -> dict[str, Any]:
        """The conditional put that creates a URL's item, queued, only if none exists."""
        return {
            "TableName": self._table,
            "Item": self._item(msg, host, now, done_outcome=None),
            "ConditionExpression": "attribute_not_exists(url_key)",
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }

    async def _put_new(self, msg: FrontierMessage, host: str, now: float) -> bool:
        try:
            await self._client.put_item(**self._create(msg, host, now))
        except self._client.exceptions.ConditionalCheckFailedException as exc:
            return _pending_claim_of(exc.response.get("Item") or {}, msg)
        return True

    async def claim_fetch(
        self, msg: FrontierMessage, now: float, lease_s: float, *, part: str = ""
    ) -> FetchClaim:
        """Take the exclusive right to fetch a queued URL, as a lease that expires (a crashed worker's URL
        comes back). Otherwise say why: it is done (a duplicate: drop it) or another delivery holds a live
        lease (come back when it ends: if that worker crashed, this copy fetches). `part` names the journal
        the caller's batch will write: the URL is done once that journal's body exists (`finish`)."""
        try:
            await self._client.update_item(
                **self._lease_update(msg, now, lease_s, part), ReturnValuesOnConditionCheckFailure="ALL_OLD"
            )
        except self._client.exceptions.ConditionalCheckFailedException as exc:
            return _refused(exc.response.get("Item") or {}, now, lease_s)
        return FetchClaim(True)

    async def claim_fetch_many(
        self, asks: Sequence[tuple[FrontierMessage, float, float]], *, part: str = ""
    ) -> list[FetchClaim]:
        """`claim_fetch` for several URLs (message, now, lease_s) in BatchExecuteStatements: the records of a
        batch granted their slots together claim together, a write unit each. A refused condition is
        answered from the item it returns. Persistent failures, or a URL named twice, fall back to one
        `claim_fetch` each; so does a single ask."""
        if len(asks) == 1:
            return [await self.claim_fetch(*asks[0], part=part)]
        answers: dict[int, FetchClaim] = {}
        first: dict[tuple[str, str], int] = {}
        leases = {
            i: self._lease_statement(m, now, lease_s, part)
            for i, (m, now, lease_s) in enumerate(asks)
            if first.setdefault((m.crawl_id, m.key), i) == i
        }
        granted, refused, _ = await self._execute(leases)
        answers.update((i, FetchClaim(True)) for i in granted)
        # A refusal without the item (none stored, or an answer that left it out) goes again singly below:
        # an UpdateItem's refusal always carries it, and "done" must not be guessed.
        answers.update((i, _refused(item, asks[i][1], asks[i][2])) for i, item in refused.items() if item)
        for i in range(len(asks)):  # still failing, or the same URL named twice: one claim each
            if i not in answers:
                answers[i] = await self.claim_fetch(*asks[i], part=part)
        return [answers[i] for i in range(len(asks))]

    def _lease_statement(
        self, msg: FrontierMessage, now: float, lease_s: float, part: str = ""
    ) -> dict[str, Any]:
        """`_lease_update` as a PartiQL statement (an UPDATE changes an existing item only)."""
        journal = ' SET "jr" = ?' if part else ""
        return {
            "Statement": (
                f'UPDATE "{self._table}" SET "url_state" = ? SET "lease_until" = ?{journal}'
                ' WHERE "crawl_id" = ? AND "url_key" = ?'
                ' AND ("url_state" = ? OR ("url_state" = ? AND "lease_until" < ? AND "jr" IS MISSING))'
            ),
            "Parameters": [
                {"S": FETCHING},
                {"N": repr(now + lease_s)},
                *([{"S": part}] if part else []),
                {"S": msg.crawl_id},
                {"S": msg.key},
                {"S": QUEUED},
                {"S": FETCHING},
                {"N": repr(now)},
            ],
            "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
        }

    def _lease_update(
        self, msg: FrontierMessage, now: float, lease_s: float, part: str = ""
    ) -> dict[str, Any]:
        """The lease: `queued`, or an expired lease of an older version (no `jr`); a lease that names a journal
        is either done (the body exists) or released by `delivery` once it expired (its flush crashed)."""
        values = {
            ":f": {"S": FETCHING},
            ":q": {"S": QUEUED},
            ":l": {"N": repr(now + lease_s)},
            ":now": {"N": repr(now)},
        }
        if part:
            values[":jr"] = {"S": part}
        return {
            "TableName": self._table,
            "Key": {"crawl_id": {"S": msg.crawl_id}, "url_key": {"S": msg.key}},
            "UpdateExpression": "SET url_state = :f, lease_until = :l" + (", jr = :jr" if part else ""),
            "ConditionExpression": (
                "url_state = :q OR (url_state = :f AND lease_until < :now AND attribute_not_exists(jr))"
            ),
            "ExpressionAttributeValues": values,
        }

    async def release_fetch(self, msg: FrontierMessage) -> None:
        """Give a leased URL back to the queued state before its message is re-sent (deferral, retry)."""
        # Already done or never leased: nothing to give back.
        with contextlib.suppress(self._client.exceptions.ConditionalCheckFailedException):
            await self._client.update_item(
                TableName=self._table,
                Key={"crawl_id": {"S": msg.crawl_id}, "url_key": {"S": msg.key}},
                UpdateExpression="SET url_state = :q REMOVE lease_until, jr",
                ConditionExpression="url_state = :f",
                ExpressionAttributeValues={":f": {"S": FETCHING}, ":q": {"S": QUEUED}},
            )

    async def release_lease(self, crawl_id: str, key: str, part: str, ended_by: float | None = None) -> bool:
        """Put back to `queued` a URL whose lease names the journal `part`, unless the URL changed since: the
        holder's record failed (the URL must not be done by that journal), or, with `ended_by`, a lease that
        ended before then without its journal (its delivery died before its flush). False if it changed."""
        condition = "url_state = :f AND jr = :jr"
        values = {":f": {"S": FETCHING}, ":q": {"S": QUEUED}, ":jr": {"S": part}}
        if ended_by is not None:
            condition += " AND lease_until < :now"
            values[":now"] = {"N": repr(ended_by)}
        try:
            await self._client.update_item(
                TableName=self._table,
                Key={"crawl_id": {"S": crawl_id}, "url_key": {"S": key}},
                UpdateExpression="SET url_state = :q REMOVE lease_until, jr",
                ConditionExpression=condition,
                ExpressionAttributeValues=values,
            )
        except self._client.exceptions.ConditionalCheckFailedException:
            return False
        return True

    async def _get_many(
        self,
        idents: list[tuple[str, str]],
        projection: str | None = STATE_PROJECTION,
        *,
        consistent: bool = True,
    ) -> dict[tuple[str, str], dict[str, Any]]:
        """Items by (crawl_id, key); an eventually consistent read costs half the read units."""
        found: dict[tuple[str, str], dict[str, Any]] = {}

        async def get_page(page: list[tuple[str, str]]) -> None:
            keys = [{"crawl_id": {"S": c}, "url_key": {"S": k}} for c, k in page]
            spec: dict[str, Any] = {"Keys": keys, "ConsistentRead": consistent}
            if projection:
                spec["ProjectionExpression"] = projection
            request: dict[str, Any] = {self._table: spec}
            attempt = 0
            while request:
                resp = await self._client.batch_get_item(RequestItems=request)
                for item in resp.get("Responses", {}).get(self._table, []):
                    found[(item["crawl_id"]["S"], item["url_key"]["S"])] = item
                request = resp.get("UnprocessedKeys") or {}
                if request:
                    attempt += 1
                    await asyncio.sleep(min(0.05 * 2**attempt, 2.0))

        await all_or_cancel(*(get_page(idents[i : i + 100]) for i in range(0, len(idents), 100)))
        return found

    async def states(self, messages: Iterable[FrontierMessage]) -> dict[tuple[str, str], str]:
        """Each URL's state as `delivery` sees it, releasing nothing (every lease reads as still running)."""
        return (await self.delivery(messages, now=0.0)).states

    async def delivery(self, messages: Iterable[FrontierMessage], now: float) -> Delivery:
        """The state of each message's URL for a delivery: one consistent read of the URLs, and one of the
        journals their leases or finishes name. A URL leased with a journal whose body exists is done; one
        whose lease ended without it was leased by a delivery that died before its flush, and is put back to
        `queued` here (so that a deferral keeps it pending and the lease can be taken again)."""
        idents = list(dict.fromkeys((m.crawl_id, m.key) for m in messages))
        items = await self._get_many(idents)
        states = {ident: item.get("url_state", {}).get("S", "") for ident, item in items.items()}
        parts = {ident: item["jr"]["S"] for ident, item in items.items() if "jr" in item}
        if not parts:
            return Delivery(states, {}, {})
        named = list(dict.fromkeys((c, part) for (c, _), part in parts.items()))
        keys = [(c, JOURNAL_MARK + p) for c, p in named] + [(c, JOURNAL_BODY + p) for c, p in named]
        journals = await self._get_many(keys, projection=None)
        open_: dict[tuple[str, str], Journal] = {}
        for c, p in named:
            body = journals.get((c, JOURNAL_BODY + p))
            if body is not None and (c, JOURNAL_MARK + p) in journals:
                open_[(c, p)] = Journal(c, p, bytes(body["blob"]["B"]))
        for ident, part in list(parts.items()):
            if states.get(ident) != FETCHING:
                continue
            if (ident[0], JOURNAL_BODY + part) in journals:
                states[ident] = DONE  # fetched: its batch's journal holds it
                continue
            del parts[ident]
            lease_until = float(items[ident].get("lease_until", {}).get("N", "inf"))
            if lease_until < now and await self.release_lease(*ident, part, ended_by=now):
                states[ident] = QUEUED
        return Delivery(states, parts, open_)

    async def unpublished(self, parts: Iterable[tuple[str, str]]) -> list[Journal]:
        """The journals among (crawl_id, part) whose marker still exists: their flush did not complete."""
        idents = list(dict.fromkeys(parts))
        keys = [(c, JOURNAL_MARK + p) for c, p in idents] + [(c, JOURNAL_BODY + p) for c, p in idents]
        items = await self._get_many(keys, projection=None)
        out: list[Journal] = []
        for crawl_id, part in idents:
            body = items.get((crawl_id, JOURNAL_BODY + part))
            if (crawl_id, JOURNAL_MARK + part) in items and body is not None:
                out.append(Journal(crawl_id, part, bytes(body["blob"]["B"])))
        return out

    def journal_close(self, crawl_id: str, part: str) -> dict[str, Any]:
        """The TransactWriteItems element that closes a journal: delete its marker if it still exists
        (CrawlStore.add_counters applies the batch's counters in the same transaction: exactly once)."""
        return {
            "Delete": {
                "TableName": self._table,
                "Key": {"crawl_id": {"S": crawl_id}, "url_key": {"S": JOURNAL_MARK + part}},
                "ConditionExpression": "attribute_exists(url_key)",
            }
        }

    def dead_letter_finish(self, msg: FrontierMessage, host: str, outcome: str) -> dict[str, Any]:
        """The TransactWriteItems element that finishes a URL whose message was dead-lettered, unless the URL
        is done already (another copy finished it): the caller adds its counters in the same transaction."""
        return {
            "Update": {
                "TableName": self._table,
                "Key": {"crawl_id": {"S": msg.crawl_id}, "url_key": {"S": msg.key}},
                "UpdateExpression": (
                    "SET url_state = :done, outcome = :o, #u = if_not_exists(#u, :url),"
                    " #d = if_not_exists(#d, :d), #h = if_not_exists(#h, :h)"
                    " REMOVE pending_crawl, lease_until"
                ),
                "ConditionExpression": "attribute_not_exists(url_state) OR url_state <> :done",
                "ExpressionAttributeNames": {"#u": "url", "#d": "depth", "#h": "host"},
                "ExpressionAttributeValues": {
                    ":done": {"S": DONE},
                    ":o": {"S": outcome},
                    ":url": {"S": msg.url},
                    ":d": {"N": str(msg.depth)},
                    ":h": {"S": host},
                },
            }
        }

    async def finish(
        self,
        done: Sequence[tuple[FrontierMessage, str, str]],
        now: float,
        journals: Sequence[Journal] = (),
        leased: Collection[tuple[str, str]] = (),
    ) -> set[str]:
        """Mark URLs done with their outcome: (message, host, outcome). Idempotent overwrite, 25 per call.
        With `journals` (one per crawl), each journal's marker and body are written first, and only once both
        have landed the crawl's URLs, pointing to it (`jr`); returns the crawls whose journal was stored (small
        enough). BatchWriteItem is not atomic: a done URL whose journal had not landed would be taken for
        published on its redelivery, and its page lost; a marker whose body did not land is closed by the
        progress check (`drop_journal`), nothing pointing to it. A URL in `leased` (crawl_id, key) was leased
        naming its crawl's journal: once that journal is stored the URL is done without a write."""
        # One write per key: a batch may carry two messages of one URL (a re-sent child, a duplicate
        # delivery), and BatchWriteItem rejects a request that names a key twice.
        unique = {(m.crawl_id, m.key): (m, host, outcome) for m, host, outcome in done}
        stored: dict[str, str] = {}
        markers: list[dict[str, Any]] = []
        bodies: list[dict[str, Any]] = []
        for j in journals:
            blob = j.blob
            if len(blob) > JOURNAL_MAX_BYTES or j.crawl_id in stored:
                continue
            stored[j.crawl_id] = j.part
            base = {"crawl_id": {"S": j.crawl_id}, "expires_at": {"N": str(int(now) + TTL_SECONDS)}}
            marker = {**base, "url_key": {"S": JOURNAL_MARK + j.part}, "pending_crawl": {"S": j.crawl_id}}
            body = {**base, "url_key": {"S": JOURNAL_BODY + j.part}, "blob": {"B": blob}}
            markers.append({"PutRequest": {"Item": marker}})
            bodies.append({"PutRequest": {"Item": body}})
        requests: list[dict[str, Any]] = []
        for m, host, outcome in unique.values():
            if m.crawl_id in stored and (m.crawl_id, m.key) in leased:
                continue  # its lease names the journal just written: done
            item = self._item(m, host, now, done_outcome=outcome)
            if m.crawl_id in stored:
                item["jr"] = {"S": stored[m.crawl_id]}
            requests.append({"PutRequest": {"Item": item}})
        # The marker before the body: a body is what makes the URLs its leases name done, so it must never
        # exist without the marker that says it is not published yet.
        await self._write_all(markers)
        await self._write_all(bodies)
        await self._write_all(requests)
        return set(stored)

    async def _write_all(self, requests: Sequence[dict[str, Any]]) -> None:
        """BatchWriteItem `requests`, 25 per call, until none is left unprocessed."""
        for start in range(0, len(requests), 25):
            pending: dict[str, Any] = {self._table: list(requests[start : start + 25])}
            attempt = 0
            while pending:
                resp = await self._client.batch_write_item(RequestItems=pending)
                pending = resp.get("UnprocessedItems") or {}
                if pending:
                    attempt += 1
                    await asyncio.sleep(min(0.05 * 2**attempt, 2.0))

    async def drop_journal(self, crawl_id: str, part: str) -> None:
        """Delete a journal's marker if it still exists, applying nothing: for a marker whose body never
        landed (its flush died between the two), which no URL points to, so nothing of it was published."""
        with contextlib.suppress(self._client.exceptions.ConditionalCheckFailedException):
            await self._client.delete_item(
                TableName=self._table,
                Key={"crawl_id": {"S": crawl_id}, "url_key": {"S": JOURNAL_MARK + part}},
                ConditionExpression="attribute_exists(url_key)",
            )

    async def pending(
        self, crawl_id: str, limit: int = 1000, urls_hint: int = 0, not_crawled: bool = False
    ) -> tuple[list[PendingUrl], bool]:
        """Queued URLs of a crawl (up to `limit`, in key order) and whether more exist: the crawl's partition,
        filtered on `pending_crawl` (an unpublished journal's marker carries it too, with no URL), without the
        leased URLs whose journal body exists (fetched: done without a write of their own). A crawl of more
        than `SPREAD_ABOVE` URLs (`urls_hint`) is read in its 17 key ranges at once. `not_crawled` adds the
        URLs finished without a fetch because the crawl was stopping (`NOT_CRAWLED_OUTCOMES`)."""
        bodies: dict[tuple[str, str], bool] = {}
        if urls_hint <= SPREAD_ABOVE:
            return await self._pending_in(crawl_id, "", limit, not_crawled, bodies)
        ranges = await all_or_cancel(
            *(self._pending_in(crawl_id, p, limit, not_crawled, bodies) for p in KEY_RANGES)
        )
        out = [url for found, _ in ranges for url in found]
        return out[:limit], len(out) > limit or any(more for _, more in ranges)

    async def _pending_in(
        self,
        crawl_id: str,
        prefix: str,
        limit: int,
        not_crawled: bool = False,
        bodies: dict[tuple[str, str], bool] | None = None,
    ) -> tuple[list[PendingUrl], bool]:
        """`pending` among the keys starting with `prefix` (all of them for ""); `bodies` remembers which
        journals were found to exist, across the calls of one `pending`. The URLs without a lease that names
        a journal come first, whole; only when they are not more than `limit` are the leased ones read, and
        then only their key and journal: at the end of a crawl they are every URL it fetched (done by
        their journal), which a 256 MB drain check could not parse whole by the million."""
        values = {":c": {"S": crawl_id}, ":f": {"S": FETCHING}}
        condition = "crawl_id = :c"
        if prefix:
            values[":p"] = {"S": prefix}
            condition += " AND begins_with(url_key, :p)"
        wanted = "attribute_exists(pending_crawl)"
        if not_crawled:
            names = [f":nc{i}" for i in range(len(NOT_CRAWLED_OUTCOMES))]
            values.update({n: {"S": o} for n, o in zip(names, NOT_CRAWLED_OUTCOMES, strict=True)})
            wanted += f" OR outcome IN ({', '.join(names)})"
        unleased: list[dict[str, Any]] = []
        spec = {
            "KeyConditionExpression": condition,
            "FilterExpression": f"({wanted}) AND NOT (url_state = :f AND attribute_exists(jr))",
            "ProjectionExpression": "url_key, #u, #d, #h, outcome, pending_crawl, url_state, lease_until",
            "ExpressionAttributeNames": {"#u": "url", "#d": "depth", "#h": "host"},
            "ExpressionAttributeValues": values,
        }
        async for page in self._query_pages(spec):
            unleased.extend(page)
            if len(unleased) > limit:
                return [_pending_url(item) for item in unleased[:limit]], True
        known = bodies if bodies is not None else {}
        open_keys: list[tuple[str, str]] = []
        spec = {
            "KeyConditionExpression": condition,
            "FilterExpression": "attribute_exists(pending_crawl) AND url_state = :f AND attribute_exists(jr)",
            "ProjectionExpression": "url_key, jr",
            "ExpressionAttributeValues": {k: v for k, v in values.items() if not k.startswith(":nc")},
        }
        async for page in self._query_pages(spec):  # page by page: a large crawl's are never all held
            asked = sorted({(crawl_id, i["jr"]["S"]) for i in page} - known.keys())
            if asked:  # a stale miss leaves the URL pending until the next check: never drained too early
                found = await self._bodies(asked, consistent=False)
                known.update((part, part in found) for part in asked)
            open_keys += [(crawl_id, i["url_key"]["S"]) for i in page if not known[(crawl_id, i["jr"]["S"])]]
        rows = await self._get_many(open_keys, projection=None, consistent=False) if open_keys else {}
        listed = {item["url_key"]["S"] for item in unleased}
        out = [_pending_url(item) for item in unleased]
        # Read again by key: one released or finished since the queries is listed once, and only if pending.
        out += [
            _pending_url(row)
            for ident, row in rows.items()
            if ident[1] not in listed
            and ("pending_crawl" in row or (not_crawled and _outcome(row) in NOT_CRAWLED_OUTCOMES))
        ]
        out.sort(key=lambda u: u.key)
        return out[:limit], len(out) > limit

    async def _query_pages(self, spec: dict[str, Any]) -> AsyncIterator[list[dict[str, Any]]]:
        """The items of a query of this table, one page at a time."""
        kwargs: dict[str, Any] = {"TableName": self._table, **spec}
        while True:
            resp = await self._client.query(**kwargs)
            yield resp.get("Items", [])
            last = resp.get("LastEvaluatedKey")
            if not last:
                return
            kwargs["ExclusiveStartKey"] = last

    async def outcomes(self, crawl_id: str) -> dict[str, int]:
        """Count URLs by outcome (a paginated query over the crawl's partition); a URL done by its lease's
        journal counts with the outcome of its page row there (the journal is read)."""
        counts: dict[str, int] = {}
        by_journal: dict[str, set[str]] = {}
        spec = {
            "KeyConditionExpression": "crawl_id = :c",
            "ExpressionAttributeValues": {":c": {"S": crawl_id}},
            "ProjectionExpression": "url_key, url_state, outcome, jr, #u",
            "ExpressionAttributeNames": {"#u": "url"},
        }
        async for page in self._query_pages(spec):
            for item in page:
                if item.get("url_key", {}).get("S", "").startswith("~"):
                    continue  # a journal item, not a URL
                if item.get("url_state", {}).get("S") == FETCHING and "jr" in item:
                    by_journal.setdefault(item["jr"]["S"], set()).add(item.get("url", {}).get("S", ""))
                    continue
                name = item.get("outcome", {}).get("S") or item.get("url_state", {}).get("S", "unknown")
                counts[name] = counts.get(name, 0) + 1
        bodies = await self._get_many(
            [(crawl_id, JOURNAL_BODY + part) for part in by_journal], projection=None
        )
        for part, urls in by_journal.items():
            body = bodies.get((crawl_id, JOURNAL_BODY + part))
            rows = Journal(crawl_id, part, bytes(body["blob"]["B"])).body().get("pages", []) if body else []
            outcome_of = {row.get("url"): row.get("outcome") for row in rows}
            for url in urls:
                name = outcome_of.get(url) or FETCHING
                counts[name] = counts.get(name, 0) + 1
        return counts


def _pending_url(item: Mapping[str, Any]) -> PendingUrl:
    """A pending URL from its item (`outcome` only for one finished without a fetch, `leased_until` only for
    one leased)."""
    leased = item.get("url_state", {}).get("S") == FETCHING and "lease_until" in item
    return PendingUrl(
        url=item.get("url", {}).get("S", ""),
        key=item["url_key"]["S"],
        depth=int(item.get("depth", {}).get("N", "0")),
        host=item.get("host", {}).get("S", ""),
        outcome=None if "pending_crawl" in item else _outcome(item),
        leased_until=float(item["lease_until"]["N"]) if leased else None,
    )


def _outcome(item: Mapping[str, Any]) -> str | None:
    value: str | None = item.get("outcome", {}).get("S")
    return value
