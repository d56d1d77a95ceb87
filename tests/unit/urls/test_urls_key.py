"""url_key: the 64-bit XXH3 visited-set key and its hex form."""

from __future__ import annotations

import xxhash

from seolens_core.urls import url_key, url_key_hex


def test_known_values_pin_the_algorithm() -> None:
    # XXH3-64 with seed 0; changing the algorithm would orphan every stored UrlsTable key.
    assert url_key("") == 0x2D06800538D394C2
    assert url_key("https://example.com/") == xxhash.xxh3_64_intdigest(b"https://example.com/")


def test_range_and_hex_form() -> None:
    urls = [f"https://example.com/p/{i}" for i in range(2000)]
    keys = [url_key(u) for u in urls]
    assert all(0 <= key < 2**64 for key in keys)
    assert len(set(keys)) == len(urls)
    for u, key in zip(urls[:50], keys[:50], strict=True):
        text = url_key_hex(u)
        assert len(text) == 16 and text == text.lower() and int(text, 16) == key
    assert url_key_hex("") == "2d06800538d394c2"


def test_small_keys_keep_leading_zeros() -> None:
    small = next(u for u in (f"x{i}" for i in range(100_000)) if url_key(u) < 2**60)
    assert url_key_hex(small).startswith("0")
    assert len(url_key_hex(small)) == 16
