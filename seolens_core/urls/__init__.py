"""URL layer: normalization and link resolution (RFC 3986), trap guards, crawl boundary, visited-set key.

Choices where the standards leave room (each is tested in tests/unit/urls/):
- Resolution is RFC 3986 strict: `http:g` keeps its scheme, has no host and is rejected. Hrefs get the WHATWG
  preprocessing (trim C0 and spaces, drop tabs and newlines); a backslash in a path is data (`%5C`), not a
  slash, but in the authority it ends the host as in browsers (WHATWG authority state): never past an `@`.
- Userinfo is dropped; `+` stays `+` (only form decoding reads it as a space) and a space becomes `%20`;
  `?` with nothing after it is dropped, as are empty parameters; `a` and `a=` stay distinct.
- Hosts: IDNA 2008 via UTS 46 (non-transitional); ASCII labels may hold `_`; numeric hosts follow the
  WHATWG IPv4 parser (`0x7f.1` is 127.0.0.1); IPv6 is compressed and keeps its brackets.
"""

from ._boundary import CrawlBoundary
from ._key import url_key, url_key_hex
from ._model import (
    DEFAULT_CONFIG,
    DEFAULT_FACET_PARAMS,
    DEFAULT_PORTS,
    DEFAULT_TRACKING_PARAMS,
    NormalizeConfig,
    NormalizedURL,
    Rejection,
    RejectReason,
)
from ._normalize import base_dependency, normalize
from ._rfc3986 import remove_dot_segments, resolve_reference
from ._traps import (
    DEFAULT_PAGE_PARAMS,
    DEFAULT_YEAR_PARAMS,
    FINDING_CODES,
    TrapConfig,
    TrapReason,
    TrapVerdict,
    check_traps,
)

__all__ = [
    "DEFAULT_CONFIG",
    "DEFAULT_FACET_PARAMS",
    "DEFAULT_PAGE_PARAMS",
    "DEFAULT_PORTS",
    "DEFAULT_TRACKING_PARAMS",
    "DEFAULT_YEAR_PARAMS",
    "FINDING_CODES",
    "CrawlBoundary",
    "NormalizeConfig",
    "NormalizedURL",
    "RejectReason",
    "Rejection",
    "TrapConfig",
    "TrapReason",
    "TrapVerdict",
    "base_dependency",
    "check_traps",
    "normalize",
    "remove_dot_segments",
    "resolve_reference",
    "url_key",
    "url_key_hex",
]
