"""Bounded Content-Encoding decoding: never more than the byte budget comes out, whatever goes in.

httpx decodes a whole network chunk at once, so a 100 KB brotli or gzip bomb can expand to gigabytes before
a size check sees it; here every decoder is asked for at most the bytes still allowed.
"""

from __future__ import annotations

import zlib
from typing import Protocol

import brotli


class _Layer(Protocol):
    def feed(self, data: bytes, limit: int) -> bytes: ...


class _Zlib:
    """gzip, zlib-wrapped deflate, and the raw deflate some servers send as `deflate`."""

    def __init__(self, gzip: bool) -> None:
        self._gzip = gzip
        self._d = zlib.decompressobj(wbits=47 if gzip else 15)
        self._raw_fallback = not gzip
        self._started = False

    def feed(self, data: bytes, limit: int) -> bytes:
        if limit <= 0:
            return b""
        try:
            out = self._d.decompress(data, limit)
        except zlib.error:
            if self._raw_fallback and not self._started:
                self._raw_fallback = False
                self._d = zlib.decompressobj(wbits=-15)
                out = self._d.decompress(data, limit)
            else:
                raise
        self._started = True
        return out


class _Brotli:
    def __init__(self) -> None:
        self._d = brotli.Decompressor()

    def feed(self, data: bytes, limit: int) -> bytes:
        if limit <= 0:
            return b""
        out: bytes = self._d.process(data, output_buffer_limit=limit)
        return out[:limit]


class _Identity:
    def feed(self, data: bytes, limit: int) -> bytes:
        return data[: max(0, limit)]


def _layer(name: str) -> _Layer | None:
    name = name.strip().lower()
    if name in ("gzip", "x-gzip"):
        return _Zlib(gzip=True)
    if name == "deflate":
        return _Zlib(gzip=False)
    if name == "br":
        return _Brotli()
    if name in ("", "identity"):
        return _Identity()
    return None


class BoundedDecoder:
    """Decodes a Content-Encoding chain (applied in reverse order) into at most `budget` bytes."""

    def __init__(self, content_encoding: str | None, budget: int) -> None:
        names = [n for n in (content_encoding or "").split(",") if n.strip()]
        layers = [_layer(n) for n in reversed(names)]
        self.unknown = any(layer is None for layer in layers)
        self._layers: list[_Layer] = [] if self.unknown else [layer for layer in layers if layer is not None]
        self._budget = budget
        self.produced = 0
        self.truncated = False

    def feed(self, data: bytes) -> bytes:
        """Decoded bytes for `data`, never past the budget; `truncated` is set once the budget is spent."""
        remaining = self._budget - self.produced
        if remaining <= 0:
            self.truncated = True
            return b""
        out = data
        for layer in self._layers:
            out = layer.feed(out, remaining)
        if len(out) >= remaining:
            out = out[:remaining]
            self.truncated = True
        self.produced += len(out)
        return out
