"""How the report reads objects through: blocks cut at line ends, and the rows a block holds."""

from __future__ import annotations

import asyncio
from typing import Any, cast

from hypothesis import given, settings
from hypothesis import strategies as st

from seolens_core.crawl._report import _blocks


class _Ranges:
    """The one call `_blocks` makes: bytes `start` .. `start + length - 1` of one object."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.calls = 0
        self.in_flight = 0
        self.most_in_flight = 0

    async def get_range(self, key: str, start: int, length: int) -> bytes:
        assert start < len(self.data)  # S3 refuses a range starting past the end
        self.calls += 1
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        await asyncio.sleep(0)
        self.in_flight -= 1
        return self.data[start : start + length]


def read(data: bytes, read_size: int, ahead: int = 0) -> tuple[list[bytes], _Ranges]:
    store = _Ranges(data)

    async def go() -> list[bytes]:
        blocks = []
        async for block in _blocks(cast(Any, store), "k", len(data), read_size, ahead=ahead):
            blocks.append(block)
            await asyncio.sleep(0)  # the consumer's work: reads ahead proceed meanwhile
        return blocks

    return asyncio.run(go()), store


@settings(max_examples=200, deadline=None)
@given(
    lines=st.lists(st.binary(max_size=12).map(lambda b: b.replace(b"\n", b"")), max_size=10),
    last_newline=st.booleans(),
    read_size=st.integers(1, 40),
    ahead=st.integers(0, 3),
)
def test_blocks_end_at_line_ends_and_give_the_object_back(
    lines: list[bytes], last_newline: bool, read_size: int, ahead: int
) -> None:
    data = b"\n".join(lines) + (b"\n" if last_newline and lines else b"")
    blocks, store = read(data, read_size, ahead)
    assert b"".join(blocks) == data
    assert all(blocks) and all(block.endswith(b"\n") for block in blocks[:-1])
    assert store.calls == -(-len(data) // read_size)  # each byte read once
    assert store.most_in_flight <= ahead + 1


def test_reads_ahead_are_in_flight_together() -> None:
    data = b"".join(b"%03d\n" % i for i in range(100))
    assert read(data, 8, ahead=0)[1].most_in_flight == 1
    assert read(data, 8, ahead=2)[1].most_in_flight == 3
