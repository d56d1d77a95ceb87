"""The HTTP `Link` header (RFC 8288): canonical and hreflang alternates that a page declares outside its HTML.

Search engines read `Link: <https://example.com/a>; rel="canonical"` and
`Link: <https://example.com/de>; rel="alternate"; hreflang="de"` like the `<link>` elements (and they are the
only way a PDF can have them). Several headers arrive joined by ", " (httpx), so a value is split on the
commas outside `<...>` and quoted strings. Parsing never raises; a malformed link is skipped.
"""

from __future__ import annotations

from dataclasses import dataclass

# A hostile header is bounded: links beyond this many are ignored.
MAX_HEADER_LINKS = 200


@dataclass(frozen=True, slots=True)
class HeaderLink:
    """One link of a Link header: its URI reference as written, its rel tokens (lower case), its hreflang."""

    href: str
    rel: frozenset[str]
    hreflang: str | None = None


def _split_outside(text: str, sep: str) -> list[str]:
    """`text` split on `sep` where it is neither inside `<...>` nor inside a quoted string."""
    parts: list[str] = []
    start = 0
    quoted = angled = False
    i = 0
    while i < len(text):
        char = text[i]
        if quoted:
            if char == "\\":
                i += 1
            elif char == '"':
                quoted = False
        elif char == '"':
            quoted = True
        elif char == "<":
            angled = True
        elif char == ">":
            angled = False
        elif char == sep and not angled:
            parts.append(text[start:i])
            start = i + 1
        i += 1
    parts.append(text[start:])
    return parts


def _unquote(value: str) -> str:
    value = value.strip()
    if len(value) >= 2 and value[0] == value[-1] == '"':
        value = value[1:-1].replace('\\"', '"').replace("\\\\", "\\")
    return value.strip()


def _link(part: str) -> HeaderLink | None:
    pieces = _split_outside(part.strip(), ";")
    target = pieces[0].strip()
    if not (target.startswith("<") and target.endswith(">")):
        return None
    params: dict[str, str] = {}
    for piece in pieces[1:]:
        name, sep, value = piece.partition("=")
        key = name.strip().lower()
        if sep and key and key not in params:  # RFC 8288: only the first occurrence of a parameter counts
            params[key] = _unquote(value)
    rel = frozenset(params.get("rel", "").lower().split())
    lang = params.get("hreflang")
    return HeaderLink(target[1:-1].strip(), rel, lang.lower() if lang else None)


def parse_link_header(value: str | None) -> tuple[HeaderLink, ...]:
    """The links of a Link header value, in order (at most `MAX_HEADER_LINKS`)."""
    if not value:
        return ()
    links: list[HeaderLink] = []
    for part in _split_outside(value, ","):
        link = _link(part)
        if link is not None:
            links.append(link)
            if len(links) >= MAX_HEADER_LINKS:
                break
    return tuple(links)
