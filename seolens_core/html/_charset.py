"""Charset choice and decoding for fetched HTML bytes.

Order (WHATWG "determine the character encoding", simplified): byte-order mark, the Content-Type
`charset` parameter, a `<meta charset>` / `<meta http-equiv>` declaration in the first 4 KiB, else UTF-8.
Decoding never raises: undecodable bytes become U+FFFD.
"""

from __future__ import annotations

import codecs
import re

DEFAULT_CHARSET = "utf-8"
META_SCAN_BYTES = 4096

_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF8, "utf-8-sig"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)
_CT_CHARSET = re.compile(r"""charset\s*=\s*["']?\s*([^"'\s;,]+)""", re.IGNORECASE)
_META_CHARSET = re.compile(
    rb"""<meta[^>]{0,512}?charset\s*=\s*["']?\s*([a-z0-9_\-:.]{1,40})""", re.IGNORECASE
)
# WHATWG maps these labels to windows-1252, which is a superset that browsers actually use.
_WINDOWS_1252_ALIASES = frozenset({"latin-1", "iso8859-1", "ascii"})


def _codec(label: str) -> str | None:
    """Python codec name for a charset label, or None when unknown or not a text encoding."""
    try:
        info = codecs.lookup(label.strip().strip("\"'"))
    except (LookupError, ValueError):
        return None
    # Rejects transforms such as base64/rot13 that codecs.lookup also knows.
    if not getattr(info, "_is_text_encoding", True):
        return None
    return "cp1252" if info.name in _WINDOWS_1252_ALIASES else info.name


def charset_from_content_type(content_type: str | None) -> str | None:
    """The usable codec named by a Content-Type header's charset parameter, if any."""
    if not content_type:
        return None
    match = _CT_CHARSET.search(content_type)
    return _codec(match.group(1)) if match else None


def sniff_charset(body: bytes, content_type: str | None) -> str:
    """Choose the codec for `body`: BOM, then Content-Type, then <meta>, else UTF-8."""
    for bom, name in _BOMS:
        if body.startswith(bom):
            return name
    declared = charset_from_content_type(content_type)
    if declared:
        return declared
    match = _META_CHARSET.search(body, 0, META_SCAN_BYTES)
    if match:
        meta = _codec(match.group(1).decode("ascii", "replace"))
        if meta:
            # A document cannot declare itself UTF-16 in ASCII-compatible markup (WHATWG rule).
            return DEFAULT_CHARSET if meta.startswith("utf-16") else meta
    return DEFAULT_CHARSET


def decode_body(body: bytes, content_type: str | None) -> tuple[str, str]:
    """Decode `body` to text with the sniffed codec; returns (text, codec name)."""
    charset = sniff_charset(body, content_type)
    try:
        return body.decode(charset, errors="replace"), charset
    except (LookupError, UnicodeError, ValueError):
        return body.decode(DEFAULT_CHARSET, errors="replace"), DEFAULT_CHARSET
