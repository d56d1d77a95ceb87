"""The visited-set key: a stable 64-bit hash of the normalized URL string."""

from __future__ import annotations

import xxhash


def url_key(url: str) -> int:
    """XXH3-64 (seed 0) of the UTF-8 URL, an unsigned 64-bit int.

    XXH3 rather than XXH64: same width, faster on short inputs, and its output has been frozen since
    xxHash 0.8.0, so keys stored in UrlsTable stay valid across library upgrades. It is not keyed: the
    inputs are URLs we chose to crawl, not adversarial hash-flooding material.
    Collisions: by the birthday bound, the chance of any collision among n URLs is about n^2 / 2^65;
    at 1e8 URLs that is 1e16 / 3.7e19 = 2.7e-4, and a collision only costs one skipped page.
    """
    return xxhash.xxh3_64_intdigest(url.encode("utf-8", "surrogatepass"))


def url_key_hex(url: str) -> str:
    """`url_key` as 16 lowercase hex digits (the UrlsTable sort key)."""
    return f"{url_key(url):016x}"
