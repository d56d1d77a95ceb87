"""`normalize()`: RFC 3986 reference resolution followed by the crawler guide's eight normalization stages."""

from __future__ import annotations

from functools import lru_cache
from operator import itemgetter

from . import _rfc3986 as rfc
from ._host import normalize_host
from ._model import DEFAULT_CONFIG, DEFAULT_PORTS, NormalizeConfig, NormalizedURL, Rejection, RejectReason
from ._percent import normalize_path_encoding, normalize_query_encoding

# WHATWG URL preprocessing, because hrefs come from HTML: strip C0 controls and spaces at both ends,
# drop every tab and newline inside.
_C0_AND_SPACE = "".join(chr(c) for c in range(0x21))
_TAB_NEWLINE = str.maketrans("", "", "\t\n\r")
_SCHEME_REASONS = {
    "javascript": RejectReason.JAVASCRIPT,
    "mailto": RejectReason.MAILTO,
    "tel": RejectReason.TEL,
    "data": RejectReason.DATA,
}
_KEY = itemgetter(0)
# Raw input is bounded before any work; the real limit (config.max_length) applies to the normalized URL,
# which can be much shorter than the href (tracking parameters, dot segments).
_RAW_LENGTH_FACTOR = 4

_BaseParts = tuple[str, str | None, str, str | None]


def normalize(
    href: str, base: str | NormalizedURL | None = None, config: NormalizeConfig = DEFAULT_CONFIG
) -> NormalizedURL | Rejection:
    """Resolve `href` against `base` and normalize it, or say why it cannot be crawled. Never raises.

    Stages, in the guide's order: scheme, host (lowercase, IDNA, root dot), default port, path
    (percent-encoding, dot segments, repeated slashes), empty path to "/", fragment, tracking and facet
    parameters, query sort.
    Userinfo is dropped: credentials in a link must not reach the frontier, logs or reports, and they do not
    name a different page.
    """
    try:
        shared = base_dependency(href, base)
        if shared is not None:
            return _normalize_shared(href, shared, config)
        return _normalize(href, base, config)
    except UnicodeError as exc:
        return Rejection(RejectReason.UNPARSEABLE, f"not encodable as UTF-8: {exc}")
    except Exception as exc:  # the never-raises guarantee; the property tests run `_normalize` without it
        return Rejection(RejectReason.UNPARSEABLE, f"{type(exc).__name__}: {exc}")


def base_dependency(href: str, base: str | NormalizedURL | None) -> str | None:
    """For a link whose result does not depend on the base's path and query: what it depends on ("" for an
    absolute URL, the base's `scheme://authority/` for an absolute path), else None. The navigation links
    every page of a site repeats are of these kinds: normalized once per container, not once per page."""
    if href.startswith(("http://", "https://")):
        return ""
    if href.startswith("/") and not href.startswith("//") and isinstance(base, NormalizedURL):
        return f"{base.scheme}://{base.host_port}/"
    return None


@lru_cache(maxsize=16384)
def _normalize_shared(href: str, base: str, config: NormalizeConfig) -> NormalizedURL | Rejection:
    return _normalize(href, base or None, config)


@lru_cache(maxsize=4096)
def _split_base(base: str) -> _BaseParts | Rejection:
    """A string base split once per distinct value (pages resolve many links against one base)."""
    parts = rfc.split(base.strip(_C0_AND_SPACE).translate(_TAB_NEWLINE))
    if parts.scheme is None:
        return Rejection(RejectReason.INVALID_BASE, f"base URL is not absolute: {base[:80]!r}")
    authority, path = parts.authority, parts.path
    if authority is not None and "\\" in authority:
        authority, path = _backslash_ends_authority(authority, path)
    return parts.scheme.lower(), authority, path, parts.query


def _backslash_ends_authority(authority: str, path: str) -> tuple[str, str]:
    """WHATWG URL Standard, authority state: in a special URL (http, https) a backslash ends the authority
    as "/" does, so `http://a.example\\@b.example/` is a.example's path `/@b.example/` (where browsers go),
    never b.example's. Only this backslash becomes "/"; later ones stay data, as in any path."""
    cut = authority.index("\\")
    return authority[:cut], "/" + authority[cut + 1 :] + path


def _normalize(
    href: str, base: str | NormalizedURL | None, config: NormalizeConfig
) -> NormalizedURL | Rejection:
    text = href.strip(_C0_AND_SPACE)
    if "\t" in text or "\n" in text or "\r" in text:
        text = text.translate(_TAB_NEWLINE)
    if len(text) > config.max_length * _RAW_LENGTH_FACTOR:
        return Rejection(RejectReason.TOO_LONG, f"href of {len(text)} characters")
    match = rfc.SPLIT(text)
    assert match is not None  # appendix B matches every string
    scheme, authority, path, query, _fragment = match.groups()
    if authority is not None and "\\" in authority:
        authority, path = _backslash_ends_authority(authority, path)

    # RFC 3986 section 5.2.2 (strict), then stage 1: scheme lowercasing; "//host" takes the base's scheme.
    if scheme is not None:
        scheme = scheme.lower()
        if scheme != "http" and scheme != "https":
            return _scheme_rejection(scheme)
        path = rfc.remove_dot_segments(path)
    else:
        if base is None:
            return Rejection(
                RejectReason.RELATIVE_WITHOUT_BASE, f"relative reference, no base: {text[:80]!r}"
            )
        base_authority: str | None
        base_query: str | None
        if isinstance(base, NormalizedURL):
            base_scheme, base_authority, base_path, base_query = (
                base.scheme,
                base.host_port,
                base.path,
                base.query,
            )
        else:
            split_base = _split_base(base)
            if isinstance(split_base, Rejection):
                return split_base
            base_scheme, base_authority, base_path, base_query = split_base
        if base_scheme != "http" and base_scheme != "https":
            return _scheme_rejection(base_scheme)
        scheme = base_scheme
        if authority is not None:
            path = rfc.remove_dot_segments(path)
        else:
            authority = base_authority
            if not path:
                path = base_path
                if query is None:
                    query = base_query
            elif path[0] == "/":
                path = rfc.remove_dot_segments(path)
            else:
                path = rfc.remove_dot_segments(rfc.merge(base_authority, base_path, path))
    if not authority:
        return Rejection(RejectReason.EMPTY_HOST, f"no host in {text[:80]!r}")

    # Stage 2: host. Userinfo is cut at the last "@" (as browsers do) and dropped.
    at = authority.rfind("@")
    if at >= 0:
        authority = authority[at + 1 :]
    if authority.startswith("["):
        close = authority.find("]")
        raw_host, port_text = (
            (authority, "") if close < 0 else (authority[: close + 1], authority[close + 1 :])
        )
        if port_text and port_text[0] != ":":
            return Rejection(RejectReason.INVALID_HOST, f"junk after IPv6 literal: {authority[:80]!r}")
        port_text = port_text[1:]
    else:
        raw_host, _, port_text = authority.partition(":")
    host = normalize_host(raw_host)
    if isinstance(host, Rejection):
        return host

    # Stage 3: port; an empty port means the default, leading zeros are allowed (":0443" is 443).
    port: int | None = None
    if port_text:
        if not (port_text.isascii() and port_text.isdigit()):
            return Rejection(RejectReason.INVALID_PORT, f"port {port_text[:20]!r} is not a number")
        number = int(port_text) if len(port_text) <= 10 else 1 << 20
        if not 0 < number <= 65535:
            return Rejection(RejectReason.INVALID_PORT, f"port {port_text[:20]} out of range 1-65535")
        if number != DEFAULT_PORTS[scheme]:
            port = number

    # Stages 4 and 5: percent-encoding first, so that "%2E%2E" counts as a dot segment; then dot segments,
    # repeated slashes, and "/" for an empty path.
    path = normalize_path_encoding(path)
    if "/." in path or "//" in path:
        path = rfc.remove_dot_segments(path)
        while "//" in path:
            path = path.replace("//", "/")
    if not path:
        path = "/"

    # Stage 6 (fragment) happened by ignoring `_fragment`. Stages 7 and 8: drop empty, tracking and facet
    # parameters, then a stable sort on the key, so repeated keys keep their order.
    if query:
        query = normalize_query_encoding(query)
        dropped = config.dropped_params
        kept: list[tuple[str, str]] = []
        for param in query.split("&"):
            if not param:
                continue
            equals = param.find("=")
            key = param if equals < 0 else param[:equals]
            if key.lower() not in dropped:
                kept.append((key, param))
        if len(kept) > 1:
            kept.sort(key=_KEY)
        query = "&".join([param for _, param in kept])
    else:
        query = ""

    host_port = host if port is None else f"{host}:{port}"
    url = f"{scheme}://{host_port}{path}?{query}" if query else f"{scheme}://{host_port}{path}"
    if len(url) > config.max_length:
        return Rejection(RejectReason.TOO_LONG, f"{len(url)} characters > {config.max_length}")
    return NormalizedURL(url, scheme, host, port, path, query)


def _scheme_rejection(scheme: str) -> Rejection:
    reason = _SCHEME_REASONS.get(scheme, RejectReason.UNSUPPORTED_SCHEME)
    return Rejection(reason, f"{scheme}: links are not crawlable")
