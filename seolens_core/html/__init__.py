"""Page facts extraction: fetched bytes in, immutable PageFacts out (selectolax/lexbor, no I/O)."""

from __future__ import annotations

from seolens_core.html._charset import decode_body, sniff_charset
from seolens_core.html._depth import flatten_deep_nesting, guard_depth
from seolens_core.html._extract import extract_page, header_value, is_html_content_type, non_html_facts
from seolens_core.html._facts import (
    MULTI_VALUE_SEP,
    OpenGraph,
    PageFacts,
    RawLink,
    parse_http_date,
    robots_directives,
    unavailable_after,
)
from seolens_core.html._link_header import MAX_HEADER_LINKS, HeaderLink, parse_link_header
from seolens_core.html._refresh import Refresh, parse_refresh

__all__ = [
    "MAX_HEADER_LINKS",
    "MULTI_VALUE_SEP",
    "HeaderLink",
    "OpenGraph",
    "PageFacts",
    "RawLink",
    "Refresh",
    "decode_body",
    "extract_page",
    "flatten_deep_nesting",
    "guard_depth",
    "header_value",
    "is_html_content_type",
    "non_html_facts",
    "parse_http_date",
    "parse_link_header",
    "parse_refresh",
    "robots_directives",
    "sniff_charset",
    "unavailable_after",
]
