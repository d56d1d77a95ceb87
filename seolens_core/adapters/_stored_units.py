"""Write units a DynamoDB request does not show: the stored item's size, and the global secondary indexes.

Why: the call meter sees requests, but DynamoDB bills an update or a delete by the size of the stored item,
and every write that changes what an index holds by the index's copy too (a sparse index an item enters and
leaves costs two more writes in its life). `StoredItems` remembers, per item, what the meter saw written or
read (its size and the indexes holding it) and turns each write into its index units once it succeeded.
"""

from __future__ import annotations

import re
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "ItemWrite",
    "SecondaryIndex",
    "StoredItems",
    "TableSchema",
    "item_size",
    "touched_names",
    "write_units",
]


@dataclass(frozen=True, slots=True)
class SecondaryIndex:
    name: str
    keys: frozenset[str]
    projected: frozenset[str] | None
    """Non-key attributes copied into the index; None: all of them (`ProjectionType: ALL`)."""

    def holds(self, attributes: Mapping[str, Any] | frozenset[str]) -> bool:
        return self.keys <= set(attributes)

    def copies(self, names: frozenset[str]) -> bool:
        """An update of `names` changes the index's copy of an item it holds."""
        return self.projected is None or bool(names & (self.keys | self.projected))

    def copy_units(self, size: int) -> int:
        """Write units of the index's copy of an item of `size` bytes (keys and a few attributes: one)."""
        return write_units_of(size) if self.projected is None else 1


@dataclass(frozen=True, slots=True)
class TableSchema:
    keys: tuple[str, ...]
    indexes: tuple[SecondaryIndex, ...] = ()

    @classmethod
    def from_description(cls, table: Mapping[str, Any]) -> TableSchema:
        """From DescribeTable's `Table`."""
        indexes = []
        for gsi in table.get("GlobalSecondaryIndexes", ()):
            projection = gsi.get("Projection", {})
            kind = projection.get("ProjectionType", "ALL")
            projected = (
                None
                if kind == "ALL"
                else frozenset(projection.get("NonKeyAttributes", ()) if kind == "INCLUDE" else ())
            )
            keys = frozenset(k["AttributeName"] for k in gsi["KeySchema"])
            indexes.append(SecondaryIndex(gsi["IndexName"], keys, projected))
        return cls(tuple(k["AttributeName"] for k in table["KeySchema"]), tuple(indexes))


_CLAUSE = re.compile(r"(?<![:#\w])(SET|REMOVE|ADD|DELETE)\b", re.IGNORECASE)


def _top_level(text: str) -> Iterator[str]:
    """`text` split at commas outside parentheses (`SET a = if_not_exists(a, :v), b = :w`)."""
    depth, start = 0, 0
    for i, ch in enumerate(text):
        depth += ch == "("
        depth -= ch == ")"
        if ch == "," and depth == 0:
            yield text[start:i]
            start = i + 1
    yield text[start:]


def touched_names(expression: str, names: Mapping[str, str]) -> tuple[frozenset[str], frozenset[str]]:
    """The top-level attributes an UpdateExpression sets or adds to, and those it removes."""
    written: set[str] = set()
    removed: set[str] = set()
    parts = _CLAUSE.split(expression)
    for clause, body in zip(parts[1::2], parts[2::2], strict=True):
        for action in _top_level(body):
            path = action.split("=", 1)[0] if clause.upper() == "SET" else action
            tokens = path.split(None, 1)
            top = re.split(r"[.\[]", tokens[0], maxsplit=1)[0] if tokens else ""
            if not top:
                continue
            name = names.get(top, top)
            (removed if clause.upper() == "REMOVE" else written).add(name)
    return frozenset(written), frozenset(removed)


@dataclass(frozen=True, slots=True)
class ItemWrite:
    """One item a request writes: `item` for a put, `written`/`removed` names for an update, neither for a
    delete."""

    table: str
    key: tuple[Any, ...]
    item: Mapping[str, Any] | None = None
    written: frozenset[str] = frozenset()
    removed: frozenset[str] = frozenset()
    delete: bool = False

    @property
    def ident(self) -> int:
        return hash((self.table, self.key))


@dataclass(frozen=True, slots=True)
class _Seen:
    size: int
    indexes: frozenset[str]


@dataclass
class StoredItems:
    """Per item (bounded, least recently used first out): its size and the indexes holding it, as last seen."""

    schemas: Mapping[str, TableSchema]
    max_items: int = 100_000
    """About 20 MB in a local crawl's process; an item forgotten is taken as held by the indexes its next
    write leaves (`apply`), which is what a finished URL was."""
    _seen: OrderedDict[int, _Seen] = field(default_factory=OrderedDict)
    """By the hash of (table, key): a collision only misprices one write, and an int is a tenth of the key."""
    _sets: dict[frozenset[str], frozenset[str]] = field(default_factory=dict)
    """One instance of each set of index names (there are a handful)."""

    def key_of(self, table: str, item: Mapping[str, Any]) -> tuple[Any, ...] | None:
        schema = self.schemas.get(table)
        if schema is None or not all(k in item for k in schema.keys):
            return None
        return tuple(_plain(item[k]) for k in schema.keys)

    def writes(self, operation: str, params: Mapping[str, Any]) -> list[ItemWrite]:
        """The items a write request names, for tables with a known schema."""
        out: list[ItemWrite] = []
        if operation in ("PutItem", "UpdateItem", "DeleteItem"):
            self._add(out, operation.removesuffix("Item"), params)
        elif operation == "BatchWriteItem":
            for table, requests in params.get("RequestItems", {}).items():
                for r in requests:
                    if "PutRequest" in r:
                        self._add(out, "Put", {"TableName": table, "Item": r["PutRequest"].get("Item", {})})
                    elif "DeleteRequest" in r:
                        self._add(
                            out, "Delete", {"TableName": table, "Key": r["DeleteRequest"].get("Key", {})}
                        )
        elif operation == "TransactWriteItems":
            for element in params.get("TransactItems", ()):
                for kind in ("Put", "Update", "Delete"):
                    if kind in element:
                        self._add(out, kind, element[kind])
        return out

    def _add(self, out: list[ItemWrite], kind: str, spec: Mapping[str, Any]) -> None:
        table = spec.get("TableName", "")
        if kind == "Put":
            item = spec.get("Item", {})
            key = self.key_of(table, item)
            if key is not None:
                out.append(ItemWrite(table, key, item=item))
            return
        key = self.key_of(table, spec.get("Key", {}))
        if key is None:
            return
        if kind == "Delete":
            out.append(ItemWrite(table, key, delete=True))
            return
        written, removed = touched_names(
            spec.get("UpdateExpression", ""), spec.get("ExpressionAttributeNames", {})
        )
        out.append(ItemWrite(table, key, written=written, removed=removed))

    def stored_units(self, write: ItemWrite) -> int | None:
        """Base write units of an update or delete, from the stored item's size as last seen (None: unknown)."""
        seen = self._seen.get(write.ident)
        return None if seen is None or write.item is not None else write_units_of(seen.size)

    def apply(self, write: ItemWrite, answered: Mapping[str, Any] | None = None) -> int:
        """Record a write that succeeded (`answered`: the whole item its answer returned, if any); its index
        write units. An item never seen is taken as held by the indexes its write leaves (an upper bound:
        a URL is finished after its claim put it in the pending index)."""
        schema = self.schemas.get(write.table)
        if schema is None:
            return 0
        ident = write.ident
        seen = self._seen.pop(ident, None)
        units = 0
        if write.item is not None:
            size = item_size(write.item)
            held = frozenset(i.name for i in schema.indexes if i.holds(write.item))
            for index in schema.indexes:
                was = seen is None or index.name in seen.indexes
                if index.name in held:
                    units += index.copy_units(size)
                elif was:
                    units += 1
            self._remember(ident, size, held)
            return units
        if write.delete:
            for index in schema.indexes:
                if seen is None or index.name in seen.indexes:
                    units += index.copy_units(seen.size if seen else 0)
            return units
        size = item_size(answered) if answered else (seen.size if seen else 0)
        held = seen.indexes if seen else frozenset()
        for index in schema.indexes:
            if write.removed & index.keys:
                if seen is None or index.name in held:
                    units += 1
                held = held - {index.name}
            elif index.name in held or (seen is None and index.keys <= write.written):
                if index.copies(write.written | write.removed):
                    units += index.copy_units(size)
                if index.keys <= write.written:
                    held = held | {index.name}
        if seen is not None or answered:
            self._remember(ident, size, held)
        return units

    def read(self, table: str, item: Mapping[str, Any]) -> None:
        """An item read whole (no projection): its size and the indexes holding it."""
        schema = self.schemas.get(table)
        key = self.key_of(table, item)
        if schema is None or key is None:
            return
        held = frozenset(i.name for i in schema.indexes if i.holds(item))
        self._remember(hash((table, key)), item_size(item), held)

    def _remember(self, ident: int, size: int, indexes: frozenset[str]) -> None:
        self._seen[ident] = _Seen(size, self._sets.setdefault(indexes, indexes))
        self._seen.move_to_end(ident)
        if len(self._seen) > self.max_items:
            self._seen.popitem(last=False)


def write_units(item: Mapping[str, Any]) -> int:
    """DynamoDB write units of putting `item` (API form, {"name": {"S": ...}}): one per started KB."""
    return write_units_of(item_size(item))


def item_size(item: Mapping[str, Any]) -> int:
    """Bytes DynamoDB counts for an item: attribute names plus values (numbers approximated by their digits)."""
    return sum(len(name.encode("utf-8")) + _value_size(value) for name, value in item.items())


def _value_size(value: Mapping[str, Any]) -> int:
    (kind, v), *_ = value.items()
    if kind == "S":
        return len(str(v).encode("utf-8"))
    if kind == "N":
        return len(str(v)) // 2 + 1
    if kind == "B":
        return len(v) if isinstance(v, bytes | bytearray) else len(str(v))
    if kind in ("SS", "NS", "BS"):
        return sum(_value_size({kind[0]: x}) for x in v)
    if kind == "L":
        return 3 + sum(1 + _value_size(x) for x in v)
    if kind == "M":
        return 3 + sum(1 + len(k.encode("utf-8")) + _value_size(x) for k, x in v.items())
    return 1  # BOOL, NULL


def write_units_of(size: int) -> int:
    """One write unit per started KB."""
    return max(1, -(-size // 1024))


def _plain(value: Any) -> Any:
    """A key attribute's value, hashable (`{"S": "x"}` -> "x"; binary as bytes)."""
    if isinstance(value, Mapping) and len(value) == 1:
        (v,) = value.values()
        return bytes(v) if isinstance(v, bytearray) else v
    return value
