"""Narrow, version-pinned fixes to moto for the embedded emulator (applied by `start_moto_server`).

Each patch names the moto code it replaces. They are written against moto `PINNED_MOTO_VERSION` only:
on any other version `launch_moto_server` refuses to start (`MotoVersionError`: the crawler's PartiQL batches
need patch 27, without which every crawl fails), `apply()` patches nothing and logs a warning, and
`tests/unit/test_moto_patches.py` fails until someone re-reads the upstream code and re-pins.

1. SQS receive/send cost proportional to the messages touched, not to the queue depth.
   Upstream, `Queue.attributes` evaluates every attribute, including the three
   `ApproximateNumberOfMessages*` counters, each a full scan of the queue. `send_message` reads
   `queue.attributes` once per message (for `ContentBasedDeduplication`) and `receive_message` reads it
   three times per returned message (through `is_message_valid_based_on_retention_period`), so
   ReceiveMessage(10) took ~2.6 s at depth 5,000. The patch keeps `Queue.attributes` exact for every
   caller except these two, which only read `ContentBasedDeduplication` / `MessageRetentionPeriod`:
   inside them the counters are skipped. Each attribute's Python name is converted once, not per read (the
   conversion, a few regular expressions per name, was 3% of the emulator's CPU in a crawl).
2. DynamoDB backend calls serialised with one lock. moto's DynamoDB backend is not thread-safe: under
   the threaded server, TransactWriteItems failed ~10% with HTTP 500 (shared notes, local AWS emulation).
3. TransactWriteItems backs up the items it names, not whole tables. Upstream
   `DynamoDBBackend.transact_write_items` deep-copies every table a transaction names, once per item, to
   roll back a cancelled transaction: a 100-item claim on a 20,000-URL table copied the table 100 times
   (measured: the emulator at 83% of the CPU and 3 GB of memory on a 1,000-page crawl). The patch runs the
   upstream code with that copy turned into a no-op and restores just the named items (their previous
   version, or their absence) when the transaction is cancelled or refused.
4. SQS deletes under the queue's lock. Upstream `Queue.delete_message` rebuilds the message list and rebinds
   it without the lock `add_message` appends under: a message sent while a delete was rebuilding went into
   the old list and was lost (a successful SendMessageBatch whose messages never arrive). Two 20,000-page
   benchmark runs stalled on it: 26 and 10 URLs claimed, their messages gone, the crawl never drained.
   The patch does the same work, in one pass, holding the lock.
5. DeleteMessageBatch in one pass over the queue. Upstream deletes receipt by receipt, each a scan of every
   message in the queue (and a new list of receipt handles per message): 10 scans a batch.
6. `Queue.messages` reads the clock once. Upstream asks every message `visible` and `delayed`, each a fresh
   `unix_time_millis()` (a datetime round trip): at a depth of thousands, most of a ReceiveMessage's CPU.
7. Backend lookup per request host memoised. Upstream, every request lists moto's package directory and
   `isdir`s each of its ~200 entries (then tries ~1,000 URL patterns), under the dispatcher's lock.
8. DynamoDB item operations serialised with `json.dumps`. Upstream walks the botocore output shape for every
   value of every returned item (a quarter of the emulator's CPU in a crawl: a host's pacing item is
   returned on each of its updates). The result is already plain DynamoDB JSON (`dynamo_to_dict`), with
   bytes for binary values and no timestamps; `fast_json_equivalent` checks a result against upstream's
   serialiser, which the tests run on every item shape the crawler stores.
9. A Query reads only the items of its partition. Upstream sorts every item of the table (`Table.all_items`,
   slow DynamoType comparisons) and then tests each against the key condition: ~0.6 s per query of a
   20,000-URL table's sparse `pending` index, which the crawl's progress check and report ask. The patch hands
   upstream's query the items whose hash key attributes equal the condition's string values (a plain string
   comparison, no sort: upstream sorts its candidates itself); other key types go through unchanged.
10. Expressions parsed once per text. Upstream lexes every ConditionExpression and parses every
   UpdateExpression twice per UpdateItem (once to validate the request, once to apply it) and once per item of
   a transaction: a fifth of the emulator's CPU in a crawl, whose expressions are a few dozen texts with
   changing values. The lexer's tokens (immutable, values not yet bound) and the update expression's syntax
   tree (upstream's validator deep-copies it before binding names and values) are kept per text. The method
   names of a response class, listed with `inspect.getmembers` on every request, are kept per class.
11. Top-level projections pick attributes. Upstream `Item.project` turns the whole item into Python values
   and back through boto3's (de)serialisers for every projected item (a tenth of the emulator's CPU: the
   crawl's batched existence checks project six attributes of up to 100 URLs). When every path is a
   top-level name, the patch copies those attributes; nested paths and indexes go through upstream.
12. UpdateItem copies only what it changes. Upstream deep-copies the item before every update, for the stream
   record it writes when the table has a stream (the crawl's tables have none), and its validator deep-copies the
   update expression's tree (generic `deepcopy`, with its memo and reduce protocol, per node) before binding
   names and values into the copy, and the request handler deep-copies the item once more only to read its
   attributes as JSON before the update (for `ReturnValues`): together a tenth of the emulator's CPU in a crawl,
   whose pacing item with its observation list is updated once or twice a page. The patch skips the item copy
   when there is no stream, lets the handler read the JSON from the item itself (it reads it before the update,
   and `Item.to_json` builds new containers with deep-copied values), and copies the tree node by node (each
   node shallowly, its children list anew, parents re-linked: the nodes hold nothing else a validator mutates).
13. An update expression's syntax checked once per text and the names it reads. Upstream's validator walks the
   whole tree ten times per validation; three of the walks (one SET, one REMOVE, one ADD clause at most; no two
   actions on overlapping paths; no action on a key attribute) read only the expression's text, the table's key
   names and the names of the placeholders that begin a path (the rest of a path is compared by its
   placeholders). Two of them run once per node of the tree (every clause, action, path and value is an
   `UpdateExpression`), each walking the node's subtree again. The patch runs them the first time a (text, names
   of the path heads, table keys) triple is validated, and skips them once it has passed (one that fails is
   checked, and refused, every time). Keyed by every name at first, it never skipped a pacing update: each
   names its leases by fresh ids, which sit inside paths (`leases.#l0`) the checks never resolve.
14. A Query of an index sorts by plain values. Upstream sorts its candidates by tuples of `DynamoType`, whose
   comparisons go through Python methods that recompute each value (`cast_value`) per comparison: most of a
   Query of the sparse `pending` index at a few thousand pending URLs. The patch sorts by the same values,
   computed once per item (`DynamoType.cast_value`: the string, or the number as a `Decimal`); an item
   without a sort attribute, or values of mixed types, go through upstream (which raises as before).
15. A Query of a table's partition reads one page, not every page before it. For each page upstream sorts the
   partition's items, walks every page before the one asked (comparing `DynamoType`s to find the start key),
   and deep-copies every item the page examined before its filter drops most of them: reading the pending
   URLs of a 20,000-URL crawl (five 1 MB pages, a filter keeping a few) took 6.5-9 s, and a page more for each
   4,000 URLs. The patch answers a forward query of a base table whose keys are strings, with no key condition
   on the sort key or `begins_with`, no legacy `QueryFilter`: the partition's items in sort-key order from
   after the start key (a bisection), the same limits (`Limit` counted before the filter, 1 MB by upstream's
   item size, the last examined item as `LastEvaluatedKey`), the filter applied to the stored items, and only
   the items it keeps copied and projected. Anything else goes through upstream (patch 9). The sort-key order
   is kept per partition while its keys stay the same (it was sorted again for every page: 34 sorts of
   100,000 keys for a 100,000-URL crawl's pending read in its 17 key ranges).
16. A condition's syntax tree kept per text, names and value names. Beyond the lexer (patch 10), upstream
   resolves paths, functions, comparators and brackets on every parse: a tenth of the emulator's CPU in a
   crawl (a claim transaction parses its condition once per URL, up to 100 times a call). The patch keeps the
   tree those stages build, keyed by what they read (the text, the names, which value names exist), and builds
   the operator tree from it on each call with that call's values, bound by name as upstream binds them.
17. DynamoDB's attribute values parsed directly. Upstream's request parser walks the botocore shape of every
   attribute value of every item in a request (a handler looked up per member, per nested value): with a
   100-item claim transaction, about a tenth of the emulator's CPU. The patch converts an `AttributeValue` the
   way that walk does (members in the shape's order, nulls dropped, binary decoded) in one function.
18. The update validator's walks look node types up once. Upstream's `DepthFirstTraverser` rebuilds its
   processor's map of node types (a dict, then a tuple) and runs two `isinstance` checks against abstract
   classes for every node of every walk, and calls the per-child hook its processors almost never override:
   with seven walks of a 60-node pacing update, most of an UpdateItem's CPU. The patch walks the same nodes in
   the same order and processes the same ones, deciding both checks once per (processor class, node class);
   the processors' maps are keyed by classes only (checked by a test), so the answer cannot change.
19. Reserved keywords looked up in a set. Upstream keeps DynamoDB's ~570 reserved words in a list and searches
   it for every attribute name an expression resolves (`name.upper() in list`): 8 us a name, a dozen names an
   update. The list is replaced by a list that answers `in` from a set of the same words.
20. Duplicate keys found with a set. Upstream checks a BatchGetItem's keys (and a BatchWriteItem's) for
   duplicates by searching a growing list for each, comparing dicts: 5,000 comparisons for the crawl's
   100-key existence checks. The patch compares exact hashable stand-ins (strings, bytes, dicts of them) in a
   set; anything else goes through upstream. Patch 11 also builds its projected item without upstream's
   constructor, which re-measured the whole item for each attribute it added.
21. A queue's pending message groups read from a snapshot. Upstream's `Queue.pending_message_groups` iterates
   the set of in-flight messages while other server threads add to it (a receive) or take from it (a delete):
   a ReceiveMessage then failed with "Set changed size during iteration", a 500 the SDK retried and gunicorn
   printed as a traceback on the user's console (seen in a 20,000-page crawl). The patch copies the set
   first (one C call under the GIL, no Python code in between) and answers the same groups.
22. A long poll wakes when a message becomes visible. Upstream's `Queue.wait_for_messages` waits on the queue's
   condition, which only a send notifies: a message whose delay (or visibility timeout) ends during a long
   poll is not returned by that poll but by the next receive, up to a poll's wait later (SQS returns it to the
   waiting poll). The event source mapping polls with a 1 s wait, so a paced URL re-sent with a delay came back
   up to a second after its slot, which went unused (a CI failure of the Crawl-delay utilisation proof,
   2026-12-03). The patch waits at most until the first such message is due, then the receive scans again.
23. A receive scans its queue alone. Upstream's `SQSBackend.receive_message` scans the visible messages, marks the
   ones it returns received and moves the ones past the redrive policy's `maxReceiveCount` to the dead-letter
   queue, with no lock: two receives scanning at once both chose the same spent message, and the second's
   `list.remove` raised `ValueError` (a 500) after it had already marked its other messages received, so they
   came back a visibility timeout later with one receive more on their count, nearer the dead-letter queue
   themselves (seen in a 20,000-page crawl whose every URL ended there). The patch runs each scan (upstream with
   no wait) holding the queue's `_messages_lock`, which sends and deletes already take, and waits between scans
   outside it, as upstream's long poll does (patch 22 decides how long).
24. A receive stops scanning at its last message, and draws receipt handles at once. Upstream listed every
   visible message of the queue before taking the first ten, and drew each handle's 185 letters one `choice`
   at a time (45 us a message). A crawl's queue holds most of the URLs it has found and not fetched yet:
   1.5 ms a ReceiveMessage(10) at a depth of 10,000, 0.65 ms patched (the backend called in-process;
   `benchmarks/bench_emulator_ops.py` measures the server's CPU a call).
25. A delete finds its messages by receipt handle. Each receive notes the handles it gives out on its queue;
   a delete looks them up and rebinds the list without those messages (a C-level copy) where patch 5 passed
   over every message in Python: 0.74 -> 0.05 ms a DeleteMessageBatch(10) at a depth of 10,000 (in-process).
   A handle no receive of the queue gave out goes through patch 5's pass, so its answer is upstream's.
26. An item is measured once as it is built. Upstream's `Item.__init__` adds its attributes one by one to a
   `LimitedSizeDict`, whose `__setitem__` measures every attribute already there (the 400 KB item limit):
   a 10-attribute URL item measured 55 values. That was half the emulator's CPU per claimed URL (0.39 ms of
   a TransactWriteItems item), and claims are most of its work while a crawl discovers its site. The patch
   keeps a running total and raises `ItemSizeTooLarge` at the attribute where upstream's sum crosses the
   limit (the sum only grows, so that is the same attribute); later writes to the item go through upstream.
27. A PartiQL batch of single-item writes runs as DynamoDB's own writes (`infra/local/moto_partiql.py`).
   Upstream hands every statement a JSON copy of every item of every table: a 25-statement batch against a
   20,000-URL table copied 500,000 items. The crawler's claims and fetch leases go as such batches (a write
   unit an item where a transaction bills two). INSERT and UPDATE of one item by its key, with comparison
   conditions, run through moto's `put_item` / `update_item`; any other batch goes through upstream.
"""

from __future__ import annotations

import base64
import bisect
import copy
import functools
import inspect
import json
import logging
import threading
from collections import deque
from collections.abc import Callable
from importlib import metadata
from typing import Any

__all__ = ["PINNED_MOTO_VERSION", "applied", "apply", "moto_version"]

PINNED_MOTO_VERSION = "5.2.5"

_log = logging.getLogger(__name__)
_applied = False
_apply_lock = threading.Lock()
_light = threading.local()
_COUNTERS = frozenset(
    {
        "ApproximateNumberOfMessages",
        "ApproximateNumberOfMessagesNotVisible",
        "ApproximateNumberOfMessagesDelayed",
    }
)
DYNAMODB_LOCK = threading.RLock()

ITEM_SIZE_LIMIT = 405_000
"""moto's own bound for an item's bytes (`LimitedSizeDict`, between DynamoDB's 400 KB and what it accepts)."""
UPSTREAM: dict[str, Callable[..., Any]] = {}
"""Upstream functions a patch replaces whole, kept as `apply()` found them: the tests compare the two."""


def moto_version() -> str:
    """The installed moto's version, read without importing moto (the CLI checks it before its imports)."""
    return metadata.version("moto")


def applied() -> bool:
    return _applied


def _queue_attributes(queue: Any) -> dict[str, Any]:
    """`moto.sqs.models.Queue.attributes` (5.2.5) with the O(depth) counters skipped in light mode."""
    skip = _COUNTERS if getattr(_light, "on", False) else frozenset()
    result: dict[str, Any] = {}
    for attribute in queue.BASE_ATTRIBUTES:
        if attribute in skip:
            continue
        result[attribute] = getattr(queue, _snake_name(attribute))
    if queue.fifo_queue:
        for attribute in queue.FIFO_ATTRIBUTES:
            result[attribute] = getattr(queue, _snake_name(attribute))
    if queue.kms_master_key_id:
        for attribute in queue.KMS_ATTRIBUTES:
            result[attribute] = getattr(queue, _snake_name(attribute))
    if queue.policy:
        result["Policy"] = queue.policy
    if queue.redrive_policy:
        import json

        result["RedrivePolicy"] = json.dumps(queue.redrive_policy)
    for key in result:
        if isinstance(result[key], bool):
            result[key] = str(result[key]).lower()
    return result


@functools.lru_cache(maxsize=256)
def _snake_name(name: str) -> str:
    """moto's `camelcase_to_underscores`, once per attribute name (a receive asks for every attribute)."""
    from moto.core.utils import camelcase_to_underscores as convert

    return str(convert(name))


def _light_mode(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        previous = getattr(_light, "on", False)
        _light.on = True
        try:
            return method(*args, **kwargs)
        finally:
            _light.on = previous

    return wrapper


def _serialised(method: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(method)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with DYNAMODB_LOCK:
            return method(*args, **kwargs)

    return wrapper


class _CopyPassing:
    """Stands for the `copy` module inside a moto module: a deep copy of a `passing` instance is the object
    itself, anything else is copied as before. Patch 3: a transaction's whole-table backup becomes the live table
    (a no-op rollback; `_transact_item_backups` restores what it must). Patch 12: an UpdateItem's copies of the
    item (read only by a stream record in the backend, and only through `to_json()` before the update in the
    request handler) are the item itself."""

    def __init__(self, real: Any, passing: type) -> None:
        self._real = real
        self._passing = passing

    def deepcopy(self, value: Any, *args: Any) -> Any:
        return value if isinstance(value, self._passing) else self._real.deepcopy(value, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._real, name)


def _transact_item_backups(method: Callable[..., Any]) -> Callable[..., Any]:
    from moto.dynamodb import models
    from moto.dynamodb.exceptions import (
        MockValidationException,
        MultipleTransactionsException,
        TransactionCanceledException,
    )
    from moto.dynamodb.models.table import Table

    @functools.wraps(method)
    def wrapper(self: Any, transact_items: list[dict[str, Any]]) -> Any:
        backups: list[tuple[str, dict[str, Any], dict[str, Any] | None]] = []
        for entry in transact_items:
            try:
                _, op = next(iter(entry.items()))
                table = self.get_table(op["TableName"])
                if "Key" in op:
                    key = op["Key"]
                else:
                    names = [table.hash_key_attr] + ([table.range_key_attr] if table.range_key_attr else [])
                    key = {n: op["Item"][n] for n in names}
                current = self.get_item(op["TableName"], key)
            except Exception:  # a malformed entry: upstream raises the proper error before writing
                continue
            before = None if current is None else copy.deepcopy(current.to_json()["Attributes"])
            backups.append((op["TableName"], key, before))
        models.copy = _CopyPassing(copy, Table)  # type: ignore[assignment,attr-defined]
        try:
            return method(self, transact_items)
        except (TransactionCanceledException, MultipleTransactionsException, MockValidationException):
            for table_name, key, before in reversed(backups):
                if before is None:
                    if self.get_item(table_name, key) is not None:
                        self.delete_item(table_name, key)
                else:
                    self.put_item(table_name, before)
            raise
        finally:
            models.copy = copy  # type: ignore[attr-defined]

    return wrapper


def _receipts_of(queue: Any) -> dict[str | None, Any]:
    """The messages of `queue` by each receipt handle its receives gave out (patch 25), kept on the queue."""
    receipts: dict[str | None, Any] | None = queue.__dict__.get("_seolens_receipts")
    if receipts is None:
        receipts = queue.__dict__.setdefault("_seolens_receipts", {})
    return receipts


def _forget(receipts: dict[str | None, Any], message: Any) -> None:
    for handle in message.all_receipt_handles:
        receipts.pop(handle, None)


def _delete_handles(queue: Any, handles: set[str]) -> set[str]:
    """Delete every message of `queue` that ever had one of `handles`, under `_messages_lock` (the lock
    `add_message` appends under); returns the handles that are deleted now (patches 4, 5 and 25).

    Messages are found by their handles (patch 25) and the list is rebound without them, as upstream rebinds
    it: a delete cost a Python pass over the whole queue (0.74 ms a batch of ten at a depth of 10,000, each
    page's delete scanning what the crawl had queued). A handle no receive of this queue gave out (a message
    moved here from another queue, or a wrong handle) is looked for by that pass, as before."""
    with queue._messages_lock:
        pending = handles - queue.deleted_messages
        if pending:
            receipts = _receipts_of(queue)
            found = {receipts.get(handle) for handle in pending}
            if None in found:
                _delete_by_scan(queue, pending, receipts)
            else:
                _delete_found(queue, found, receipts)
        deleted: set[str] = handles & queue.deleted_messages
        return deleted


def _purge_forgetting_receipts(method: Callable[..., Any]) -> Callable[..., Any]:
    """`moto.sqs.models.SQSBackend.purge_queue` (5.2.5), which also drops the queue's noted receipt handles
    (patch 25): a purged message's handle is refused, as upstream, and the message is not kept for it."""

    @functools.wraps(method)
    def wrapper(self: Any, queue_name: str) -> None:
        method(self, queue_name)
        queue = self.get_queue(queue_name)
        with queue._messages_lock:
            _receipts_of(queue).clear()

    return wrapper


def _mark_deleted(queue: Any, message: Any) -> None:
    """`message`, taken out of `queue`'s list, is no longer in flight and every handle it had is deleted."""
    queue.pending_messages.discard(message)
    queue.deleted_messages.update(message.all_receipt_handles)


def _delete_by_scan(queue: Any, pending: set[str], receipts: dict[str | None, Any]) -> None:
    kept = []
    for message in queue._messages:
        if message.receipt_handle in pending or not pending.isdisjoint(message._old_receipt_handles):
            _mark_deleted(queue, message)
            _forget(receipts, message)
            continue
        kept.append(message)
    queue._messages = kept


def _delete_found(queue: Any, found: set[Any], receipts: dict[str | None, Any]) -> None:
    kept = queue._messages.copy()
    positions = []
    for message in found:
        _forget(receipts, message)
        try:
            positions.append(kept.index(message))  # by identity: moto's Message has no __eq__
        except ValueError:
            continue  # no longer in this queue (gone to the dead-letter queue by another path): not deleted
        _mark_deleted(queue, message)
    for position in sorted(positions, reverse=True):
        del kept[position]
    queue._messages = kept


def _delete_message_locked(self: Any, receipt_handle: str) -> None:
    """`moto.sqs.models.Queue.delete_message` (5.2.5), under `_messages_lock` (patch 4); deleting a deleted
    message again is a no-op, as upstream."""
    from moto.sqs.exceptions import ReceiptHandleIsInvalid

    if receipt_handle not in _delete_handles(self, {receipt_handle}):
        raise ReceiptHandleIsInvalid()


def _delete_message_batch_one_pass(
    self: Any, queue_name: str, receipts: list[dict[str, Any]]
) -> tuple[list[str], list[dict[str, str]]]:
    """`moto.sqs.models.SQSBackend.delete_message_batch` (5.2.5), one scan of the queue for the batch (patch 5)."""
    deleted = _delete_handles(self.get_queue(queue_name), {r["ReceiptHandle"] for r in receipts})
    success = [r["Id"] for r in receipts if r["ReceiptHandle"] in deleted]
    errors = [
        {
            "Id": r["Id"],
            "SenderFault": True,
            "Code": "ReceiptHandleIsInvalid",
            "Message": f'The input receipt handle "{r["ReceiptHandle"]}" is not a valid receipt handle.',
        }
        for r in receipts
        if r["ReceiptHandle"] not in deleted
    ]
    return success, errors


def _pending_groups_of_a_snapshot(self: Any) -> set[str]:
    """`moto.sqs.models.Queue.pending_message_groups` (5.2.5) over a copy of the in-flight set (patch 21)."""
    return {message.group_id for message in list(self._pending_messages) if message.group_id is not None}


def _wait_until_due(self: Any, timeout: float) -> None:
    """`moto.sqs.models.Queue.wait_for_messages` (5.2.5), waking also when the first delayed or in-flight message
    becomes visible (patch 22); upstream's condition is notified by sends only."""
    from moto.core.utils import unix_time_millis

    with self._messages_lock:
        now = unix_time_millis()
        # Visible once `now > visible_at` and `now >= delayed_until` (patch 6): due a millisecond after the later.
        due = min((max(m.visible_at + 1, m.delayed_until) for m in self._messages), default=None)
        wait = timeout if due is None else min(timeout, max(0.0, (due - now) / 1000))
        self._messages_lock.wait_for(lambda: self.messages, timeout=wait)


def _receive_one_scan_at_a_time(scan: Callable[..., list[Any]]) -> Callable[..., list[Any]]:
    """`moto.sqs.models.SQSBackend.receive_message` (5.2.5) whose scans hold the queue's lock (patch 23)."""
    from moto.core.utils import unix_time

    def receive_message(
        self: Any,
        queue_name: str,
        count: int,
        wait_seconds_timeout: int,
        visibility_timeout: int,
        message_attribute_names: list[str] | None = None,
    ) -> list[Any]:
        queue = self.get_queue(queue_name)
        polling_end = unix_time() + wait_seconds_timeout
        while True:
            with queue._messages_lock:
                result = scan(self, queue_name, count, visibility_timeout, message_attribute_names)
            if result or not wait_seconds_timeout or unix_time() > polling_end:
                return result
            queue.wait_for_messages(1)

    return receive_message


def _receive_scan(
    self: Any,
    queue_name: str,
    count: int,
    visibility_timeout: int,
    message_attribute_names: list[str] | None,
) -> list[Any]:
    """One scan of `moto.sqs.models.SQSBackend.receive_message` (5.2.5; the wait around it is patch 23's),
    which stops at the `count`th message it returns (patch 24) and notes each receipt handle it gives out
    (patch 25). Upstream listed every visible message of the queue before taking the first ten: 1.5 ms a
    receive at a depth of 10,000, a crawl's queue holding most of the URLs it has found but not fetched."""
    from moto.core.utils import unix_time_millis
    from moto.sqs.models import _filter_message_attributes

    names = message_attribute_names or []
    queue = self.get_queue(queue_name)
    receipts = _receipts_of(queue)
    result: list[Any] = []
    pending_groups = copy.deepcopy(queue.pending_message_groups)
    to_dead_letters: list[Any] = []
    now = unix_time_millis()  # patch 6's visibility test, message by message
    for message in queue._messages:
        if not now > message.visible_at or now < message.delayed_until:
            continue
        if message in queue.pending_messages:  # in flight before and visible again: its consumer timed out
            queue.pending_messages.remove(message)
            pending_groups = copy.deepcopy(queue.pending_message_groups)
        if message.group_id and queue.fifo_queue and message.group_id in pending_groups:
            continue
        if (
            queue.dead_letter_queue is not None
            and queue.redrive_policy
            and message.approximate_receive_count >= queue.redrive_policy["maxReceiveCount"]
        ):
            to_dead_letters.append(message)
            continue
        queue.pending_messages.add(message)
        message.mark_received(visibility_timeout=visibility_timeout)
        receipts[message.receipt_handle] = message
        answer = copy.deepcopy(message)  # the attribute filter below must not change the stored message
        _filter_message_attributes(answer, names)
        if not self.is_message_valid_based_on_retention_period(queue_name, message):
            break
        result.append(answer)
        if len(result) >= count:
            break
    for message in to_dead_letters:
        _forget(receipts, message)
        queue._messages.remove(message)
        queue.dead_letter_queue.add_message(message)
    return result


RECEIPT_HANDLE_LENGTH = 185
_HANDLE_LETTERS = bytes.maketrans(
    bytes(range(256)), bytes(ord("abcdefghijklmnopqrstuvwxyz"[i % 26]) for i in range(256))
)


def _receipt_handle() -> str:
    """`moto.sqs.utils.generate_receipt_handle` (5.2.5): 185 lowercase letters from moto's seedable random,
    drawn at once (patch 24); upstream drew them one `choice` at a time, 45 us a received message."""
    from moto.moto_api._internal import mock_random

    drawn = mock_random.getrandbits(8 * RECEIPT_HANDLE_LENGTH).to_bytes(RECEIPT_HANDLE_LENGTH, "little")
    return drawn.translate(_HANDLE_LETTERS).decode("ascii")


def _visible_messages(self: Any) -> list[Any]:
    """`moto.sqs.models.Queue.messages` (5.2.5) with one clock read (patch 6)."""
    from moto.core.utils import unix_time_millis

    now = unix_time_millis()
    return [m for m in self._messages if now > m.visible_at and not now < m.delayed_until]


def _memoised_backend_lookup(method: Callable[..., Any]) -> Callable[..., Any]:
    """`DomainDispatcherApplication.get_backend_for_host` (5.2.5), memoised per host (patch 7): the answer
    depends on the host string only (moto's module list and URL patterns are fixed once imported)."""
    cache: dict[str | None, Any] = {}

    @functools.wraps(method)
    def wrapper(self: Any, host: str | None) -> Any:
        try:
            return cache[host]
        except KeyError:
            found = method(self, host)
            if len(cache) < 4096:
                cache[host] = found
            return found

    return wrapper


FAST_JSON_OPERATIONS = frozenset(
    {
        "GetItem",
        "PutItem",
        "UpdateItem",
        "DeleteItem",
        "BatchGetItem",
        "BatchWriteItem",
        "TransactGetItems",
        "TransactWriteItems",
        "Query",
        "Scan",
        "BatchExecuteStatement",
    }
)


class _UnexpectedValue(TypeError):
    """A result holds a value the fast path does not know how to write: use upstream's serialiser."""


def _json_default(value: Any) -> Any:
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    raise _UnexpectedValue(type(value).__name__)


def _fast_json_body(result: Any) -> str:
    return json.dumps(result, default=_json_default)


def _fast_json_result(method: Callable[..., Any]) -> Callable[..., Any]:
    """`moto.dynamodb.responses.DynamoResult.execute_result` (patch 8): item operations as plain JSON."""

    @functools.wraps(method)
    def wrapper(self: Any, context: Any) -> Any:
        result = self.result
        if (
            isinstance(result, dict)
            and str(context.operation_model.name) in FAST_JSON_OPERATIONS
            and str(context.service_model.service_name) == "dynamodb"
        ):
            try:
                body = _fast_json_body(result)
            except _UnexpectedValue:
                return method(self, context)
            content_type = "application/x-amz-json-" + context.service_model.metadata.get(
                "jsonVersion", "1.0"
            )
            return 200, {"Content-Type": content_type}, body
        return method(self, context)

    return wrapper


def fast_json_equivalent(operation: str, result: dict[str, Any]) -> tuple[Any, Any]:
    """(fast path's body, upstream serialiser's body) for a DynamoDB `operation` result, both parsed."""
    from moto.core.responses import ActionContext, ActionResult
    from moto.core.serialize import get_serializer_class
    from moto.core.utils import get_service_model
    from moto.dynamodb.models.utilities import dynamo_to_dict

    service_model = get_service_model("dynamodb")
    context = ActionContext(
        service_model,
        service_model.operation_model(operation),
        get_serializer_class("dynamodb", "json"),
        None,  # type: ignore[arg-type]
    )
    plain = dynamo_to_dict(result)
    _, _, upstream = ActionResult(plain).execute_result(context)
    return json.loads(_fast_json_body(plain)), json.loads(upstream)


def _partition_query(method: Callable[..., Any]) -> Callable[..., Any]:
    """`moto.dynamodb.models.table.Table.query` (5.2.5) over the partition's items only (patch 9)."""

    signature = inspect.signature(method)

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        given = signature.bind(self, *args, **kwargs).arguments
        if given.get("index_name"):
            conditions = list(given.get("hash_key_conditions") or ())
        else:
            hash_key = given.get("hash_key")
            conditions = [(self.hash_key_attr, hash_key)] if hash_key is not None else []
        wanted = [(name, value.value) for name, value in conditions if getattr(value, "type", None) == "S"]
        if not conditions or len(wanted) != len(conditions):
            return method(self, *args, **kwargs)
        # Under the backend's lock (re-entrant: the server already holds it): the items are read, and upstream's
        # only source of candidates in `query` is replaced, without another thread in this table.
        with DYNAMODB_LOCK:
            rows = (
                (item for partition in self.items.values() for item in partition.values())
                if self.range_key_attr
                else iter(self.items.values())
            )
            candidates = []
            for item in rows:
                for name, value in wanted:
                    attr = item.attrs.get(name)
                    if attr is None or attr.type != "S" or attr.value != value:
                        break
                else:
                    candidates.append(item)
            self.all_items = lambda: candidates
            try:
                return method(self, *args, **kwargs)
            finally:
                self.__dict__.pop("all_items", None)

    return wrapper


def _key_order(table: Any, hash_value: str, partition: dict[Any, Any]) -> tuple[list[Any], list[str]] | None:
    """A partition's sort keys (moto's key objects, and their strings) in order; None when one is not a
    string. Kept per partition while its keys are the same objects (patch 15): every page sorted the whole
    partition again, 34 sorts of 100,000 keys for a 100,000-URL crawl's pending read. The kept key objects stay alive,
    so no new key can take one's `id`: the same set of ids is the same set of keys."""
    ids = {id(key) for key in partition}
    kept: dict[str, tuple[set[int], list[Any], list[str]]] = table.__dict__.setdefault(
        "_seolens_key_order", {}
    )
    order = kept.get(hash_value)
    if order is None or order[0] != ids:
        ranges = [key for key in partition if getattr(key, "type", None) == "S"]
        if len(ranges) != len(partition):
            kept.pop(hash_value, None)
            return None
        ranges.sort(key=lambda key: key.value)
        order = (ids, ranges, [key.value for key in ranges])
        kept[hash_value] = order
    return order[1], order[2]


def item_size(item: Any) -> int:
    """`moto.dynamodb.models.dynamo_type.Item.size` (5.2.5), with string and number attributes sized inline
    (upstream's method dispatch per value is most of a page's cost); other types through `DynamoType.size`."""
    total = 0
    for name, value in item.attrs.items():
        total += len(name) if name.isascii() else len(name.encode("utf-8"))
        kind = value.type
        if kind == "S" and isinstance(value.value, str):
            text = value.value
            total += len(text) if text.isascii() else len(text.encode("utf-8"))
        elif kind == "N":
            total += len(str(value.value))
        else:
            total += value.size()
    return total


def _partition_pages(method: Callable[..., Any]) -> Callable[..., Any]:
    """`moto.dynamodb.models.table.Table.query` (5.2.5) of one page of a base table's partition (patch 15)."""
    from moto.dynamodb.models.table import RESULT_SIZE_LIMIT

    signature = inspect.signature(method)

    @functools.wraps(method)
    def wrapper(self: Any, *args: Any, **kwargs: Any) -> Any:
        given = signature.bind(self, *args, **kwargs).arguments
        hash_key: Any = given.get("hash_key")
        comparison = given.get("range_comparison")
        prefixes = given.get("range_objs") or []
        start = given.get("exclusive_start_key")
        if (
            given.get("index_name")
            or given.get("filter_kwargs")
            or given.get("scan_index_forward") is False
            or self.range_key_attr is None
            or getattr(hash_key, "type", None) != "S"
            or comparison not in (None, "BEGINS_WITH")
            or (comparison and (len(prefixes) != 1 or prefixes[0].type != "S"))
            or (start is not None and not isinstance(start.get(self.range_key_attr, {}).get("S"), str))
        ):
            return method(self, *args, **kwargs)
        with DYNAMODB_LOCK:
            partition = self.items.get(hash_key) or {}
            order = _key_order(self, hash_key.value, partition)
            if order is None:
                return method(self, *args, **kwargs)
            ranges, keys = order
            prefix = prefixes[0].value if comparison else ""
            first = bisect.bisect_left(keys, prefix)
            if start is not None:
                first = max(first, bisect.bisect_right(keys, start[self.range_key_attr]["S"]))
            limit = given.get("limit")
            examined: list[Any] = []
            size = 0
            last_key = None
            for at in range(first, len(keys)):
                if not keys[at].startswith(prefix):
                    break
                item = partition[ranges[at]]
                weight = item_size(item)
                if len(examined) == limit or size + weight > RESULT_SIZE_LIMIT:
                    last_key = self._get_last_evaluated_key(examined[-1], None)
                    break
                examined.append(item)
                size += weight
            where = given.get("filter_expression")
            kept = [item for item in examined if where is None or where.expr(item)]
            results = copy.deepcopy(kept)
        paths = given.get("projection_expressions")
        if paths:
            results = [r.project(paths) for r in results]
        return results, len(examined), last_key

    return wrapper


EXPRESSION_CACHE_SIZE = 4096
"""Texts kept per parse cache (patch 10): a crawl uses a few dozen, with a lease count in some of them."""


def _memoised_lexer(lex: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """`ConditionExpressionParser._lex_condition_expression` (5.2.5) once per text (patch 10). It reads only
    the text; its tokens are namedtuples of strings (an empty `children` list no later stage mutates: they
    build new nodes), so one tuple of them serves every parse of the text; each parse gets its own deque
    (the stages consume it)."""

    from moto.dynamodb.comparisons import ConditionExpressionParser

    @functools.lru_cache(maxsize=EXPRESSION_CACHE_SIZE)
    def tokens(text: str) -> tuple[Any, ...]:
        return tuple(lex(ConditionExpressionParser(text, None, None)))

    @functools.wraps(lex)
    def wrapper(self: Any) -> Any:
        return deque(tokens(self.condition_expression))

    return wrapper


def _memoised_condition_parse(parse: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """`ConditionExpressionParser.parse` (5.2.5) with the syntax tree kept per text, names and value names
    (patch 16). Every stage before `_make_op_condition` reads only those (values are looked up by name, and
    a missing one raises before anything is kept); the operator tree is built anew on each call, with this
    call's values bound by name (`_operand_bound_by_name`). A text that does not parse raises every time."""

    from moto.dynamodb.comparisons import ConditionExpressionParser

    kept: dict[tuple[Any, ...], tuple[Any, tuple[str, ...], tuple[str, ...]]] = {}

    def structure(self: Any) -> Any:
        nodes = self._lex_condition_expression()
        nodes = self._parse_paths(nodes)
        nodes = self._apply_functions(nodes)
        nodes = self._apply_comparator(nodes)
        nodes = self._apply_in(nodes)
        nodes = self._apply_between(nodes)
        nodes = self._apply_parens_and_booleans(nodes)
        node = nodes[0]
        self._assert_no_redundant_parentheses(node)
        return node, tuple(self._find_literals(node)), tuple(self._find_expr_attr_values(node))

    @functools.wraps(parse)
    def fast(self: Any) -> Any:
        if not self.condition_expression or type(self) is not ConditionExpressionParser:
            return parse(self)
        key = (
            self.condition_expression,
            frozenset((self.expression_attribute_names or {}).items()),
            frozenset(self.expression_attribute_values or ()),
        )
        entry = kept.get(key)
        if entry is None:
            entry = structure(self)
            if len(kept) >= EXPRESSION_CACHE_SIZE:
                kept.clear()
            kept[key] = entry
        node, names_found, values_found = entry
        self.expr_attr_names_found.extend(names_found)
        self.expr_attr_values_found.extend(values_found)
        return self._make_op_condition(node)

    return fast


def _operand_bound_by_name(make_operand: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """`ConditionExpressionParser._make_operand` (5.2.5) binding a value operand from the parser's own values
    by its name (patch 16): upstream reads the value the node was built with, looked up by the same name,
    so a tree kept from another call with other values gets this call's."""

    from moto.dynamodb.comparisons import AttributeValue

    @functools.wraps(make_operand)
    def bound(self: Any, node: Any) -> Any:
        if node.kind == self.Kind.EXPRESSION_ATTRIBUTE_VALUE:
            return AttributeValue(self._lookup_expression_attribute_value(node.text))
        return make_operand(self, node)

    return bound


def _attribute_values_parsed_directly(parser: Any) -> None:
    """`moto.core.parse.BaseJSONParser._parse_structure` and `_parse_map` (5.2.5) for DynamoDB's
    `AttributeValue` and maps of them without the generic walk (patch 17): upstream looks up a handler per
    member and per nested value, about a tenth of the emulator's CPU in a crawl (a claim transaction carries
    100 items). Same result: members in the shape's order, null members dropped, binary values decoded by the
    parser's blob parser, lists and maps new; anything that is not a JSON object goes through upstream."""

    parse_structure = parser._parse_structure
    parse_map = parser._parse_map

    @functools.wraps(parse_structure)
    def structure(self: Any, shape: Any, value: Any) -> Any:
        if shape.name != "AttributeValue" or type(value) is not dict:
            return parse_structure(self, shape, value)
        return _attribute_value(value, self._blob_parser, self.MAP_TYPE)

    @functools.wraps(parse_map)
    def mapping(self: Any, shape: Any, value: Any) -> Any:
        member = shape.value
        if member.name != "AttributeValue" or shape.key.type_name != "string" or type(value) is not dict:
            return parse_map(self, shape, value)
        out = self.MAP_TYPE()
        for key, item in value.items():
            if item is None or type(item) is dict:
                out[key] = _attribute_value(item, self._blob_parser, self.MAP_TYPE)
            else:
                out[key] = parse_structure(self, member, item)
        return out

    parser._parse_structure = structure
    parser._parse_map = mapping


def _identity(raw: Any, blob: Callable[[Any], Any], map_type: Callable[[], Any]) -> Any:
    return raw


def _attribute_map(raw: Any, blob: Callable[[Any], Any], map_type: Callable[[], Any]) -> Any:
    out = map_type()
    for key, item in raw.items():
        out[key] = _attribute_value(item, blob, map_type)
    return out


_ATTRIBUTE_VALUE_MEMBERS: dict[str, Callable[[Any, Callable[[Any], Any], Callable[[], Any]], Any]] = {
    "S": _identity,
    "N": _identity,
    "B": lambda raw, blob, _: blob(raw),
    "SS": lambda raw, _, __: list(raw),
    "NS": lambda raw, _, __: list(raw),
    "BS": lambda raw, blob, _: [blob(b) for b in raw],
    "M": _attribute_map,
    "L": lambda raw, blob, map_type: [_attribute_value(item, blob, map_type) for item in raw],
    "NULL": _identity,
    "BOOL": _identity,
}
"""The members of DynamoDB's `AttributeValue` shape in the shape's order (upstream's), each with what
upstream's walk makes of its JSON value."""


def _attribute_value(value: Any, blob: Callable[[Any], Any], map_type: Callable[[], Any]) -> Any:
    if value is None:
        return None
    out = map_type()
    if len(value) == 1:
        ((name, raw),) = value.items()
        convert = _ATTRIBUTE_VALUE_MEMBERS.get(name)
        if convert is not None and raw is not None:
            out[name] = convert(raw, blob, map_type)
        return out
    for name, convert in _ATTRIBUTE_VALUE_MEMBERS.items():
        raw = value.get(name)
        if raw is not None:
            out[name] = convert(raw, blob, map_type)
    return out


def _memoised_update_parser(make: Callable[[Any, str], Any]) -> Any:
    """`UpdateExpressionParser.make` (5.2.5) once per text (patch 10). Upstream's consumers only read the
    tree (`find_clauses`) or deep-copy it first (`UpdateExpressionValidator`); a text that does not parse
    raises every time (exceptions are not cached)."""

    @functools.lru_cache(maxsize=EXPRESSION_CACHE_SIZE)
    def parsed(cls: Any, expression: str) -> Any:
        tree = make(cls, expression)
        tree.seolens_text = expression  # the text patch 13 keys its checked pairs by
        return tree

    def once(cls: Any, expression: str) -> Any:
        return parsed(cls, expression)

    return classmethod(once)


def _project_top_level(project: Callable[[Any, list[list[str]]], Any]) -> Callable[..., Any]:
    """`moto.dynamodb.models.dynamo_type.Item.project` (5.2.5) for top-level names without the round trip
    through Python values (patch 11). Same attributes and values; a set keeps its stored order (upstream's
    round trip through a Python set may reorder it; DynamoDB promises no order)."""
    from moto.dynamodb.models.dynamo_type import DynamoType, LimitedSizeDict

    @functools.wraps(project)
    def wrapper(self: Any, projection_expressions: list[list[str]]) -> Any:
        if not all(len(path) == 1 and "[" not in path[0] for path in projection_expressions):
            return project(self, projection_expressions)
        # Not through upstream's constructor: it re-measures the whole item for each attribute it adds.
        projected = object.__new__(type(self))
        projected.hash_key, projected.range_key = self.hash_key, self.range_key
        projected.attrs = attrs = LimitedSizeDict.__new__(LimitedSizeDict)
        dict.__init__(attrs)
        for path in projection_expressions:
            if path[0] in self.attrs:  # a part of an item that passed the size check passes it
                dict.__setitem__(attrs, path[0], DynamoType(self.attrs[path[0]]))
        return projected

    return wrapper


def _item_measured_once(self: Any, hash_key: Any, range_key: Any, attrs: dict[str, Any]) -> None:
    """`moto.dynamodb.models.dynamo_type.Item.__init__` (5.2.5) with one running size total (patch 26): the same
    DynamoTypes in the same order, the same `ItemSizeTooLarge` at the same attribute."""
    from moto.dynamodb.exceptions import ItemSizeTooLarge
    from moto.dynamodb.models.dynamo_type import DynamoType, LimitedSizeDict
    from moto.dynamodb.models.utilities import bytesize

    self.hash_key = hash_key
    self.range_key = range_key
    self.attrs = typed = LimitedSizeDict.__new__(LimitedSizeDict)
    dict.__init__(typed)
    total = 0
    for key, value in attrs.items():
        item = DynamoType(value)
        total += bytesize(key) + item.size()
        if total > ITEM_SIZE_LIMIT:
            raise ItemSizeTooLarge
        dict.__setitem__(typed, key, item)


def _copy_update_tree(deepcopy: Callable[..., Any]) -> Callable[..., Any]:
    """`deepcopy` as moto's validators module (5.2.5) calls it, with a root AST node copied node by node
    (patch 12). Anything else (a non-root node, whose deep copy would take its parents along; a DDBTypedValue
    of `list_append`) goes to the real `deepcopy`."""
    from moto.dynamodb.parsing.ast_nodes import DDBTypedValue, Node  # type: ignore[attr-defined]

    def tree(node: Any, parent: Any) -> Any:
        new = object.__new__(type(node))  # what copy.copy does for these plain classes, without __reduce_ex__
        new.__dict__.update(node.__dict__)
        new.parent = parent
        if node.children is not None:
            new.children = [tree(c, new) if isinstance(c, Node) else c for c in node.children]
        return new

    def fast(value: Any, *args: Any) -> Any:
        if (
            args
            or not isinstance(value, Node)
            or value.parent is not None
            or isinstance(value, DDBTypedValue)
        ):
            return deepcopy(value, *args)
        return tree(value, None)

    return fast


SYNTAX_CHECKED_MAX = 4096
"""(text, names, keys) triples patch 13 remembers as passed; beyond it, the memory starts over."""


def path_heads(tree: Any) -> tuple[Any, ...]:
    """What begins each path anywhere in an update expression's tree, a placeholder or a name: the only
    entries of the attribute names the syntax-only checks look up (the key check looks up each path's first
    element, the overlap check an action's path when it is one placeholder; longer paths are compared by
    their placeholders)."""
    from moto.dynamodb.parsing.ast_nodes import Node, UpdateExpressionPath  # type: ignore[attr-defined]

    heads = set()
    stack = [tree]
    while stack:
        node = stack.pop()
        if not isinstance(node, Node):
            continue
        if isinstance(node, UpdateExpressionPath):
            heads.add(node.children[0].children[0])  # as the key check reads it
        stack.extend(node.children or ())
    return tuple(sorted(heads, key=repr))


def _syntax_checked_once(validator: Any) -> None:
    """`UpdateExpressionValidator` (5.2.5) without its three syntax-only walks for a (text, names of its path
    heads, table keys) triple that passed them before (patch 13)."""
    from moto.dynamodb.parsing.validators import (
        ActionCountValidator,
        OverlappingPathsValidator,
        UpdateHashRangeKeyValidator,
    )

    syntax_only = (ActionCountValidator, OverlappingPathsValidator, UpdateHashRangeKeyValidator)
    passed: set[tuple[str, tuple[tuple[Any, str | None], ...], tuple[str, ...]]] = set()
    init, validate = validator.__init__, validator.validate

    @functools.wraps(init)
    def checked_init(self: Any, expression: Any, *args: Any, **kwargs: Any) -> None:
        init(self, expression, *args, **kwargs)
        text = getattr(expression, "seolens_text", None)
        if text is None:
            self.seolens_pair = None
            return
        heads = getattr(expression, "seolens_heads", None)
        if heads is None:
            heads = expression.seolens_heads = path_heads(expression)  # the kept tree: once per text
        names = self.expression_attribute_names or {}
        read = tuple((head, names.get(head)) for head in heads)
        keys = tuple(self.table.table_key_attrs)  # the key validator reads the table's key names too
        self.seolens_pair = (text, read, keys)
        if self.seolens_pair in passed:
            self.processors = [p for p in self.processors if not isinstance(p, syntax_only)]

    @functools.wraps(validate)
    def checked_validate(self: Any) -> Any:
        node = validate(self)
        if self.seolens_pair is not None:
            if len(passed) >= SYNTAX_CHECKED_MAX:
                passed.clear()
            passed.add(self.seolens_pair)
        return node

    validator.__init__ = checked_init
    validator.validate = checked_validate


def _traverse_by_type(traverser: Any) -> None:
    """`DepthFirstTraverser.traverse_node_recursively` (5.2.5) with its two type checks decided once per
    (processor class, node class) and the per-child hook called only where a processor overrides it
    (patch 18). Same nodes, same order, same processing, same re-linking."""
    from moto.dynamodb.parsing.ast_nodes import Node  # type: ignore[attr-defined]

    base_hook = traverser.pre_processing_of_child
    is_node: dict[type, bool] = {}
    processed: dict[tuple[type, type], bool] = {}
    hooked: dict[type, bool] = {}

    @functools.wraps(traverser.traverse_node_recursively)
    def walk(self: Any, node: Any, child_id: int = -1) -> Any:
        kind = type(node)
        known = is_node.get(kind)
        if known is None:
            known = is_node[kind] = isinstance(node, Node)
        if not known:
            return node
        processor = type(self)
        parent_node = node.parent
        if node.children is not None:
            hook = hooked.get(processor)
            if hook is None:
                hook = hooked[processor] = processor.pre_processing_of_child is not base_hook
            for i, child_node in enumerate(node.children):
                if hook:
                    self.pre_processing_of_child(node, i)
                walk(self, child_node, i)
        wanted = processed.get((processor, kind))
        if wanted is None:
            wanted = processed[processor, kind] = isinstance(node, self.nodes_to_be_processed())
        if wanted:
            node = self.process(node)
            node.parent = parent_node
            if parent_node:
                parent_node.children[child_id] = node
        return node

    traverser.traverse_node_recursively = walk


class _NotExactlyHashable(TypeError):
    """A key holds a value `_hashable` has no exact stand-in for."""


def _hashable(value: Any) -> Any:
    """A hashable stand-in equal to another's exactly when the values are equal (`==`): strings, bytes and
    dicts of them with string keys; anything else raises `_NotExactlyHashable`."""
    if isinstance(value, str):
        return ("s", value)
    if isinstance(value, bytes):
        return ("b", value)
    if isinstance(value, dict) and all(isinstance(k, str) for k in value):
        return ("d", frozenset((k, _hashable(v)) for k, v in value.items()))
    raise _NotExactlyHashable(type(value).__name__)


def _duplicates_by_set(method: Callable[[Any, list[Any]], bool]) -> Callable[[Any, list[Any]], bool]:
    """`DynamoHandler._contains_duplicates` (5.2.5) with a set of exact stand-ins instead of a list scanned per
    key (patch 20); keys it has no stand-in for go through upstream."""

    @functools.wraps(method)
    def wrapper(self: Any, keys: list[Any]) -> bool:
        try:
            stand_ins = [_hashable(key) for key in keys]
        except _NotExactlyHashable:
            return method(self, keys)
        return len(set(stand_ins)) < len(stand_ins)

    return wrapper


class _KeywordList(list[str]):
    """moto's reserved keywords (5.2.5: a list its three callers only search with `in`), answering `in` from a
    set of the same words (patch 19)."""

    def __init__(self, words: list[str]) -> None:
        super().__init__(words)
        self._words = frozenset(words)

    def __contains__(self, word: object) -> bool:
        return word in self._words


def _sorted_by_values(method: Callable[..., Any]) -> Callable[..., Any]:
    """`Table.sorted_items` (5.2.5) with each item's sort values computed once (patch 14)."""
    from decimal import Decimal

    @functools.wraps(method)
    def wrapper(self: Any, hash_key_attrs: list[str], range_key_attrs: list[Any], items: list[Any]) -> Any:
        names = self._generate_attr_to_sort_by(hash_key_attrs, range_key_attrs)
        keyed = []
        kinds: list[set[str]] = [set() for _ in names]
        for item in items:
            values = []
            for i, name in enumerate(names):
                attr = item.attrs.get(name)
                if attr is None or attr.type not in ("S", "N", "B"):
                    return method(self, hash_key_attrs, range_key_attrs, items)
                kinds[i].add(attr.type)
                values.append(Decimal(attr.value) if attr.type == "N" else attr.value)  # its cast_value
            keyed.append((tuple(values), item))
        if any(len(k) > 1 for k in kinds):
            return method(self, hash_key_attrs, range_key_attrs, items)
        keyed.sort(key=lambda pair: pair[0])
        items[:] = [item for _, item in keyed]
        return items

    return wrapper


def _update_without_stream_copy(method: Callable[..., Any]) -> Callable[..., Any]:
    from moto.dynamodb import models
    from moto.dynamodb.models.dynamo_type import Item

    @functools.wraps(method)
    def wrapper(self: Any, table_name: str, *args: Any, **kwargs: Any) -> Any:
        table = self.tables.get(table_name)
        if table is None or table.stream_shard is not None:
            return method(self, table_name, *args, **kwargs)
        previous = models.copy  # type: ignore[attr-defined]
        models.copy = _CopyPassing(previous, Item)  # type: ignore[assignment,attr-defined]
        try:
            return method(self, table_name, *args, **kwargs)
        finally:
            models.copy = previous  # type: ignore[attr-defined]

    return wrapper


def apply() -> bool:
    """Apply the patches once (idempotent). Returns False, patching nothing, on an unpinned moto."""
    global _applied
    with _apply_lock:
        if _applied:
            return True
        if moto_version() != PINNED_MOTO_VERSION:
            _log.warning(
                "moto %s is not the pinned %s: emulator patches not applied (SQS receive will be slow)",
                moto_version(),
                PINNED_MOTO_VERSION,
            )
            return False
        from moto.dynamodb.responses import DynamoHandler
        from moto.sqs.models import Queue, SQSBackend

        Queue.attributes = property(_queue_attributes)  # type: ignore[assignment,method-assign]
        Queue.delete_message = _delete_message_locked  # type: ignore[method-assign]
        Queue.messages = property(_visible_messages)  # type: ignore[assignment,method-assign]
        Queue.wait_for_messages = _wait_until_due  # type: ignore[method-assign]
        Queue.pending_message_groups = property(_pending_groups_of_a_snapshot)  # type: ignore[assignment,method-assign]
        SQSBackend.delete_message_batch = _delete_message_batch_one_pass  # type: ignore[method-assign]
        from moto.dynamodb.responses import DynamoResult
        from moto.moto_server.werkzeug_app import DomainDispatcherApplication

        DomainDispatcherApplication.get_backend_for_host = _memoised_backend_lookup(  # type: ignore[method-assign]
            DomainDispatcherApplication.get_backend_for_host
        )
        DynamoResult.execute_result = _fast_json_result(DynamoResult.execute_result)  # type: ignore[method-assign]
        from moto.dynamodb.models.table import Table

        Table.query = _partition_pages(_partition_query(Table.query))  # type: ignore[method-assign]
        Table.sorted_items = _sorted_by_values(Table.sorted_items)  # type: ignore[method-assign]
        SQSBackend.send_message = _light_mode(SQSBackend.send_message)  # type: ignore[method-assign]
        UPSTREAM["receive_message"] = SQSBackend.receive_message
        SQSBackend.receive_message = _light_mode(  # type: ignore[method-assign]
            _receive_one_scan_at_a_time(_receive_scan)
        )
        SQSBackend.purge_queue = _purge_forgetting_receipts(SQSBackend.purge_queue)  # type: ignore[method-assign]
        import moto.sqs.models as sqs_models

        sqs_models.generate_receipt_handle = _receipt_handle  # type: ignore[attr-defined]
        DynamoHandler.call_action = _serialised(DynamoHandler.call_action)  # type: ignore[method-assign]
        from moto.dynamodb.models import DynamoDBBackend

        DynamoDBBackend.transact_write_items = _transact_item_backups(  # type: ignore[method-assign]
            DynamoDBBackend.transact_write_items
        )
        import moto.core.responses as core_responses
        from moto.dynamodb.comparisons import ConditionExpressionParser
        from moto.dynamodb.models.dynamo_type import Item
        from moto.dynamodb.parsing.expressions import UpdateExpressionParser  # type: ignore[attr-defined]

        ConditionExpressionParser._lex_condition_expression = _memoised_lexer(  # type: ignore[assignment,method-assign]
            ConditionExpressionParser._lex_condition_expression
        )
        ConditionExpressionParser.parse = _memoised_condition_parse(  # type: ignore[assignment,method-assign]
            ConditionExpressionParser.parse
        )
        ConditionExpressionParser._make_operand = _operand_bound_by_name(  # type: ignore[assignment,method-assign]
            ConditionExpressionParser._make_operand
        )
        from moto.core.parse import BaseJSONParser

        _attribute_values_parsed_directly(BaseJSONParser)
        UpdateExpressionParser.make = _memoised_update_parser(UpdateExpressionParser.make.__func__)
        core_responses.method_names_from_class = functools.lru_cache(maxsize=None)(  # type: ignore[attr-defined]
            core_responses.method_names_from_class  # type: ignore[attr-defined]
        )
        Item.project = _project_top_level(Item.project)  # type: ignore[method-assign]
        UPSTREAM["item_init"] = Item.__init__
        Item.__init__ = _item_measured_once  # type: ignore[method-assign]
        from moto.dynamodb.parsing import validators

        validators.deepcopy = _copy_update_tree(validators.deepcopy)  # type: ignore[attr-defined]
        _syntax_checked_once(validators.UpdateExpressionValidator)
        from moto.dynamodb.parsing.ast_nodes import DepthFirstTraverser  # type: ignore[attr-defined]

        _traverse_by_type(DepthFirstTraverser)
        from moto.dynamodb.parsing.reserved_keywords import ReservedKeywords

        ReservedKeywords.KEYWORDS = _KeywordList(ReservedKeywords.get_reserved_keywords())
        DynamoHandler._contains_duplicates = _duplicates_by_set(  # type: ignore[assignment,method-assign]
            DynamoHandler._contains_duplicates
        )
        DynamoDBBackend.update_item = _update_without_stream_copy(  # type: ignore[method-assign]
            DynamoDBBackend.update_item
        )
        import moto.dynamodb.responses as dynamodb_responses

        dynamodb_responses.copy = _CopyPassing(copy, Item)  # type: ignore[assignment,attr-defined]
        from infra.local.moto_partiql import batch_execute_statement

        UPSTREAM["batch_execute_statement"] = DynamoDBBackend.batch_execute_statement
        DynamoDBBackend.batch_execute_statement = batch_execute_statement(  # type: ignore[assignment,method-assign]
            DynamoDBBackend.batch_execute_statement
        )
        _applied = True
        return True
