"""A backslash in the authority of an http(s) URL ends the host (WHATWG URL Standard, authority state), as in
every browser; it never moves the host past an `@`. In a path it stays data (`%5C`), as before."""

from __future__ import annotations

import pytest

from seolens_core.urls import NormalizedURL, normalize

CASES = [
    ("http://a.example\\@b.example/", "a.example", "http://a.example/@b.example/"),
    ("http://[::1]\\@evil.example/", "[::1]", "http://[::1]/@evil.example/"),
    ("https://a.example\\", "a.example", "https://a.example/"),
    ("http://a.example:8080\\@b.example:9/x", "a.example", "http://a.example:8080/@b.example:9/x"),
    ("http://user:pw@a.example\\@b.example/", "a.example", "http://a.example/@b.example/"),
    ("//a.example\\@b.example/x", "a.example", "https://a.example/@b.example/x"),
    ("http://a.example\\path\\x?q", "a.example", "http://a.example/path%5Cx?q"),
    ("http://a.example/p\\@b.example/", "a.example", "http://a.example/p%5C@b.example/"),
]


@pytest.mark.parametrize(("href", "host", "url"), CASES)
def test_a_backslash_ends_the_authority(href: str, host: str, url: str) -> None:
    result = normalize(href, "https://base.example/dir/")
    assert isinstance(result, NormalizedURL), result
    assert (result.host, result.url) == (host, url)
    assert normalize(result.url) == result  # idempotent


def test_a_base_with_a_backslash_in_its_authority_resolves_on_its_own_host() -> None:
    result = normalize("page", "http://a.example\\@b.example/dir/")
    assert isinstance(result, NormalizedURL) and result.host == "a.example"
