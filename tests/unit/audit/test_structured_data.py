"""Structured data: JSON-LD read block by block; invalid JSON, items without @context or @type are findings."""

from __future__ import annotations

import pytest

from seolens_core.audit import FetchFacts, audit_page
from seolens_core.html import extract_page
from seolens_core.html._jsonld import JsonLdBlock, read_block

URL = "https://example.com/page"
CTX = '"@context": "https://schema.org"'


@pytest.mark.parametrize(
    ("raw", "block"),
    [
        (
            f'{{{CTX}, "@type": "Product", "offers": {{"@type": "Offer"}}}}',
            JsonLdBlock(frozenset({"Product", "Offer"})),
        ),
        (
            f'[{{{CTX}, "@type": "A"}}, {{"@type": "B"}}]',
            JsonLdBlock(frozenset({"A", "B"}), without_context=1),
        ),
        (
            f'{{{CTX}, "@graph": [{{"@type": "WebSite"}}, {{"name": "no type"}}]}}',
            JsonLdBlock(frozenset({"WebSite"}), without_type=1),
        ),
        (
            f'{{{CTX}, "@type": ["Article", "NewsArticle"]}}',
            JsonLdBlock(frozenset({"Article", "NewsArticle"})),
        ),
        ('{"name": "x"}', JsonLdBlock(frozenset(), without_context=1, without_type=1)),
        ("42", JsonLdBlock(frozenset(), "a JSON int, not an object")),
    ],
)
def test_blocks(raw: str, block: JsonLdBlock) -> None:
    assert read_block(raw) == block


def test_invalid_json_and_hostile_nesting_never_raise() -> None:
    invalid = read_block('{"@type": "Product",}')
    assert invalid.invalid is not None and "line 1" in invalid.invalid and not invalid.types
    assert read_block("[" * 100_000).invalid is not None


def findings(*blocks: str) -> dict[str, str]:
    scripts = "".join(f'<script type="application/ld+json">{b}</script>' for b in blocks)
    body = f"<html><head>{scripts}</head><body><p>x</p></body></html>".encode()
    facts = extract_page(body, url=URL, content_type="text/html")
    found = audit_page(facts, FetchFacts(200, URL, content_type="text/html"))
    return {f.code: f.detail for f in found if "JSONLD" in f.code}


def test_findings_and_columns_of_a_page_with_three_blocks() -> None:
    good = f'{{{CTX}, "@type": "Organization", "founder": {{"@type": "Person"}}}}'
    assert findings(good) == {}
    assert findings(good, '{"@type": "Product", }', '{"name": "untyped"}') == {
        "ALERT_JSONLD_INVALID": "1 of 3 blocks: Expecting property name enclosed in double quotes: line 1 column 22 (char 21)",
        "ALERT_JSONLD_NO_CONTEXT": "1 top-level items without @context",
        "ALERT_JSONLD_NO_TYPE": "1 top-level items without @type",
    }
    facts = extract_page(
        f'<script type="application/ld+json">{good}</script><script type="application/ld+json">{{</script>'.encode(),
        url=URL,
        content_type="text/html",
    )
    row = facts.to_row()
    assert (row["jsonld_blocks"], row["jsonld_types_count"], row["jsonld_invalid"]) == (2, 2, 1)
    assert row["jsonld_@type"] == "Organization@@Person"
