"""Hypothesis properties of normalize(): never raises, idempotent, output parses back to its own parts."""

from __future__ import annotations

from urllib.parse import urlsplit

from hypothesis import given, settings
from hypothesis import strategies as st

from seolens_core.urls import DEFAULT_CONFIG, NormalizedURL, Rejection, normalize
from seolens_core.urls._normalize import _normalize


def _parsed(href: str) -> NormalizedURL:
    result = normalize(href)
    assert isinstance(result, NormalizedURL)
    return result


_BASE = _parsed("https://shop.example.com/a/b/c?x=1")
BASES: list[str | NormalizedURL | None] = [None, "http://a/b/c/d;p?q", _BASE, "HTTP://Ex.com:0080/a//b/../c/"]

_HOSTS = [
    "example.com",
    "EXAMPLE.com.",
    "bücher.de",
    "xn--bcher-kva.de",
    "\uff25\uff38\uff21\uff2d\uff30\uff2c\uff25\u3002com",
    "127.0.0.1",
    "0x7f.1",
    "[::1]",
    "[2001:DB8::1]",
    "ex%41mple.com",
    "my_host.example",
    "a..b",
    "",
    "[::1",
]
_HOSTS += _HOSTS[:11]  # valid hosts twice as likely as broken ones
_PATH_CHARS = st.sampled_from([*"/./../%2e%2F%41%zz%7eaZ09-_~!$&'()*+,;=:@ é€<>\"{}|\\^`[]?#", "%E2%82%AC"])
_QUERY_CHARS = st.sampled_from([*"ab=&+% ?/#é%2B%20~", "utm_source=1", "sort=x", "%26", "%3d", "a=1", "b"])

urlish = st.builds(
    lambda scheme, userinfo, host, port, path, query, fragment: (
        f"{scheme}{userinfo}{host}{port}{path}{query}{fragment}"
    ),
    st.sampled_from(["http://", "https://", "HTTPS://", "//", "", "hTTp:", "ftp://"]),
    st.sampled_from(["", "user@", "u:p@", "a@b@"]),
    st.sampled_from(_HOSTS),
    # sampled_from is uniform: repeating the common spellings weights them
    st.sampled_from(
        ["", "", "", "", "", ":", ":80", ":443", ":0443", ":8080", ":8080", ":0", ":x", ":99999"]
    ),
    st.one_of(
        st.lists(_PATH_CHARS, max_size=20).map(lambda xs: "/" + "".join(xs)),
        st.lists(_PATH_CHARS, max_size=20).map("".join),
    ),
    st.one_of(st.just(""), st.lists(_QUERY_CHARS, max_size=12).map(lambda xs: "?" + "".join(xs))),
    st.sampled_from(["", "#", "#frag", "#a/../b"]),
)
any_base = st.sampled_from(BASES)


@settings(max_examples=1500, deadline=None)
@given(st.text(), any_base)
def test_never_raises_on_arbitrary_text(href: str, base: str | NormalizedURL | None) -> None:
    result = _normalize(href, base, DEFAULT_CONFIG)  # without the safety net of normalize()
    assert isinstance(result, NormalizedURL | Rejection)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=40), st.text(max_size=40))
def test_never_raises_on_arbitrary_base(href: str, base: str) -> None:
    assert isinstance(_normalize(href, base, DEFAULT_CONFIG), NormalizedURL | Rejection)


@settings(max_examples=1500, deadline=None)
@given(st.one_of(urlish, st.text()), any_base)
def test_idempotent(href: str, base: str | NormalizedURL | None) -> None:
    first = normalize(href, base)
    if isinstance(first, NormalizedURL):
        assert normalize(first.url) == first
        assert normalize(first.url, _BASE) == first  # an absolute URL ignores the base
        assert normalize(first.url, first) == first


@settings(max_examples=1500, deadline=None)
@given(urlish, any_base)
def test_output_parses_back_to_its_parts(href: str, base: str | NormalizedURL | None) -> None:
    result = normalize(href, base)
    if not isinstance(result, NormalizedURL):
        return
    url = result.url
    assert url.isascii() and url.isprintable() and " " not in url and "#" not in url
    parts = urlsplit(url)  # an independent parser agrees on every part
    assert parts.scheme == result.scheme in ("http", "https")
    assert parts.netloc == result.host_port
    assert parts.port == result.port
    assert parts.path == result.path and result.path.startswith("/")
    assert parts.query == result.query
    assert url == f"{result.scheme}://{result.host_port}{result.path_query}"
    assert "//" not in result.path and "/./" not in result.path and "/../" not in result.path
    assert len(url) <= DEFAULT_CONFIG.max_length


root_relative = st.builds(
    lambda path, query: "/" + "".join(path) + query,
    st.lists(_PATH_CHARS, max_size=20),
    st.one_of(st.just(""), st.lists(_QUERY_CHARS, max_size=12).map(lambda xs: "?" + "".join(xs))),
)


@settings(max_examples=1500, deadline=None)
@given(st.one_of(urlish, root_relative), any_base)
def test_the_shared_cache_gives_what_the_uncached_normalization_gives(
    href: str, base: str | NormalizedURL | None
) -> None:
    """Absolute URLs and absolute paths are normalized once per base origin (navigation links repeat on every
    page): the answer must be the one resolving against the full base would give."""
    try:
        expected: object = _normalize(href, base, DEFAULT_CONFIG)
    except Exception:
        expected = Rejection
    got = normalize(href, base)
    assert got == expected or (expected is Rejection and isinstance(got, Rejection))
    assert normalize(href, base) == got  # and again, from the cache
