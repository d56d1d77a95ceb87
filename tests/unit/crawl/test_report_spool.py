"""The report's spools read back what they wrote, in order, without listing the bucket."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from seolens_core.crawl import _report


class _Bucket:
    def __init__(self) -> None:
        self.objects: dict[str, bytes] = {}
        self.listed = 0

    async def put_object(self, key: str, body: bytes, content_type: str = "") -> None:
        self.objects[key] = body

    async def get_object(self, key: str) -> bytes | None:
        return self.objects.get(key)

    async def list_keys(self, prefix: str) -> list[str]:
        self.listed += 1
        return sorted(k for k in self.objects if k.startswith(prefix))


def test_items_come_back_by_shard_in_the_order_added_over_several_flushes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(_report, "SPOOL_BUFFER", 64)  # a flush every few items
    bucket = _Bucket()
    bucket.objects["work/spool/rows/0001/000000.jsonl"] = b'["another run of the same prefix"]\n'
    spool = _report._Spool(bucket, "work/spool/rows/")  # type: ignore[arg-type]

    async def run() -> dict[int, list[Any]]:
        for i in range(40):
            await spool.add(i % 3, [i, "x" * (i % 5)])
        await spool.flush()
        return {shard: [item async for item in spool.read(shard)] for shard in range(4)}

    read = asyncio.run(run())
    for shard in range(3):
        assert read[shard] == [[i, "x" * (i % 5)] for i in range(40) if i % 3 == shard]
    assert read[3] == []
    assert bucket.listed == 0
    assert len([k for k in bucket.objects if k.startswith("work/spool/rows/0000/")]) > 3  # several flushes
