"""Percent-encoding normalization (RFC 3986 sections 2.1, 2.3 and 6.2.2.2) for paths and queries."""

from __future__ import annotations

import re

_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
# pchar minus "%" (section 3.3) plus "/"; the query also allows "?" (section 3.4).
_PATH_SAFE = r"A-Za-z0-9\-._~!$&'()*+,;=:@/"
_QUERY_SAFE = _PATH_SAFE + "?"

path_is_clean = re.compile(f"[{_PATH_SAFE}]*").fullmatch
query_is_clean = re.compile(f"[{_QUERY_SAFE}]*").fullmatch
_PATH_FIX = re.compile(f"%[0-9A-Fa-f]{{2}}|[^{_PATH_SAFE}]").sub
_QUERY_FIX = re.compile(f"%[0-9A-Fa-f]{{2}}|[^{_QUERY_SAFE}]").sub

# What each triplet becomes: unreserved characters decoded, everything else in uppercase hex.
_TRIPLETS: dict[str, str] = {}
for _a in "0123456789abcdefABCDEF":
    for _b in "0123456789abcdefABCDEF":
        _byte = int(_a + _b, 16)
        _TRIPLETS["%" + _a + _b] = chr(_byte) if chr(_byte) in _UNRESERVED else f"%{_byte:02X}"


def _fix(match: re.Match[str]) -> str:
    text = match.group()
    if len(text) == 3 and text[0] == "%":
        return _TRIPLETS[text]
    # A lone "%" becomes "%25"; any other character is encoded as its UTF-8 bytes.
    # Lone surrogates raise UnicodeEncodeError here; the caller turns that into a rejection.
    return "".join(f"%{byte:02X}" for byte in text.encode("utf-8"))


def normalize_path_encoding(path: str) -> str:
    """Uppercase hex, decode unreserved, encode what a path may not hold; never re-encode a triplet."""
    return path if path_is_clean(path) else _PATH_FIX(_fix, path)


def normalize_query_encoding(query: str) -> str:
    """As `normalize_path_encoding` for the query's character set: "+" stays "+", a space is "%20"."""
    return query if query_is_clean(query) else _QUERY_FIX(_fix, query)
