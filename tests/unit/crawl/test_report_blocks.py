"""How the report reads objects through: blocks cut at line ends, and the rows a block holds."""

from __future__ import annotations

import asyncio
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from seolens_core.adapters._json import load_lines
from seolens_core.crawl._report import _blocks, _count_lines


class _Ranges:
    """The one call `_blocks` makes: bytes `start` .. `start + length - 1` of one object."""

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.calls = 0

    async def get_range(self, key: str, start: int, length: int) -> bytes:
        assert start < len(self.data)  # S3 refuses a range starting past the end
        self.calls += 1
        return self.data[start : start + length]


def read(data: bytes, read_size: int) -> tuple[list[bytes], int]:
    store: Any = _Ranges(data)

    async def go() -> list[bytes]:
        return [block async for block in _blocks(store, "k", len(data), read_size)]

    return asyncio.run(go()), store.calls


@settings(max_examples=200, deadline=None)
@given(
    lines=st.lists(st.binary(max_size=12).map(lambda b: b.replace(b"\n", b"")), max_size=10),
    last_newline=st.booleans(),
    read_size=st.integers(1, 40),
)
def test_blocks_end_at_line_ends_and_give_the_object_back(
    lines: list[bytes], last_newline: bool, read_size: int
) -> None:
    data = b"\n".join(lines) + (b"\n" if last_newline and lines else b"")
    blocks, calls = read(data, read_size)
    assert b"".join(blocks) == data
    assert all(blocks) and all(block.endswith(b"\n") for block in blocks[:-1])
    assert calls == -(-len(data) // read_size)  # each byte read once


def test_a_block_counts_its_rows_as_load_lines_reads_them() -> None:
    for block in [b"", b"\n", b"{}\n", b"{}", b"{}\n{}", b"{}\n\n{}\n", b"\n{}\n", b'{"a":1}\n{"b":2}\n']:
        assert _count_lines(block) == len(load_lines(block)), block
