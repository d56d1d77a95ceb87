"""Decompression bombs never expand past the body budget, whatever the Content-Encoding."""

from __future__ import annotations

import gzip
import tracemalloc
import zlib

import brotli
import pytest

from seolens_core.fetch._decode import BoundedDecoder

BOMB = b"\0" * (64 * 1024 * 1024)
BUDGET = 1024 * 1024


def _encodings() -> dict[str, bytes]:
    raw_deflate = zlib.compressobj(9, zlib.DEFLATED, -15)
    return {
        "gzip": gzip.compress(BOMB, compresslevel=9),
        "deflate": zlib.compress(BOMB, 9),
        "deflate-raw": raw_deflate.compress(BOMB) + raw_deflate.flush(),
        "br": brotli.compress(BOMB, quality=1),
    }


ENCODED = _encodings()


@pytest.mark.parametrize("name", sorted(ENCODED))
def test_bomb_stops_at_budget_with_flat_memory(name: str) -> None:
    data = ENCODED[name]
    encoding = "deflate" if name == "deflate-raw" else name
    decoder = BoundedDecoder(encoding, BUDGET)
    tracemalloc.start()
    out = bytearray()
    for start in range(0, len(data), 16 * 1024):
        out += decoder.feed(data[start : start + 16 * 1024])
        if decoder.truncated:
            break
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert len(out) == BUDGET and decoder.truncated
    assert bytes(out) == BOMB[:BUDGET]
    assert peak < 8 * BUDGET, peak


@pytest.mark.parametrize("name", sorted(ENCODED))
def test_small_bodies_decode_whole(name: str) -> None:
    body = b"<html>" + b"hello " * 1000 + b"</html>"
    encoded = {
        "gzip": gzip.compress(body),
        "deflate": zlib.compress(body),
        "deflate-raw": (lambda c: c.compress(body) + c.flush())(zlib.compressobj(6, zlib.DEFLATED, -15)),
        "br": brotli.compress(body),
    }[name]
    decoder = BoundedDecoder("deflate" if name == "deflate-raw" else name, BUDGET)
    out = b"".join(decoder.feed(encoded[i : i + 7]) for i in range(0, len(encoded), 7))
    assert out == body and not decoder.truncated


def test_identity_and_unknown_encoding_are_capped_raw() -> None:
    for encoding in (None, "identity", "x-unknown"):
        decoder = BoundedDecoder(encoding, 10)
        assert decoder.feed(b"0123456789abc") == b"0123456789" and decoder.truncated


def test_the_brotli_pin_admits_no_version_without_a_bounded_process() -> None:
    """brotli 1.1.0's `Decompressor.process()` takes no `output_buffer_limit`: every `br` response would fail.
    The pin (pyproject.toml and requirements.txt) must start at 1.2.0, where it appeared."""
    import tomllib
    from pathlib import Path

    import brotli
    from packaging.requirements import Requirement

    root = Path(__file__).resolve().parents[3]
    declared = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]["dependencies"]
    listed = (root / "requirements.txt").read_text(encoding="utf-8").splitlines()
    for line in (*declared, *listed):
        requirement = (
            Requirement(line.split("#", 1)[0].strip()) if line.strip() and not line.startswith("#") else None
        )
        if requirement is None or requirement.name != "brotli":
            continue
        for old in ("1.0.9", "1.1.0"):
            assert not requirement.specifier.contains(old), f"{line!r} admits brotli {old}"
        assert requirement.specifier.contains("1.2.0")
    assert brotli.Decompressor().process(b"", output_buffer_limit=1) == b""
