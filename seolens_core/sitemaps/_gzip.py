"""Incremental gzip decoding, bounded per step by zlib `max_length`, so a bomb never inflates at once."""

from __future__ import annotations

import zlib
from collections.abc import Iterator

GZIP_MAGIC = b"\x1f\x8b"
PIECE_BYTES = 64 * 1024
"""Largest decompressed piece handed on at a time."""


class Inflater:
    """Decodes one gzip stream (all members) pushed in arbitrary chunks; errors are recorded, not raised."""

    __slots__ = ("_d", "_member_fed", "_member_out", "_members_done", "error", "trailing_garbage")

    def __init__(self) -> None:
        self._d = zlib.decompressobj(wbits=31)
        self._member_fed = False
        self._member_out = 0
        self._members_done = 0
        self.error: str | None = None
        self.trailing_garbage = False

    @property
    def buffered_bytes(self) -> int:
        """Compressed bytes held back by `max_length` and not yet decoded."""
        return len(self._d.unconsumed_tail) + len(self._d.unused_data)

    def push(self, data: bytes) -> Iterator[bytes]:
        """Yield decoded pieces of at most PIECE_BYTES; stops quietly after an error or trailing garbage."""
        buf = data
        while self.error is None and not self.trailing_garbage:
            if self._d.eof:
                # A member ended: whatever follows is either another member or padding/garbage.
                buf = self._d.unused_data + buf
                self._d = zlib.decompressobj(wbits=31)
                self._member_fed = False
                self._member_out = 0
                self._members_done += 1
                if not buf:
                    return
            if buf:
                self._member_fed = True
            try:
                out = self._d.decompress(buf, PIECE_BYTES)
            except zlib.error as exc:
                if self._after_complete_member():
                    self.trailing_garbage = True
                else:
                    self.error = f"gzip: {exc}"
                return
            buf = self._d.unconsumed_tail
            if out:
                self._member_out += len(out)
                yield out
            if not buf and len(out) < PIECE_BYTES and not self._d.eof:
                return

    def finish(self) -> Iterator[bytes]:
        """Yield output still held inside zlib, then flag a stream that ended mid-member."""
        yield from self.push(b"")
        if (
            self.error is None
            and not self.trailing_garbage
            and not self._d.eof
            and self._member_fed
            and not self._after_complete_member()
        ):
            self.error = "gzip: truncated stream"

    def _after_complete_member(self) -> bool:
        return self._members_done > 0 and self._member_out == 0
