"""RFC 3986 section 5.4: every normal and abnormal example, for raw resolution and through normalize()."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from seolens_core.urls import NormalizedURL, Rejection, RejectReason, normalize, resolve_reference
from seolens_core.urls._rfc3986 import _remove_dot_segments_literal, remove_dot_segments

BASE = "http://a/b/c/d;p?q"

# (reference, RFC 3986 target, normalize() result: a URL string or the RejectReason)
NORMAL = [
    ("g:h", "g:h", RejectReason.UNSUPPORTED_SCHEME),
    ("g", "http://a/b/c/g", "http://a/b/c/g"),
    ("./g", "http://a/b/c/g", "http://a/b/c/g"),
    ("g/", "http://a/b/c/g/", "http://a/b/c/g/"),
    ("/g", "http://a/g", "http://a/g"),
    ("//g", "http://g", "http://g/"),
    ("?y", "http://a/b/c/d;p?y", "http://a/b/c/d;p?y"),
    ("g?y", "http://a/b/c/g?y", "http://a/b/c/g?y"),
    ("#s", "http://a/b/c/d;p?q#s", "http://a/b/c/d;p?q"),
    ("g#s", "http://a/b/c/g#s", "http://a/b/c/g"),
    ("g?y#s", "http://a/b/c/g?y#s", "http://a/b/c/g?y"),
    (";x", "http://a/b/c/;x", "http://a/b/c/;x"),
    ("g;x", "http://a/b/c/g;x", "http://a/b/c/g;x"),
    ("g;x?y#s", "http://a/b/c/g;x?y#s", "http://a/b/c/g;x?y"),
    ("", "http://a/b/c/d;p?q", "http://a/b/c/d;p?q"),
    (".", "http://a/b/c/", "http://a/b/c/"),
    ("./", "http://a/b/c/", "http://a/b/c/"),
    ("..", "http://a/b/", "http://a/b/"),
    ("../", "http://a/b/", "http://a/b/"),
    ("../g", "http://a/b/g", "http://a/b/g"),
    ("../..", "http://a/", "http://a/"),
    ("../../", "http://a/", "http://a/"),
    ("../../g", "http://a/g", "http://a/g"),
]

ABNORMAL = [
    ("../../../g", "http://a/g", "http://a/g"),
    ("../../../../g", "http://a/g", "http://a/g"),
    ("/./g", "http://a/g", "http://a/g"),
    ("/../g", "http://a/g", "http://a/g"),
    ("g.", "http://a/b/c/g.", "http://a/b/c/g."),
    (".g", "http://a/b/c/.g", "http://a/b/c/.g"),
    ("g..", "http://a/b/c/g..", "http://a/b/c/g.."),
    ("..g", "http://a/b/c/..g", "http://a/b/c/..g"),
    ("./../g", "http://a/b/g", "http://a/b/g"),
    ("./g/.", "http://a/b/c/g/", "http://a/b/c/g/"),
    ("g/./h", "http://a/b/c/g/h", "http://a/b/c/g/h"),
    ("g/../h", "http://a/b/c/h", "http://a/b/c/h"),
    ("g;x=1/./y", "http://a/b/c/g;x=1/y", "http://a/b/c/g;x=1/y"),
    ("g;x=1/../y", "http://a/b/c/y", "http://a/b/c/y"),
    ("g?y/./x", "http://a/b/c/g?y/./x", "http://a/b/c/g?y/./x"),
    ("g?y/../x", "http://a/b/c/g?y/../x", "http://a/b/c/g?y/../x"),
    ("g#s/./x", "http://a/b/c/g#s/./x", "http://a/b/c/g"),
    ("g#s/../x", "http://a/b/c/g#s/../x", "http://a/b/c/g"),
    # A strict parser keeps the scheme, so there is no authority: not crawlable.
    ("http:g", "http:g", RejectReason.EMPTY_HOST),
]

EXAMPLES = NORMAL + ABNORMAL


@pytest.mark.parametrize(("reference", "target", "_normalized"), EXAMPLES)
def test_resolve_reference_matches_rfc_3986_section_5_4(
    reference: str, target: str, _normalized: object
) -> None:
    assert resolve_reference(reference, BASE) == target


@pytest.mark.parametrize("base_kind", ["str", "NormalizedURL"])
@pytest.mark.parametrize(("reference", "_target", "expected"), EXAMPLES)
def test_normalize_resolves_rfc_examples(
    reference: str, _target: str, expected: object, base_kind: str
) -> None:
    base: str | NormalizedURL = BASE
    if base_kind == "NormalizedURL":
        parsed = normalize(BASE)
        assert isinstance(parsed, NormalizedURL)
        base = parsed
    result = normalize(reference, base)
    if isinstance(expected, RejectReason):
        assert isinstance(result, Rejection)
        assert result.reason is expected
    else:
        assert isinstance(result, NormalizedURL)
        assert result.url == expected


def test_base_fragment_is_ignored() -> None:
    assert resolve_reference("g", "http://a/b/c/d;p?q#frag") == "http://a/b/c/g"
    assert resolve_reference("", "http://a/b?q#frag") == "http://a/b?q"


def test_resolve_reference_rejects_a_relative_base() -> None:
    with pytest.raises(ValueError, match="scheme"):
        resolve_reference("g", "/relative/base")


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("/a/b/c/./../../g", "/a/g"),  # RFC 3986 section 5.2.4 worked example
        ("mid/content=5/../6", "mid/6"),  # idem
        ("/a/b/..", "/a/"),
        ("/a/b/.", "/a/b/"),
        ("/..", "/"),
        ("/a//../b", "/a/b"),
        ("/.hidden/x", "/.hidden/x"),
        ("", ""),
        ("../a", "a"),
    ],
)
def test_remove_dot_segments(path: str, expected: str) -> None:
    assert remove_dot_segments(path) == expected
    assert _remove_dot_segments_literal(path) == expected


@given(st.lists(st.sampled_from(["a", "b", ".", "..", "", ".x", "x."]), max_size=10))
def test_fast_dot_removal_equals_the_literal_algorithm(segments: list[str]) -> None:
    path = "/" + "/".join(segments)
    assert remove_dot_segments(path) == _remove_dot_segments_literal(path)
