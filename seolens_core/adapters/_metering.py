"""Counts every AWS API call by service and operation, through botocore's event hooks."""

from __future__ import annotations

import re
import threading
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from seolens_core.adapters._stored_units import ItemWrite, StoredItems, TableSchema, write_units

INDEX_WRITES = "dynamodb.IndexWrites"
"""The `items()` key of the write units global secondary indexes consumed (not an API call)."""
_WRITES = "seolens.writes"
_READ = "seolens.read"
_CONSISTENT = "seolens.consistent"
SCANNED_ITEM_BYTES = 512
"""What the meter takes each item a query or scan examined to weigh: it sees only the items a filter kept, and
AWS bills every item read (4 KB a read unit). A URL item measures ~300 bytes; this bound is generous."""
_WHOLE = ("ALL_NEW", "ALL_OLD")
N = TypeVar("N", int, float)


def batch_size(operation: str, params: Any) -> float | None:
    """Billed items a DynamoDB batch or transaction call (or a PutItem) carries, None for other calls.
    An item a write call puts counts once per started KB (a write unit covers 1 KB): a batch journal of
    30 KB is 30 units. An update or delete inside a batch or transaction counts 1 (single ones are sized from
    their answer, `answered_write_units`). A key read without `ConsistentRead` counts half (an eventually
    consistent read is half a read unit)."""
    if not isinstance(params, dict):
        return None
    if operation == "BatchWriteItem":
        return sum(
            write_units(r["PutRequest"].get("Item", {})) if "PutRequest" in r else 1
            for requests in params.get("RequestItems", {}).values()
            for r in requests
        )
    if operation == "BatchGetItem":
        return sum(
            len(v.get("Keys", ())) * (1.0 if v.get("ConsistentRead") else 0.5)
            for v in params.get("RequestItems", {}).values()
        )
    if operation == "TransactWriteItems":
        return sum(
            write_units(t["Put"].get("Item", {})) if "Put" in t else 1
            for t in params.get("TransactItems", ())
        )
    if operation == "TransactGetItems":
        return len(params.get("TransactItems", ()))
    if operation == "BatchExecuteStatement":
        return sum(_statement_units(s) for s in params.get("Statements", ()))
    if operation == "PutItem":
        return write_units(params.get("Item", {}))
    return None


_INSERTED_NAMES = re.compile(r"'((?:[^']|'')*)'\s*:\s*\?")


def _statement_units(statement: Mapping[str, Any]) -> float:
    """Billed units of one PartiQL statement of a batch: an INSERT per started KB of the item it puts (named
    in its text, valued by its parameters), any other write 1 (as an update in a transaction). A SELECT
    counts 1, or half without `ConsistentRead`, and is priced as a write (`costs`: an upper bound; the
    crawler's batches are writes)."""
    text = str(statement.get("Statement", "")).lstrip()
    verb = text[:6].upper()
    if verb == "SELECT":
        return 1.0 if statement.get("ConsistentRead") else 0.5
    if verb == "INSERT":
        names = [n.replace("''", "'") for n in _INSERTED_NAMES.findall(text)]
        values = statement.get("Parameters") or []
        if names and len(names) == len(values):
            return write_units(dict(zip(names, values, strict=True)))
    return 1.0


def answered_item(parsed: Any) -> Mapping[str, Any] | None:
    """The item a single write's answer carries (`Attributes`, or the item a failed condition returns)."""
    item = parsed.get("Attributes") or parsed.get("Item") if isinstance(parsed, dict) else None
    return item if isinstance(item, dict) and item else None


def answered_write_units(operation: str, parsed: Any) -> int | None:
    """Write units of an UpdateItem or DeleteItem, sized from the item its answer carries (ALL_NEW / ALL_OLD,
    or the item a failed condition returns): AWS bills the larger of the item before and after, so this is
    exact for deletes and close for updates. Without an item in the answer: 1 (a lower bound)."""
    if operation not in ("UpdateItem", "DeleteItem"):
        return None
    item = answered_item(parsed)
    return write_units(item) if item else 1


def answered_read_units(operation: str, parsed: Any, consistent: bool) -> float | None:
    """Read units of a Query or Scan page: every item it examined (`ScannedCount`, the filter's rejects
    included) at `SCANNED_ITEM_BYTES`, rounded up to 4 KB, half when eventually consistent."""
    if operation not in ("Query", "Scan") or not isinstance(parsed, dict):
        return None
    scanned = parsed.get("ScannedCount", parsed.get("Count", 0))
    blocks = max(1, -(-int(scanned) * SCANNED_ITEM_BYTES // 4096)) if isinstance(scanned, int) else 1
    return blocks * (1.0 if consistent else 0.5)


class CallMeter:
    """Thread-safe tally of AWS API calls, and of the items (billed units) DynamoDB calls carry; attach it to
    any botocore or aiobotocore client."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: Counter[str] = Counter()
        self._items: dict[str, float] = {}  # half units: eventually consistent reads
        self._listeners: list[Callable[[str, str, Mapping[str, Any]], None]] = []
        self._stored: StoredItems | None = None

    def know_tables(self, schemas: Mapping[str, TableSchema]) -> None:
        """Also count what these tables' writes bill beyond the request: the stored item's size for updates
        and deletes, and their global secondary indexes (`INDEX_WRITES`). Without it (in Lambda), neither; a
        second call adds its tables and forgets what was seen of items."""
        with self._lock:
            known = dict(self._stored.schemas) if self._stored is not None else {}
            known.update(schemas)  # two local clouds in one process: both stacks' tables
            self._stored = StoredItems(known) if known else None

    def attach(self, client: Any) -> Any:
        service = client.meta.service_model.service_name
        client.meta.events.register("before-call.*.*", self._make_hook(service))
        client.meta.events.register("before-parameter-build.*.*", self._make_items_hook(service))
        if service == "dynamodb":
            client.meta.events.register("after-call.dynamodb.*", self._make_answer_hook(service))
        return client

    def _make_hook(self, service: str) -> Any:
        def hook(model: Any, **_: Any) -> None:
            with self._lock:
                self._calls[f"{service}.{model.name}"] += 1

        return hook

    def _make_answer_hook(self, service: str) -> Any:
        def hook(model: Any, parsed: Any = None, context: Any = None, **_: Any) -> None:
            ctx = context if isinstance(context, dict) else {}
            writes, read_table = ctx.pop(_WRITES, None), ctx.pop(_READ, None)
            answer = parsed if isinstance(parsed, dict) else {}
            consistent = bool(ctx.pop(_CONSISTENT, False))
            units: float | None = answered_write_units(model.name, parsed)
            if units is None:
                units = answered_read_units(model.name, parsed, consistent)
            elif writes:
                units = max(units, self._stored_units(writes[0][0]))
            if units is not None:
                self._add_items(f"{service}.{model.name}", units)
            if "Error" in answer:
                return
            if writes is not None:
                self._applied(writes, answered_item(answer))
            elif read_table and isinstance(answer.get("Item"), dict):
                self._remember_read(read_table, answer["Item"])

        return hook

    def _stored_units(self, write: ItemWrite) -> int:
        with self._lock:
            return (self._stored.stored_units(write) if self._stored is not None else None) or 1

    def _applied(self, writes: list[tuple[ItemWrite, bool]], answered: Mapping[str, Any] | None) -> None:
        """Index units of writes that succeeded (`answered`: the item a single write's answer returned)."""
        with self._lock:
            if self._stored is None:
                return
            units = sum(self._stored.apply(w, answered if whole else None) for w, whole in writes)
            if units:
                self._items[INDEX_WRITES] = self._items.get(INDEX_WRITES, 0.0) + units

    def _remember_read(self, table: str, item: Mapping[str, Any]) -> None:
        with self._lock:
            if self._stored is not None:
                self._stored.read(table, item)

    def _add_items(self, key: str, units: float) -> None:
        with self._lock:
            self._items[key] = self._items.get(key, 0.0) + units

    def _make_items_hook(self, service: str) -> Any:
        def hook(model: Any, params: Any = None, context: Any = None, **_: Any) -> None:
            items = batch_size(model.name, params)  # the API parameters, before serialisation
            if model.name in ("Query", "Scan") and isinstance(context, dict) and isinstance(params, dict):
                context[_CONSISTENT] = bool(params.get("ConsistentRead"))
            if self._stored is not None and service == "dynamodb" and isinstance(params, dict):
                items = self._planned(model.name, params, context, items)
            if items is not None:
                self._add_items(f"{service}.{model.name}", items)
            self.tell(service, model.name, params if isinstance(params, dict) else {})

        return hook

    def _planned(
        self, operation: str, params: dict[str, Any], context: Any, items: float | None
    ) -> float | None:
        """Keep the items this write names for its answer (index units count only once it succeeded); an
        update or delete inside a batch or transaction is billed by the stored item's size as last seen."""
        with self._lock:
            if self._stored is None:
                return items
            writes = self._stored.writes(operation, params)
            if items is not None and operation in ("BatchWriteItem", "TransactWriteItems"):
                items += sum((self._stored.stored_units(w) or 1) - 1 for w in writes if w.item is None)
        if isinstance(context, dict):
            whole = params.get("ReturnValues") in _WHOLE
            if writes:
                context[_WRITES] = [(w, whole) for w in writes]
            elif operation == "GetItem" and "ProjectionExpression" not in params:
                context[_READ] = params.get("TableName")
        return items

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(sorted(self._calls.items()))

    def add_listener(self, listener: Callable[[str, str, Mapping[str, Any]], None]) -> None:
        """Also tell `listener(service, operation, api_params)` of every call (e.g. an IAM audit)."""
        self._listeners.append(listener)

    def remove_listener(self, listener: Callable[[str, str, Mapping[str, Any]], None]) -> None:
        self._listeners.remove(listener)

    @property
    def listening(self) -> bool:
        """Whether any listener is attached (a caller in another process then sends its calls here)."""
        return bool(self._listeners)

    def tell(self, service: str, operation: str, params: Mapping[str, Any]) -> None:
        """Tell the listeners of a call made elsewhere (an execution environment in another process)."""
        for listener in list(self._listeners):
            listener(service, operation, params)

    def items(self) -> dict[str, float]:
        """Billed items so far per "service.Operation": of batch calls and transactions, and of single-item
        writes (an item written counted per started KB, an eventually consistent key as half; see `batch_size`
        and `answered_write_units`)."""
        with self._lock:
            return dict(sorted(self._items.items()))

    def schemas(self) -> dict[str, TableSchema]:
        """The tables `know_tables` was told of."""
        with self._lock:
            return dict(self._stored.schemas) if self._stored is not None else {}

    def add(self, calls: Mapping[str, int], items: Mapping[str, float]) -> None:
        """Count calls and billed items made elsewhere (an execution environment in another process)."""
        with self._lock:
            self._calls.update(calls)
            for key, units in items.items():
                self._items[key] = self._items.get(key, 0.0) + units

    def total(self) -> int:
        with self._lock:
            return sum(self._calls.values())


def counts_since(after: Mapping[str, N], before: Mapping[str, N]) -> dict[str, N]:
    """What each count grew by from `before` to `after` (counts that did not move are left out)."""
    return {k: v - before.get(k, 0) for k, v in after.items() if v != before.get(k, 0)}


GLOBAL_METER = CallMeter()
