"""RFC 3986 building blocks: the appendix B splitter, section 5.2 reference resolution, 5.2.4 dot removal."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import NamedTuple

# Appendix B, with the scheme restricted to its grammar (section 3.1) so that "1a:b" is a relative path.
SPLIT: Callable[[str], re.Match[str] | None] = re.compile(
    r"(?:([A-Za-z][A-Za-z0-9+.\-]*):)?(?://([^/?#]*))?([^?#]*)(?:\?([^#]*))?(?:#(.*))?", re.DOTALL
).fullmatch


class Parts(NamedTuple):
    """The five components of a URI reference; None means undefined, which differs from empty."""

    scheme: str | None
    authority: str | None
    path: str
    query: str | None
    fragment: str | None


def split(reference: str) -> Parts:
    """Split any string into its five components (appendix B never fails to match)."""
    match = SPLIT(reference)
    assert match is not None  # every group is optional, so every string matches
    scheme, authority, path, query, fragment = match.groups()
    return Parts(scheme, authority, path, query, fragment)


def remove_dot_segments(path: str) -> str:
    """Section 5.2.4: the fast segment form for absolute paths, the literal algorithm otherwise."""
    if not path.startswith("/"):
        return _remove_dot_segments_literal(path)
    if "/." not in path:
        return path
    segments = path.split("/")
    output: list[str] = []
    for segment in segments[1:]:
        if segment == ".":
            continue
        if segment == "..":
            if output:
                output.pop()
        else:
            output.append(segment)
    # A trailing "." or ".." leaves the buffer ending in "/" (e.g. "/a/b/.." -> "/a/").
    if output and segments[-1] in (".", ".."):
        output.append("")
    return "/" + "/".join(output)


def _remove_dot_segments_literal(path: str) -> str:
    """Section 5.2.4 transcribed step by step; used for relative paths and as the test oracle."""
    source = path
    output: list[str] = []
    while source:
        if source.startswith("../"):
            source = source[3:]
        elif source.startswith(("./", "/./")):
            source = source[2:]
        elif source == "/.":
            source = "/"
        elif source.startswith("/../"):
            source = source[3:]
            if output:
                output.pop()
        elif source == "/..":
            source = "/"
            if output:
                output.pop()
        elif source in (".", ".."):
            source = ""
        else:
            start = 1 if source.startswith("/") else 0
            end = source.find("/", start)
            if end < 0:
                end = len(source)
            output.append(source[:end])
            source = source[end:]
    return "".join(output)


def merge(base_authority: str | None, base_path: str, reference_path: str) -> str:
    """Section 5.2.3: append a relative path to the base path's directory."""
    if base_authority is not None and not base_path:
        return "/" + reference_path
    return base_path[: base_path.rfind("/") + 1] + reference_path


def resolve_parts(reference: Parts, base: Parts) -> Parts:
    """Section 5.2.2 with a strict parser: `http:g` keeps its own scheme and so has no authority."""
    if reference.scheme is not None:
        return reference._replace(path=remove_dot_segments(reference.path))
    if reference.authority is not None:
        return Parts(
            base.scheme,
            reference.authority,
            remove_dot_segments(reference.path),
            reference.query,
            reference.fragment,
        )
    if not reference.path:
        query = reference.query if reference.query is not None else base.query
        return Parts(base.scheme, base.authority, base.path, query, reference.fragment)
    if reference.path.startswith("/"):
        path = remove_dot_segments(reference.path)
    else:
        path = remove_dot_segments(merge(base.authority, base.path, reference.path))
    return Parts(base.scheme, base.authority, path, reference.query, reference.fragment)


def recompose(parts: Parts) -> str:
    """Section 5.3: join components back into a string."""
    out = []
    if parts.scheme is not None:
        out.append(parts.scheme + ":")
    if parts.authority is not None:
        out.append("//" + parts.authority)
    out.append(parts.path)
    if parts.query is not None:
        out.append("?" + parts.query)
    if parts.fragment is not None:
        out.append("#" + parts.fragment)
    return "".join(out)


def resolve_reference(reference: str, base: str) -> str:
    """Resolve `reference` against the absolute URI `base` exactly as RFC 3986 section 5.2 says."""
    base_parts = split(base)
    if base_parts.scheme is None:
        raise ValueError(f"base URI must have a scheme: {base!r}")
    return recompose(resolve_parts(split(reference), base_parts))
