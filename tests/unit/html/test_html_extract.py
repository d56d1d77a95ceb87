"""extract_page: facts from small snippets, charsets, non-HTML, hostile input."""

from __future__ import annotations

import time

import pytest
import xxhash
from hypothesis import given, settings
from hypothesis import strategies as st

from seolens_core.html import (
    OpenGraph,
    RawLink,
    extract_page,
    flatten_deep_nesting,
    guard_depth,
    robots_directives,
    sniff_charset,
)

URL = "https://example.com/page"


def page(html: str | bytes, content_type: str | None = "text/html", **kwargs: object):  # type: ignore[no-untyped-def]
    body = html.encode("utf-8") if isinstance(html, str) else html
    return extract_page(body, url=URL, content_type=content_type, **kwargs)  # type: ignore[arg-type]


FULL = """<!doctype html><html lang="en-GB"><head>
<title>  Hello
  World </title>
<noscript><img src="pixel.gif"></noscript>
<meta name="Description" content=" A  page ">
<meta name="ROBOTS" content="noindex, follow">
<link rel="canonical" href=" /canon ">
<link rel="alternate" hreflang="DE" href="/de">
<link rel="alternate" hreflang="x-default" href="/">
<base href="/base/">
<meta property="og:title" content="OG title"><meta property="og:type" content="article">
<meta property="og:image" content="/i.png"><meta property="og:description" content="OG desc">
<script type="application/ld+json">
  {"@type": ["Article", "NewsArticle"], "author": {"@type": "Person"}}
</script>
<script type="application/ld+json; charset=utf-8">{"@graph": [{"@type": "Organization"}]}</script>
<script type="application/ld+json">{broken json</script>
</head><body>
<h1>Main <b>topic</b></h1><h2>First</h2><h2>Second</h2>
<a href="/a" rel="NoFollow ugc">Anchor <i>one</i></a>
<a href="/b"><img src="b.png" alt="Pic"></a>
<a>no href</a>
<map><area href="/c" alt="Area"></map>
<img src="x.png"><img src="y.png" alt="">
<script>var hidden = "script words";</script><style>.x { color: red }</style>
<template><a href="/t">template link</a><p>template words</p></template>
<svg><title>svg title</title></svg>
<p>visible text here</p>
</body></html>"""


def test_full_page_facts() -> None:
    facts = page(FULL)
    assert facts.is_html
    assert facts.title == "Hello World"
    assert facts.meta_desc == "A page"
    assert facts.meta_robots == "noindex, follow"
    assert facts.canonical == "/canon"
    assert facts.base_href == "/base/"
    assert facts.lang == "en-GB"
    assert facts.hreflang == (("de", "/de"), ("x-default", "/"))
    assert facts.h1 == ("Main topic",)
    assert facts.h2 == ("First", "Second")
    assert facts.links == (
        RawLink("/a", "Anchor one", True, "a"),
        RawLink("/b", "Pic", False, "a"),
        RawLink("/c", "Area", False, "area"),
    )
    assert not facts.links_truncated
    assert facts.images_without_alt == 1
    assert facts.og == OpenGraph("OG title", "OG desc", "/i.png", "article")
    assert facts.jsonld_types == {"Article", "NewsArticle", "Person", "Organization"}
    # Visible text: h1, h2s, anchors, the svg title and the paragraph; no script/style/template/noscript.
    words = "Main topic First Second Anchor one no href svg title visible text here"
    assert facts.word_count == len(words.split())
    assert facts.content_hash == xxhash.xxh64_hexdigest(words.encode())
    assert facts.noindex and not facts.nofollow


@pytest.mark.parametrize(
    ("html", "title", "meta_desc"),
    [
        ("<p>no head</p>", None, None),
        ("<title></title><meta name=description content=''>", "", ""),
        ("<title>   </title><meta name=description>", "", ""),
        ("<svg><title>icon</title></svg><title>Real</title>", "Real", None),
        ("<title>First</title><title>Second</title>", "First", None),
    ],
)
def test_title_and_description_presence(html: str, title: str | None, meta_desc: str | None) -> None:
    facts = page(html)
    assert (facts.title, facts.meta_desc) == (title, meta_desc)


@pytest.mark.parametrize(
    ("meta", "header", "noindex", "nofollow"),
    [
        (None, None, False, False),
        ("index, follow", None, False, False),
        ("NOINDEX", None, True, False),
        ("none", None, True, True),
        (None, "noindex, nofollow", True, True),
        (None, "googlebot: noindex", True, False),
        (None, "otherbot: noindex", False, False),
        (None, "otherbot: noindex, googlebot: nofollow", False, True),
        (None, "unavailable_after: 25 Jun 2010 15:00:00 PST", False, False),
        ("nofollow", "noindex", True, True),
    ],
)
def test_page_level_robots_flags(meta: str | None, header: str | None, noindex: bool, nofollow: bool) -> None:
    html = f'<meta name="robots" content="{meta}">' if meta is not None else "<p>x</p>"
    headers = {"X-Robots-Tag": header} if header is not None else {}
    facts = page(html, headers=headers)
    assert (facts.noindex, facts.nofollow) == (noindex, nofollow)
    assert facts.x_robots_tag == header


def test_robots_directives_parsing() -> None:
    assert robots_directives("max-snippet:20, NoIndex") == {"max-snippet", "noindex"}
    assert robots_directives("") == frozenset()


def test_header_lookup_is_case_insensitive() -> None:
    assert page("<p>x</p>", headers={"x-robots-tag": "noindex"}).noindex


@pytest.mark.parametrize(
    ("body", "content_type", "charset"),
    [
        (b"<p>x</p>", "text/html; charset=ISO-8859-1", "cp1252"),
        (b"<p>x</p>", 'text/html; charset="Shift_JIS"', "shift_jis"),
        (b'<meta charset="windows-1251"><p>x</p>', "text/html", "cp1251"),
        (b'<meta http-equiv="Content-Type" content="text/html; charset=koi8-r">', None, "koi8-r"),
        (b'<meta charset="utf-16">', "text/html", "utf-8"),
        (b'<meta charset="bogus-charset">', "text/html", "utf-8"),
        (b'<meta charset="rot13">', "text/html", "utf-8"),
        (b"<p>x</p>", "text/html; charset=nonsense", "utf-8"),
        (b'\xef\xbb\xbf<meta charset="windows-1251">', "text/html; charset=latin1", "utf-8-sig"),
        (b"\xff\xfe<\x00p\x00>\x00", None, "utf-16-le"),
    ],
)
def test_charset_choice(body: bytes, content_type: str | None, charset: str) -> None:
    assert sniff_charset(body, content_type) == charset


def test_charset_decoding_from_content_type_then_meta() -> None:
    cyrillic = "Привет мир".encode("windows-1251")
    assert page(b"<title>" + cyrillic + b"</title>", "text/html; charset=windows-1251").title == "Привет мир"
    meta = b'<meta charset="windows-1251"><title>' + cyrillic + b"</title>"
    assert page(meta, "text/html").title == "Привет мир"
    # Content-Type wins over <meta>.
    latin = "café".encode("latin-1")
    assert (
        page(b'<meta charset="utf-8"><title>' + latin + b"</title>", "text/html; charset=latin1").title
        == "café"
    )
    # Undecodable UTF-8 becomes U+FFFD, not an error.
    assert page(b"<title>\xff\xfe ok</title>", "text/html").title == "\ufffd\ufffd ok"


@pytest.mark.parametrize("content_type", ["application/pdf", "image/png", "text/plain", "application/json"])
def test_non_html_has_no_links_and_a_flag(content_type: str) -> None:
    facts = page('<a href="/x">x</a><title>T</title>', content_type, headers={"X-Robots-Tag": "noindex"})
    assert not facts.is_html
    assert facts.links == () and facts.title is None and facts.word_count == 0
    assert facts.noindex  # X-Robots-Tag still applies to PDFs and images


@pytest.mark.parametrize(
    "content_type", [None, "", "text/html", "TEXT/HTML; charset=utf-8", "application/xhtml+xml"]
)
def test_html_content_types(content_type: str | None) -> None:
    assert page('<a href="/x">x</a>', content_type).links == (RawLink("/x", "x", False, "a"),)


def test_noscript_in_head_does_not_evict_head_tags() -> None:
    facts = page(
        '<head><noscript><img src="p.gif"></noscript><link rel="canonical" href="/a"></head><p>x</p>'
    )
    assert facts.canonical == "/a"
    assert facts.images_without_alt == 0  # noscript content is text when scripting is on


def test_empty_page_has_no_content_hash() -> None:
    facts = page(b"")
    assert (facts.word_count, facts.content_hash, facts.title, facts.links) == (0, None, None, ())


def test_same_visible_text_same_hash_regardless_of_markup() -> None:
    one = page("<p>Same   words\nhere</p><script>x()</script>")
    two = page("<div><span>Same</span> words <b>here</b></div>")
    assert one.content_hash == two.content_hash is not None
    assert page("<p>Other words</p>").content_hash != one.content_hash


def test_to_row_uses_advertools_names_and_joins_multi_values() -> None:
    row = page(FULL).to_row()
    assert row["url"] == URL
    assert row["h2"] == "First@@Second"
    assert row["alt_hreflang"] == "de@@x-default"
    assert row["alt_href"] == "/de@@/"
    assert row["og:title"] == "OG title"
    assert row["jsonld_@type"] == "Article@@NewsArticle@@Organization@@Person"
    assert row["noindex"] is True and row["links_count"] == 3
    assert page("<p>x</p>").to_row()["h1"] is None


def test_many_links_are_bounded() -> None:
    html = "<body>" + "".join(f'<a href="/p{i}">p{i}</a>' for i in range(20_000)) + "</body>"
    facts = page(html, max_links=500)
    assert len(facts.links) == 500 and facts.links_truncated
    assert facts.links[0].href == "/p0" and facts.links[-1].href == "/p499"
    assert facts.word_count == 20_000  # truncation bounds links, not text
    exact = page(html, max_links=20_000)
    assert len(exact.links) == 20_000 and not exact.links_truncated


def test_deep_nesting_is_fast_and_keeps_content() -> None:
    depth = 100_000
    html = "<html><head><title>Deep</title></head><body>" + "<div>" * depth
    html += (
        '<h1>bottom</h1> deep <a href="/deep">link</a> text' + "</div>" * depth + "<p>after</p></body></html>"
    )
    started = time.perf_counter()
    facts = page(html)
    assert time.perf_counter() - started < 5.0
    assert facts.title == "Deep"
    assert facts.h1 == ("bottom",)
    assert facts.links == (RawLink("/deep", "link", False, "a"),)
    assert facts.word_count == 5


def test_deep_nesting_guard_leaves_normal_pages_alone() -> None:
    normal = "<div><p>x</p></div>" * 3000
    assert guard_depth(normal) is normal
    flattened = flatten_deep_nesting("<div>" * 5 + "<script>'<div>'</script>x" + "</div>" * 5, max_depth=2)
    assert flattened == "<div><div>   <script>'<div>'</script>x   </div></div>"
    # Self-closing tags inside svg do not deepen the stack.
    svg = "<svg>" + "<path/>" * 10 + "</svg><div><div>x</div></div>"
    assert flatten_deep_nesting(svg, max_depth=3) == svg


@pytest.mark.parametrize(
    "html",
    [
        "<body>" + "<div></x>" * 50_000 + "z</body>",  # stray end tags must not hide depth
        "<body><y>" + "<div></y>" * 50_000 + "z</body>",
        "<body>" + "<span>" * 30_000 + "<div>w</div>" * 20_000 + "</body>",
        "<body>" + "<ul><li>" * 30_000 + "z</body>",
        "<body>" + "<b><section>" * 30_000 + "z</body>",
    ],
    ids=["stray-end", "stray-matching-deep", "inline-then-blocks", "lists", "formatting"],
)
def test_hostile_nesting_shapes_are_fast(html: str) -> None:
    started = time.perf_counter()
    facts = page(html)
    assert time.perf_counter() - started < 3.0
    assert facts.word_count >= 1


@settings(max_examples=150, deadline=None)
@given(
    body=st.binary(max_size=2048)
    | st.text(alphabet=st.sampled_from(list("<>/=\"' abc!-&#;\x00diva")), max_size=400).map(str.encode),
    content_type=st.sampled_from(
        [None, "text/html", "text/html; charset=utf-16", "text/html; charset=x", "a/b"]
    ),
    max_links=st.integers(min_value=0, max_value=3),
)
def test_never_raises_on_arbitrary_bytes(body: bytes, content_type: str | None, max_links: int) -> None:
    facts = extract_page(
        body, url=URL, content_type=content_type, headers={"X-Robots-Tag": "x"}, max_links=max_links
    )
    assert len(facts.links) <= max_links
    assert facts.word_count >= 0
    facts.to_row()
