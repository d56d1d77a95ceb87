"""Counts every AWS API call by service and operation, through botocore's event hooks."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any


class CallMeter:
    """Thread-safe tally of AWS API calls; attach it to any botocore or aiobotocore client."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls: Counter[str] = Counter()

    def attach(self, client: Any) -> Any:
        service = client.meta.service_model.service_name
        client.meta.events.register("before-call.*.*", self._make_hook(service))
        return client

    def _make_hook(self, service: str) -> Any:
        def hook(model: Any, **_: Any) -> None:
            with self._lock:
                self._calls[f"{service}.{model.name}"] += 1

        return hook

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(sorted(self._calls.items()))

    def total(self) -> int:
        with self._lock:
            return sum(self._calls.values())


GLOBAL_METER = CallMeter()
