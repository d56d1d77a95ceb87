"""Counts every AWS API call by service and operation, through botocore's event hooks."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any


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
    if operation == "PutItem":
        return write_units(params.get("Item", {}))
    return None


def answered_write_units(operation: str, parsed: Any) -> int | None:
    """Write units of an UpdateItem or DeleteItem, sized from the item its answer carries (ALL_NEW / ALL_OLD,
    or the item a failed condition returns): AWS bills the larger of the item before and after, so this is
    exact for deletes and close for updates. Without an item in the answer: 1 (a lower bound)."""
    if operation not in ("UpdateItem", "DeleteItem"):
        return None
    item = parsed.get("Attributes") or parsed.get("Item") if isinstance(parsed, dict) else None
    return write_units(item) if isinstance(item, dict) and item else 1


def write_units(item: Mapping[str, Any]) -> int:
    """DynamoDB write units of putting `item` (API form, {"name": {"S": ...}}): one per started KB."""
    return max(1, -(-item_size(item) // 1024))


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


class CallMeter:
    """Thread-safe tally of AWS API calls, and of the items (billed units) DynamoDB calls carry; attach it to
    any botocore or aiobotocore client."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: Counter[str] = Counter()
        self._items: dict[str, float] = {}  # half units: eventually consistent reads
        self._listeners: list[Callable[[str, str, Mapping[str, Any]], None]] = []

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
        def hook(model: Any, parsed: Any = None, **_: Any) -> None:
            units = answered_write_units(model.name, parsed)
            if units is not None:
                self._add_items(f"{service}.{model.name}", units)

        return hook

    def _add_items(self, key: str, units: float) -> None:
        with self._lock:
            self._items[key] = self._items.get(key, 0.0) + units

    def _make_items_hook(self, service: str) -> Any:
        def hook(model: Any, params: Any = None, **_: Any) -> None:
            items = batch_size(model.name, params)  # the API parameters, before serialisation
            if items is not None:
                self._add_items(f"{service}.{model.name}", items)
            for listener in list(self._listeners):
                listener(service, model.name, params if isinstance(params, dict) else {})

        return hook

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(sorted(self._calls.items()))

    def add_listener(self, listener: Callable[[str, str, Mapping[str, Any]], None]) -> None:
        """Also tell `listener(service, operation, api_params)` of every call (e.g. an IAM audit)."""
        self._listeners.append(listener)

    def remove_listener(self, listener: Callable[[str, str, Mapping[str, Any]], None]) -> None:
        self._listeners.remove(listener)

    def items(self) -> dict[str, float]:
        """Billed items so far per "service.Operation": of batch calls and transactions, and of single-item
        writes (an item written counted per started KB, an eventually consistent key as half; see `batch_size`
        and `answered_write_units`)."""
        with self._lock:
            return dict(sorted(self._items.items()))

    def total(self) -> int:
        with self._lock:
            return sum(self._calls.values())


GLOBAL_METER = CallMeter()
