"""Signals outside the HTML body: the Link header, agent-named robots metas, unavailable_after, non-HTML answers."""

from __future__ import annotations

import pytest

from seolens_core.html import (
    HeaderLink,
    extract_page,
    non_html_facts,
    parse_http_date,
    parse_link_header,
    unavailable_after,
)

URL = "https://example.com/page"


def test_link_header_links_with_quoted_commas_and_several_rels() -> None:
    value = (
        '<https://example.com/a,b>; rel="canonical", '
        '<https://example.com/de>; rel="alternate"; hreflang="DE", '
        '</style.css>; rel="preload stylesheet"; title="a, b; c", '
        "not-a-link; rel=canonical"
    )
    assert parse_link_header(value) == (
        HeaderLink("https://example.com/a,b", frozenset({"canonical"})),
        HeaderLink("https://example.com/de", frozenset({"alternate"}), "de"),
        HeaderLink("/style.css", frozenset({"preload", "stylesheet"})),
    )
    assert parse_link_header(None) == () and parse_link_header("<unclosed; rel=canonical") == ()


def test_canonicals_from_html_and_link_header_are_all_kept() -> None:
    body = b'<link rel="canonical" href="/one"><link rel="canonical" href="/two"><p>x</p>'
    headers = {"Link": '<https://example.com/three>; rel="canonical"'}
    facts = extract_page(body, url=URL, content_type="text/html", headers=headers)
    assert facts.canonical == "/one"
    assert facts.canonicals == ("/one", "/two")
    assert facts.header_canonicals == ("https://example.com/three",)
    assert facts.to_row()["canonical_header"] == "https://example.com/three"
    header_only = extract_page(b"<p>x</p>", url=URL, content_type="text/html", headers=headers)
    assert header_only.canonical == "https://example.com/three"


@pytest.mark.parametrize(
    ("metas", "noindex", "nofollow"),
    [
        ('<meta name="googlebot" content="noindex">', True, False),
        ('<meta name="GoogleBot" content="none">', True, True),
        ('<meta name="bingbot" content="noindex, nofollow">', False, False),
        ('<meta name="robots" content="index"><meta name="googlebot" content="nofollow">', False, True),
    ],
)
def test_robots_metas_named_after_a_crawler(metas: str, noindex: bool, nofollow: bool) -> None:
    facts = extract_page(metas.encode(), url=URL, content_type="text/html")
    assert (facts.noindex, facts.nofollow) == (noindex, nofollow)
    assert facts.to_row()["meta_robots_agents"] is not None


@pytest.mark.parametrize(
    ("value", "date"),
    [
        ("unavailable_after: 25 Jun 2010 15:00:00 PST", "25 jun 2010 15:00:00 pst"),
        (
            "noindex, unavailable_after: Wed, 25 Jun 2010 15:00:00 GMT, nofollow",
            "wed, 25 jun 2010 15:00:00 gmt",
        ),
        ("googlebot: unavailable_after: 2030-01-01", "2030-01-01"),
        ("bingbot: unavailable_after: 2030-01-01", None),
        ("noindex", None),
        (None, None),
    ],
)
def test_unavailable_after_value_is_kept_with_its_date(value: str | None, date: str | None) -> None:
    assert unavailable_after(value) == date


def test_http_dates_in_the_formats_google_reads() -> None:
    assert parse_http_date("Wed, 25 Jun 2010 15:00:00 GMT") == 1277478000.0
    assert parse_http_date("25 Jun 2010 15:00:00 PST") == 1277506800.0
    assert parse_http_date("2010-06-25T15:00:00Z") == 1277478000.0
    assert parse_http_date("2010-06-25") == 1277424000.0
    assert parse_http_date("next tuesday") is None


def test_a_pdf_carries_its_robots_and_canonical_in_headers() -> None:
    headers = {"x-robots-tag": "noindex", "link": '<https://example.com/doc.html>; rel="canonical"'}
    facts = extract_page(b"%PDF-1.4", url=URL, content_type="application/pdf", headers=headers)
    assert facts == non_html_facts(URL, headers)
    assert not facts.is_html and facts.noindex
    assert facts.canonical == "https://example.com/doc.html"


def test_hostile_headers_and_markup_stay_bounded() -> None:
    from seolens_core.html import MAX_HEADER_LINKS

    link = ", ".join(f'</p{i}>; rel="alternate"; hreflang="x{i}"' for i in range(5_000))
    refresh = "0; url=" + "a" * 100_000
    deep = "[" * 50_000
    body = (
        f'<meta http-equiv="refresh" content="{refresh}"><script type="application/ld+json">{deep}</script>'
        + '<img src="http://x/a.png" alt="">' * 2_000
    )
    facts = extract_page(body.encode(), url=URL, content_type="text/html", headers={"Link": link})
    assert len(facts.header_hreflang) == MAX_HEADER_LINKS
    assert facts.jsonld_blocks == 1 and len(facts.jsonld_invalid) == 1
    assert facts.http_subresources == 2_000 and len(facts.http_subresource_examples) == 5
    assert facts.meta_refresh is not None and len(facts.meta_refresh) == 4096
