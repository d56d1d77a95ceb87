"""URL layer: normalization and link resolution (RFC 3986), trap guards, crawl boundary, visited-set key."""

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
from ._normalize import normalize
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
    "check_traps",
    "normalize",
    "remove_dot_segments",
    "resolve_reference",
    "url_key",
    "url_key_hex",
]
