"""Host normalization: lowercase, IDNA 2008 / UTS 46 to punycode, root dot removal, IPv4 and IPv6 literals."""

from __future__ import annotations

import ipaddress
import re
from functools import lru_cache
from urllib.parse import unquote

import idna

from ._model import Rejection, RejectReason

_LABEL = re.compile(r"[a-z0-9_](?:[a-z0-9_\-]{0,61}[a-z0-9_])?").fullmatch
_HEX_NUMBER = re.compile(r"0[xX][0-9A-Fa-f]*").fullmatch
_MAX_HOST_LENGTH = 253


def _invalid(host: str, why: str) -> Rejection:
    return Rejection(RejectReason.INVALID_HOST, f"{why}: {host[:80]!r}")


@lru_cache(maxsize=65536)
def normalize_host(raw: str) -> str | Rejection:
    """The canonical ASCII form of a URL host, or why it is not a host we can crawl (cached: hosts repeat)."""
    if not raw:
        return Rejection(RejectReason.EMPTY_HOST, "the URL has no host")
    if raw.startswith("["):
        return _ipv6(raw)
    host = raw
    if "%" in host:
        try:
            host = unquote(host, errors="strict")
        except UnicodeDecodeError:
            return _invalid(raw, "percent-encoded host is not UTF-8")
    if not host.isascii():
        try:
            host = _idna_to_ascii(host)
        except (idna.IDNAError, UnicodeError, ValueError) as exc:
            return _invalid(raw, f"not a valid internationalized domain name ({exc})")
    host = host.lower()
    if host.endswith("."):
        host = host[:-1]
    if not host:
        return Rejection(RejectReason.EMPTY_HOST, "the URL has no host")
    last = host[host.rfind(".") + 1 :]
    if (last.isascii() and last.isdigit()) or _HEX_NUMBER(last):
        return _ipv4(host, raw)
    if len(host) > _MAX_HOST_LENGTH:
        return _invalid(raw, "host longer than 253 characters")
    for label in host.split("."):
        if not _LABEL(label):
            return _invalid(raw, f"bad label {label[:63]!r}")
    return host


def _idna_to_ascii(host: str) -> str:
    """UTS 46 mapping (non-transitional), then an A-label for each non-ASCII label; ASCII labels stay."""
    mapped = idna.uts46_remap(host, std3_rules=False, transitional=False)
    labels = mapped.split(".")
    return ".".join(label if label.isascii() else idna.alabel(label).decode("ascii") for label in labels)


def _ipv6(raw: str) -> str | Rejection:
    if not raw.endswith("]"):
        return _invalid(raw, "unterminated IPv6 literal")
    inner = raw[1:-1]
    if inner[:1] in ("v", "V"):
        return _invalid(raw, "IPvFuture literals are not crawlable")
    if "%" in inner:
        return _invalid(raw, "IPv6 zone identifiers are not crawlable")
    try:
        return f"[{ipaddress.IPv6Address(inner).compressed}]"
    except ValueError:
        return _invalid(raw, "malformed IPv6 literal")


def _ipv4(host: str, raw: str) -> str | Rejection:
    """The WHATWG IPv4 parser (decimal, 0x hex, 0-prefixed octal, 1 to 4 parts), as browsers read it."""
    parts = host.split(".")
    if len(parts) > 4:
        return _invalid(raw, "IPv4 address with more than four parts")
    numbers: list[int] = []
    for part in parts:
        if _HEX_NUMBER(part):
            digits, base = part[2:] or "0", 16
        elif len(part) > 1 and part.startswith("0"):
            digits, base = part[1:], 8
        else:
            digits, base = part, 10
        if not digits or not digits.isascii() or not digits.isalnum() or len(digits) > 12:
            return _invalid(raw, "malformed IPv4 address")
        try:
            numbers.append(int(digits, base))
        except ValueError:
            return _invalid(raw, "malformed IPv4 address")
    if any(n > 255 for n in numbers[:-1]) or numbers[-1] >= 256 ** (5 - len(numbers)):
        return _invalid(raw, "IPv4 address out of range")
    value = numbers[-1]
    for index, number in enumerate(numbers[:-1]):
        value += number * 256 ** (3 - index)
    return str(ipaddress.IPv4Address(value))


def is_ip_literal(host: str) -> bool:
    """True for a normalized IPv4 or bracketed IPv6 host."""
    if host.startswith("["):
        return True
    last = host[host.rfind(".") + 1 :]
    return last.isascii() and last.isdigit()
