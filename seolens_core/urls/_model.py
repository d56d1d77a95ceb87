"""Value types of the URL layer: the normalized URL, rejections and the normalizer's configuration."""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

DEFAULT_PORTS: dict[str, int] = {"http": 80, "https": 443}

DEFAULT_TRACKING_PARAMS: frozenset[str] = frozenset(
    {
        "utm_source",
        "utm_medium",
        "utm_campaign",
        "utm_term",
        "utm_content",
        "fbclid",
        "gclid",
        "msclkid",
        "mc_eid",
        "_ga",
        "_gl",
        "ref",
    }
)
"""Marketing and analytics parameters from the crawler guide (section 3); they never change the page."""

DEFAULT_FACET_PARAMS: frozenset[str] = frozenset(
    {
        # sort key and direction: WooCommerce `orderby`, Shopify `sort_by`, PrestaShop `order`, `sort`/`dir`
        "sort",
        "sortby",
        "sort_by",
        "sort_order",
        "sortorder",
        "order",
        "orderby",
        "order_by",
        "dir",
        "direction",
        # presentation only
        "view",
        "view_mode",
        "display",
        "layout",
        # Magento's sorting and grid/list switches
        "product_list_order",
        "product_list_dir",
        "product_list_mode",
    }
)
"""Sorting and display facets: they reorder or restyle the same items, so they collapse into one URL.
Deliberately absent: `mode` (too generic, e.g. `mode=edit`), `limit`/`per_page` and `page` (they change
which items a page holds)."""


class RejectReason(enum.StrEnum):
    """Why a reference is not a crawlable http(s) URL."""

    JAVASCRIPT = "javascript"
    MAILTO = "mailto"
    TEL = "tel"
    DATA = "data"
    UNSUPPORTED_SCHEME = "unsupported_scheme"
    RELATIVE_WITHOUT_BASE = "relative_without_base"
    INVALID_BASE = "invalid_base"
    EMPTY_HOST = "empty_host"
    INVALID_HOST = "invalid_host"
    INVALID_PORT = "invalid_port"
    TOO_LONG = "too_long"
    UNPARSEABLE = "unparseable"


@dataclass(frozen=True, slots=True)
class Rejection:
    """A reference the crawler will not follow, with a machine reason and a human detail."""

    reason: RejectReason
    detail: str


@dataclass(frozen=True, slots=True)
class NormalizedURL:
    """A crawlable http(s) URL in canonical form: `url` is the dedup string, the other fields its parts."""

    url: str
    scheme: str  # "http" or "https"
    host: str  # lowercase ASCII (punycode); IPv6 literals keep their brackets: "[::1]"
    port: int | None  # None when it is the scheme's default port
    path: str  # always starts with "/"
    query: str  # without the "?"; "" when there is none

    @property
    def origin(self) -> str:
        """`scheme://host:port` with the port always explicit: the politeness key (HostsTable PK)."""
        port = DEFAULT_PORTS[self.scheme] if self.port is None else self.port
        return f"{self.scheme}://{self.host}:{port}"

    @property
    def host_port(self) -> str:
        """The host, plus `:port` only when the port is not the default one (the crawl-boundary key)."""
        return self.host if self.port is None else f"{self.host}:{self.port}"

    @property
    def path_query(self) -> str:
        """`/path?query`, the string robots.txt rules are matched against."""
        return f"{self.path}?{self.query}" if self.query else self.path

    def __str__(self) -> str:
        return self.url


@dataclass(frozen=True, slots=True)
class NormalizeConfig:
    """Knobs of `normalize()`; parameter names are matched case-insensitively."""

    tracking_params: frozenset[str] = DEFAULT_TRACKING_PARAMS
    ignore_sorting_facets: bool = True  # strip `facet_params` too (--ignore-sorting-facets)
    facet_params: frozenset[str] = DEFAULT_FACET_PARAMS
    max_length: int = 2048  # longest normalized URL accepted, in characters
    dropped_params: frozenset[str] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.max_length < 16:
            raise ValueError(f"max_length must be at least 16, got {self.max_length}")
        tracking = frozenset(p.lower() for p in self.tracking_params)
        facets = frozenset(p.lower() for p in self.facet_params)
        object.__setattr__(self, "tracking_params", tracking)
        object.__setattr__(self, "facet_params", facets)
        dropped = tracking | facets if self.ignore_sorting_facets else tracking
        object.__setattr__(self, "dropped_params", dropped)

    def extended(self, *, tracking: Iterable[str] = (), facets: Iterable[str] = ()) -> NormalizeConfig:
        """A copy with more tracking and/or facet parameter names added to the lists."""
        return replace(
            self,
            tracking_params=self.tracking_params | frozenset(tracking),
            facet_params=self.facet_params | frozenset(facets),
        )


DEFAULT_CONFIG = NormalizeConfig()
