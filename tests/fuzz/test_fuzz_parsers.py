"""Fuzzing of every parser that reads what the web sends: arbitrary input never raises and stays bounded.

Run with `scripts/fuzz` (FUZZ_EXAMPLES per target, default 20,000); the default suite runs smaller property
tests beside each module.
"""

from __future__ import annotations

import gzip
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seolens_core.html import extract_page
from seolens_core.robots import RobotsRules
from seolens_core.sitemaps import SitemapLimits, SitemapParser
from seolens_core.urls import NormalizedURL, normalize

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "20000"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
URLISH = st.text(
    alphabet=st.sampled_from("htps:/?#&=%.-_~[]@!$'()*+,;ab0ABZ\\ \t\n\u00e9\u4e2d"), max_size=120
)

pytestmark = pytest.mark.fuzz


@FUZZ
@given(href=st.one_of(st.text(max_size=200), URLISH), base=st.one_of(st.none(), st.text(max_size=80), URLISH))
def test_normalize(href: str, base: str | None) -> None:
    result = normalize(href, base)
    if isinstance(result, NormalizedURL):
        again = normalize(result.url)
        assert again == result  # idempotent, and the output parses back to itself


@FUZZ
@given(body=st.binary(max_size=4096), path=st.text(max_size=100))
def test_robots(body: bytes, path: str) -> None:
    rules = RobotsRules.parse(body)
    rules.can_fetch(path if path.startswith("/") else "/" + path)
    assert rules.crawl_delay is None or rules.crawl_delay >= 0


@FUZZ
@given(body=st.binary(max_size=4096), chunk=st.integers(1, 512), gz=st.booleans())
def test_sitemap(body: bytes, chunk: int, gz: bool) -> None:
    data = gzip.compress(body) if gz else body
    parser = SitemapParser(SitemapLimits())
    for start in range(0, len(data), chunk):
        parser.feed(data[start : start + chunk])
        assert parser.buffered_bytes <= 2 * 1024 * 1024
    parser.close()


@FUZZ
@given(
    body=st.binary(max_size=8192),
    content_type=st.sampled_from([None, "text/html", "text/html; charset=x-bad"]),
)
def test_html(body: bytes, content_type: str | None) -> None:
    facts = extract_page(body, url="https://example.com/", content_type=content_type, max_links=100)
    assert len(facts.links) <= 100
