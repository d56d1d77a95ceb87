"""SitemapParser on urlsets, indexes, text and gzip sitemaps, split at awkward places, and hostile input."""

from __future__ import annotations

import gzip
import zlib
from collections.abc import Iterable, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seolens_core.sitemaps import (
    ALERT_SITEMAP_DTD_REJECTED,
    ALERT_SITEMAP_INVALID_ENTRIES,
    ALERT_SITEMAP_MALFORMED,
    ALERT_SITEMAP_NOT_A_SITEMAP,
    ALERT_SITEMAP_TOO_LARGE,
    ALERT_SITEMAP_TOO_MANY_URLS,
    SitemapEntry,
    SitemapKind,
    SitemapLimits,
    SitemapParser,
    SitemapResult,
    parse_sitemap,
)

NS = "http://www.sitemaps.org/schemas/sitemap/0.9"


def urlset(locs: Iterable[str], *, ns: str | None = NS, lastmod: str | None = None) -> bytes:
    xmlns = f' xmlns="{ns}"' if ns is not None else ""
    lm = f"<lastmod>{lastmod}</lastmod>" if lastmod else ""
    body = "".join(f"<url><loc>{loc}</loc>{lm}</url>\n" for loc in locs)
    return f'<?xml version="1.0" encoding="UTF-8"?>\n<urlset{xmlns}>\n{body}</urlset>\n'.encode()


def index(locs: Iterable[str]) -> bytes:
    body = "".join(f"<sitemap><loc>{loc}</loc><lastmod>2024-05-01</lastmod></sitemap>" for loc in locs)
    return f'<?xml version="1.0"?><sitemapindex xmlns="{NS}">{body}</sitemapindex>'.encode()


def feed_in(
    parts: Sequence[bytes], limits: SitemapLimits | None = None
) -> tuple[list[SitemapEntry], SitemapResult]:
    parser = SitemapParser(limits)
    got: list[SitemapEntry] = []
    for part in parts:
        got.extend(parser.feed(part))
    result = parser.close()
    got.extend(result.tail)
    return got, result


def split_every(data: bytes, size: int) -> list[bytes]:
    return [data[i : i + size] for i in range(0, len(data), size)]


def locs(entries: Iterable[SitemapEntry]) -> list[str]:
    return [e.loc for e in entries]


URLS = [f"https://example.com/p/{i}?a=1&amp;b=2" for i in range(5)]
EXPECTED = [f"https://example.com/p/{i}?a=1&b=2" for i in range(5)]


# --- formats -----------------------------------------------------------------------------------


def test_urlset_entries_lastmod_and_optional_fields() -> None:
    doc = (
        f'<urlset xmlns="{NS}"><url><loc>https://a.test/x</loc><lastmod>2024-01-02T03:04:05+00:00</lastmod>'
        "<changefreq>daily</changefreq><priority>0.8</priority></url>"
        "<url><loc>https://a.test/y</loc></url></urlset>"
    ).encode()
    entries, result = parse_sitemap(doc)
    assert entries == [
        SitemapEntry("https://a.test/x", "2024-01-02T03:04:05+00:00", "url", "daily", "0.8"),
        SitemapEntry("https://a.test/y", None, "url", None, None),
    ]
    assert result.kind is SitemapKind.URLSET
    assert result.complete and result.entries == 2 and result.findings == ()
    assert not result.compressed


def test_index_children_are_sitemap_entries_with_lastmod() -> None:
    entries, result = parse_sitemap(index(["https://a.test/s1.xml", "https://a.test/s2.xml.gz"]))
    assert result.kind is SitemapKind.INDEX
    assert [(e.kind, e.loc, e.lastmod) for e in entries] == [
        ("sitemap", "https://a.test/s1.xml", "2024-05-01"),
        ("sitemap", "https://a.test/s2.xml.gz", "2024-05-01"),
    ]


@pytest.mark.parametrize(
    "ns",
    [
        None,
        NS,
        "https://www.sitemaps.org/schemas/sitemap/0.9/",
        "http://www.google.com/schemas/sitemap/0.84",
    ],
)
def test_standard_and_missing_namespace_accepted(ns: str | None) -> None:
    entries, result = parse_sitemap(urlset(URLS, ns=ns))
    assert locs(entries) == EXPECTED
    assert result.kind is SitemapKind.URLSET


def test_foreign_namespace_elements_are_ignored_but_hreflang_alternates_kept() -> None:
    doc = f"""<?xml version="1.0" encoding="UTF-8"?>
<urlset xmlns="{NS}" xmlns:image="http://www.google.com/schemas/sitemap-image/1.1"
        xmlns:news="http://www.google.com/schemas/sitemap-news/0.9" xmlns:xhtml="http://www.w3.org/1999/xhtml">
  <url>
    <loc>https://a.test/article</loc>
    <xhtml:link rel="alternate" hreflang="de" href="https://a.test/de/article"/>
    <image:image><image:loc>https://cdn.test/pic.jpg</image:loc></image:image>
    <news:news><news:publication_date>2024-01-01</news:publication_date></news:news>
    <lastmod>2023-12-31</lastmod>
  </url>
  <image:loc>https://cdn.test/stray.jpg</image:loc>
</urlset>""".encode()
    entries, result = parse_sitemap(doc)
    alternates = (("de", "https://a.test/de/article"),)
    assert entries == [SitemapEntry("https://a.test/article", "2023-12-31", alternates=alternates)]
    assert result.complete


def test_hreflang_alternates_need_rel_alternate_a_code_and_an_href_and_are_bounded() -> None:
    links = [
        '<xhtml:link rel="alternate" hreflang="EN-gb" href=" https://a.test/en "/>',
        '<xhtml:link rel="stylesheet" hreflang="fr" href="https://a.test/fr"/>',
        '<xhtml:link rel="alternate" href="https://a.test/nolang"/>',
        '<xhtml:link rel="alternate" hreflang="es"/>',
        '<link rel="alternate" hreflang="it" href="https://a.test/it"/>',  # the sitemap namespace: not xhtml
        *(f'<xhtml:link rel="alternate" hreflang="x{i}" href="https://a.test/{i}"/>' for i in range(300)),
    ]
    doc = (
        f'<urlset xmlns="{NS}" xmlns:xhtml="http://www.w3.org/1999/xhtml"><url><loc>https://a.test/</loc>'
        + "".join(links)
        + "</url><url><loc>https://a.test/next</loc></url></urlset>"
    ).encode()
    entries, _ = parse_sitemap(doc)
    first, second = entries
    assert first.alternates[0] == ("en-gb", "https://a.test/en")
    assert len(first.alternates) == 256 and second.alternates == ()


def test_sitemap_ns_element_inside_foreign_element_is_not_a_record() -> None:
    doc = f'<urlset xmlns="{NS}" xmlns:x="urn:x"><x:wrap><url><loc>https://a.test/n</loc></url></x:wrap></urlset>'
    entries, result = parse_sitemap(doc.encode())
    assert entries == [] and result.complete


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        (b"https://a.test/1\nhttps://a.test/2\n", ["https://a.test/1", "https://a.test/2"]),
        (b"https://a.test/1\r\nhttps://a.test/2", ["https://a.test/1", "https://a.test/2"]),
        (
            b"\xef\xbb\xbf  \n\nhttps://a.test/1\n   \nhttps://a.test/2  \n",
            ["https://a.test/1", "https://a.test/2"],
        ),
        ("https://a.test/caf\u00e9\n".encode(), ["https://a.test/caf\u00e9"]),
    ],
)
def test_text_sitemap(body: bytes, expected: list[str]) -> None:
    entries, result = parse_sitemap(body)
    assert locs(entries) == expected
    assert result.kind is SitemapKind.TEXT
    assert all(e.kind == "url" and e.lastmod is None for e in entries)


def test_text_sitemap_junk_lines_are_skipped_and_counted() -> None:
    entries, result = parse_sitemap(
        b"https://a.test/1\nnot a url\nftp://a.test/f\n/relative\nhttps://a.test/2"
    )
    assert locs(entries) == ["https://a.test/1", "https://a.test/2"]
    assert result.skipped == 3 and result.has(ALERT_SITEMAP_INVALID_ENTRIES)


def test_text_last_line_without_newline_arrives_in_tail() -> None:
    parser = SitemapParser()
    assert locs(parser.feed(b"https://a.test/1\nhttps://a.test/2")) == ["https://a.test/1"]
    assert locs(parser.close().tail) == ["https://a.test/2"]


def test_binary_junk_is_not_a_sitemap() -> None:
    entries, result = parse_sitemap(bytes(range(256)) * 4)
    assert entries == [] and result.kind is SitemapKind.UNKNOWN
    assert result.has(ALERT_SITEMAP_NOT_A_SITEMAP)


@pytest.mark.parametrize(
    "doc",
    [
        b"<!DOCTYPE html><html><body>Not found</body></html>",
        b"<html><head><title>404</title></head></html>",
        b'<rss version="2.0"><channel/></rss>',
    ],
)
def test_html_or_other_xml_is_not_a_sitemap(doc: bytes) -> None:
    entries, result = parse_sitemap(doc)
    assert entries == [] and result.kind is SitemapKind.UNKNOWN
    assert result.has(ALERT_SITEMAP_NOT_A_SITEMAP) and not result.complete


@pytest.mark.parametrize(
    ("declared", "raw", "expected"),
    [
        ("ISO-8859-1", "https://a.test/caf\u00e9".encode("latin-1"), "https://a.test/caf\u00e9"),
        ("UTF-8", "https://a.test/caf\u00e9".encode(), "https://a.test/caf\u00e9"),
    ],
)
def test_declared_xml_encoding_is_honoured(declared: str, raw: bytes, expected: str) -> None:
    doc = f'<?xml version="1.0" encoding="{declared}"?><urlset xmlns="{NS}"><url><loc>'.encode()
    entries, result = parse_sitemap(doc + raw + b"</loc></url></urlset>")
    assert locs(entries) == [expected] and result.complete


def test_unknown_xml_encoding_is_malformed() -> None:
    _, result = parse_sitemap(b'<?xml version="1.0" encoding="x-bogus"?><urlset/>')
    assert result.has(ALERT_SITEMAP_MALFORMED)


def test_one_huge_binary_line_is_not_a_text_sitemap() -> None:
    entries, result = parse_sitemap(b"\x00junk" * 2000)
    assert entries == [] and result.kind is SitemapKind.UNKNOWN and result.has(ALERT_SITEMAP_NOT_A_SITEMAP)


def test_empty_body() -> None:
    entries, result = parse_sitemap(b"")
    assert entries == [] and result.kind is SitemapKind.UNKNOWN and result.has(ALERT_SITEMAP_MALFORMED)


# --- gzip ---------------------------------------------------------------------------------------


def test_gzip_detected_by_magic_bytes_not_name() -> None:
    # The caller fetched "https://a.test/sitemap.xml" served as text/xml, but the body is gzip.
    entries, result = parse_sitemap(gzip.compress(urlset(URLS)))
    assert locs(entries) == EXPECTED
    assert result.compressed and result.kind is SitemapKind.URLSET
    assert result.bytes_decompressed == len(urlset(URLS))


def test_gz_name_but_already_decoded_by_the_http_client() -> None:
    # "sitemap.xml.gz" with Content-Encoding: gzip, which httpx undid: plain XML arrives.
    entries, result = parse_sitemap(urlset(URLS))
    assert locs(entries) == EXPECTED and not result.compressed


def test_double_gzip_and_multi_member_gzip() -> None:
    doc = urlset(URLS)
    assert locs(parse_sitemap(gzip.compress(gzip.compress(doc)))[0]) == EXPECTED
    half = len(doc) // 2
    entries, result = parse_sitemap(gzip.compress(doc[:half]) + gzip.compress(doc[half:]))
    assert locs(entries) == EXPECTED and result.complete


def test_gzip_text_sitemap() -> None:
    entries, result = parse_sitemap(gzip.compress(b"https://a.test/1\nhttps://a.test/2\n"))
    assert locs(entries) == ["https://a.test/1", "https://a.test/2"] and result.kind is SitemapKind.TEXT


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64])
def test_gzip_split_across_chunk_boundaries(size: int) -> None:
    entries, result = feed_in(split_every(gzip.compress(urlset(URLS, lastmod="2024-02-02")), size))
    assert locs(entries) == EXPECTED and all(e.lastmod == "2024-02-02" for e in entries)
    assert result.complete and result.compressed


def test_truncated_gzip_keeps_entries_and_reports() -> None:
    doc = urlset([f"https://a.test/{i}" for i in range(2000)])
    packed = gzip.compress(doc)
    entries, result = parse_sitemap(packed[: len(packed) // 2])
    assert 0 < len(entries) < 2000
    [finding] = result.findings
    assert finding.position == result.bytes_decompressed and "truncated" in finding.detail
    assert locs(entries) == [f"https://a.test/{i}" for i in range(len(entries))]
    assert result.has(ALERT_SITEMAP_MALFORMED) and not result.complete


def test_corrupt_gzip_is_malformed() -> None:
    packed = bytearray(gzip.compress(urlset(URLS)))
    packed[12:40] = b"\xff" * 28
    _, result = parse_sitemap(bytes(packed))
    assert result.has(ALERT_SITEMAP_MALFORMED) and not result.complete


def test_garbage_after_gzip_member_is_ignored() -> None:
    entries, result = parse_sitemap(gzip.compress(urlset(URLS)) + b"\x00" * 100)
    assert locs(entries) == EXPECTED and result.complete


# --- chunk boundaries ---------------------------------------------------------------------------


@pytest.mark.parametrize("size", [1, 2, 3, 5, 11, 17])
def test_chunk_boundaries_inside_tags_and_text(size: int) -> None:
    doc = b"\xef\xbb\xbf\n  " + urlset(URLS, lastmod="2024-03-03")
    entries, result = feed_in(split_every(doc, size))
    assert locs(entries) == EXPECTED and result.complete


@pytest.mark.parametrize("cut", range(0, 120, 7))
def test_every_two_way_split_gives_the_same_entries(cut: int) -> None:
    doc = urlset(URLS)
    entries, _ = feed_in([doc[:cut], doc[cut:]])
    assert locs(entries) == EXPECTED


def test_entries_are_returned_as_they_complete() -> None:
    doc = urlset(URLS)
    parser = SitemapParser()
    first_end = doc.index(b"</url>") + len(b"</url>")
    assert parser.feed(doc[: first_end - 1]) == []
    assert locs(parser.feed(doc[first_end - 1 : first_end])) == EXPECTED[:1]
    assert locs(parser.feed(doc[first_end:])) == EXPECTED[1:]
    assert parser.close().entries == 5


@settings(max_examples=60, deadline=None)
@given(
    urls=st.lists(st.from_regex(r"https://[a-z]{1,10}\.test/[a-z0-9/_-]{0,30}", fullmatch=True), max_size=30),
    gz=st.booleans(),
    cuts=st.lists(st.integers(min_value=0, max_value=4000), max_size=12),
)
def test_property_any_chunking_yields_the_same_entries(urls: list[str], gz: bool, cuts: list[int]) -> None:
    doc = urlset(urls)
    data = gzip.compress(doc) if gz else doc
    points = sorted({c % (len(data) + 1) for c in cuts})
    parts = [data[a:b] for a, b in zip([0, *points], [*points, len(data)], strict=True)]
    entries, result = feed_in(parts)
    assert locs(entries) == urls
    assert result.complete and result.entries == len(urls)


@settings(max_examples=300, deadline=None)
@given(data=st.binary(max_size=2048), chunk=st.integers(min_value=1, max_value=300), gz=st.booleans())
def test_property_arbitrary_bytes_never_raise(data: bytes, chunk: int, gz: bool) -> None:
    body = gzip.compress(data) if gz else data
    entries, result = feed_in(split_every(body, chunk))
    assert result.entries == len(entries)
    assert all(e.loc[:8].lower().startswith(("http://", "https://")) for e in entries)


@settings(max_examples=150, deadline=None)
@given(
    prefix=st.sampled_from([b"", b"<?xml version='1.0'?>", b"\x1f\x8b", b"<urlset>", b"https://a.test/\n"]),
    data=st.binary(max_size=512),
)
def test_property_plausible_prefixes_with_junk_never_raise(prefix: bytes, data: bytes) -> None:
    entries, result = parse_sitemap(prefix + data)
    assert result.entries == len(entries)


# --- malformed ----------------------------------------------------------------------------------


def test_malformed_tail_keeps_earlier_entries_with_position() -> None:
    good = urlset(URLS).replace(b"</urlset>\n", b"")
    doc = good + b"<url><loc>https://a.test/broken</loc></uurl>" + urlset(["https://a.test/never"])
    entries, result = parse_sitemap(doc)
    assert locs(entries) == EXPECTED
    [finding] = [f for f in result.findings if f.code == ALERT_SITEMAP_MALFORMED]
    assert finding.position is not None and len(good) < finding.position < len(doc)
    assert "line" in finding.detail and not result.complete
    assert result.kind is SitemapKind.URLSET


def test_truncated_xml_keeps_complete_records() -> None:
    doc = urlset(URLS)
    entries, result = parse_sitemap(doc[: doc.index(b"/4") + 3])
    assert locs(entries) == EXPECTED[:4]
    assert result.has(ALERT_SITEMAP_MALFORMED)


def test_undefined_entity_without_dtd_is_malformed() -> None:
    entries, result = parse_sitemap(f'<urlset xmlns="{NS}"><url><loc>&evil;</loc></url></urlset>'.encode())
    assert entries == [] and result.has(ALERT_SITEMAP_MALFORMED)


def test_invalid_locs_are_skipped_and_counted() -> None:
    long_loc = "https://a.test/" + "x" * 3000
    doc = f"""<urlset xmlns="{NS}">
      <url><loc>https://a.test/ok</loc></url>
      <url><loc>   </loc></url>
      <url><lastmod>2024-01-01</lastmod></url>
      <url><loc>/relative/path</loc></url>
      <url><loc>javascript:alert(1)</loc></url>
      <url><loc>{long_loc}</loc></url>
      <url><loc>https://a.test/ok2</loc><lastmod>{"9" * 500}</lastmod></url>
    </urlset>""".encode()
    entries, result = parse_sitemap(doc)
    assert entries == [SitemapEntry("https://a.test/ok"), SitemapEntry("https://a.test/ok2", None)]
    assert result.skipped == 5 and result.has(ALERT_SITEMAP_INVALID_ENTRIES) and result.complete


def test_loc_at_exactly_the_limit_is_kept() -> None:
    loc = "https://a.test/" + "y" * (2048 - len("https://a.test/"))
    entries, _ = parse_sitemap(urlset([loc, loc + "z"]))
    assert locs(entries) == [loc]


# --- hostile input ------------------------------------------------------------------------------

BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>https://a.test/&lol9;</loc></url></urlset>
"""

XXE = b"""<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE urlset [ <!ENTITY xxe SYSTEM "file:///etc/passwd"> ]>
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>https://a.test/&xxe;</loc></url></urlset>
"""

XXE_PARAMETER = b"""<?xml version="1.0"?>
<!DOCTYPE urlset SYSTEM "http://127.0.0.1:9/evil.dtd">
<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>https://a.test/ok</loc></url></urlset>
"""


@pytest.mark.parametrize(
    "doc", [BILLION_LAUGHS, XXE, XXE_PARAMETER], ids=["billion-laughs", "xxe-file", "xxe-dtd"]
)
@pytest.mark.parametrize("gz", [False, True])
def test_dtd_and_entities_rejected_without_expansion(doc: bytes, gz: bool) -> None:
    entries, result = feed_in(split_every(gzip.compress(doc) if gz else doc, 16))
    assert entries == []
    assert result.has(ALERT_SITEMAP_DTD_REJECTED) and not result.complete
    assert all("root:" not in f.detail and "lol" * 4 not in f.detail for f in result.findings)
    # Parsing stopped at the DOCTYPE: nothing after it was decoded into entries or counted past the doc.
    assert result.bytes_decompressed <= len(doc)


def test_dtd_rejected_before_any_entity_declaration_is_read() -> None:
    _, result = parse_sitemap(XXE)
    [finding] = result.findings
    assert finding.code == ALERT_SITEMAP_DTD_REJECTED
    assert finding.position is not None
    assert XXE.index(b"<!DOCTYPE") <= finding.position < XXE.index(b"<!ENTITY")


def test_uncompressed_input_over_the_cap_stops() -> None:
    limits = SitemapLimits(max_uncompressed_bytes=10_000)
    doc = urlset([f"https://a.test/{i:05d}" for i in range(1000)])
    entries, result = feed_in(split_every(doc, 4096), limits)
    assert result.has(ALERT_SITEMAP_TOO_LARGE) and not result.complete
    assert result.bytes_decompressed == 10_000
    assert 0 < len(entries) < 1000
    assert locs(entries) == [f"https://a.test/{i:05d}" for i in range(len(entries))]


def test_gzip_bomb_stops_at_the_decompression_cap_without_inflating_it_all() -> None:
    limits = SitemapLimits(max_uncompressed_bytes=2 * 1024 * 1024, max_compression_ratio=1e9)
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    bomb = z.compress(b"<urlset>") + z.compress(b" " * (64 * 1024 * 1024)) + z.flush()
    assert len(bomb) < 100_000
    parser = SitemapParser(limits)
    parser.feed(bomb)
    assert parser.buffered_bytes <= len(bomb) + 64 * 1024
    result = parser.close()
    assert result.has(ALERT_SITEMAP_TOO_LARGE)
    assert result.bytes_decompressed == limits.max_uncompressed_bytes


def test_gzip_bomb_stops_on_the_compression_ratio_first() -> None:
    z = zlib.compressobj(9, zlib.DEFLATED, 31)
    bomb = z.compress(b"<urlset>") + z.compress(b" " * (32 * 1024 * 1024)) + z.flush()
    _, result = parse_sitemap(bomb)
    [finding] = result.findings
    assert finding.code == ALERT_SITEMAP_TOO_LARGE and "ratio" in finding.detail
    assert result.bytes_decompressed < 32 * 1024 * 1024


def test_giant_xml_token_is_refused() -> None:
    limits = SitemapLimits(max_token_bytes=100_000)
    doc = f'<urlset xmlns="{NS}"><url><loc>https://a.test/1</loc></url><!--'.encode() + b"x" * 400_000
    parser = SitemapParser(limits)
    got: list[SitemapEntry] = []
    for part in split_every(doc, 16 * 1024):
        got.extend(parser.feed(part))
        assert parser.buffered_bytes <= 100_000 + 16 * 1024
    result = parser.close()
    assert locs(got) == ["https://a.test/1"]
    assert result.has(ALERT_SITEMAP_MALFORMED) and "token" in result.findings[0].detail


def test_giant_loc_text_is_not_buffered() -> None:
    doc = f'<urlset xmlns="{NS}"><url><loc>https://a.test/'.encode()
    parser = SitemapParser()
    parser.feed(doc)
    for _ in range(50):
        parser.feed(b"a" * 20_000)
        assert parser.buffered_bytes < 2048 + 256 + 20_000
    parser.feed(b"</loc></url></urlset>")
    result = parser.close()
    assert result.entries == 0 and result.skipped == 1 and result.complete


def test_more_than_max_urls_stops_after_exactly_the_limit() -> None:
    limits = SitemapLimits(max_urls=100)
    entries, result = parse_sitemap(urlset([f"https://a.test/{i}" for i in range(150)]), limits)
    assert len(entries) == 100 and result.entries == 100
    assert result.has(ALERT_SITEMAP_TOO_MANY_URLS) and not result.complete


def test_exactly_max_urls_is_fine() -> None:
    limits = SitemapLimits(max_urls=100)
    entries, result = parse_sitemap(urlset([f"https://a.test/{i}" for i in range(100)]), limits)
    assert len(entries) == 100 and result.complete and result.findings == ()


@pytest.mark.parametrize("size", [3, 1000])
def test_text_sitemap_obeys_url_limit_and_reports_the_line(size: int) -> None:
    body = "".join(f"https://a.test/{i}\n" for i in range(20)).encode()
    entries, result = feed_in(split_every(body, size), SitemapLimits(max_urls=5))
    assert len(entries) == 5
    [finding] = result.findings
    assert finding.code == ALERT_SITEMAP_TOO_MANY_URLS and finding.position == body.index(b"https://a.test/5")


def test_feed_after_close_is_a_programming_error() -> None:
    parser = SitemapParser()
    parser.close()
    with pytest.raises(RuntimeError):
        parser.feed(b"x")
    assert parser.close() is parser.close()


@pytest.mark.parametrize(
    "kwargs",
    [{"max_urls": 0}, {"max_uncompressed_bytes": -1}, {"max_compression_ratio": 1.0}, {"max_loc_length": 0}],
)
def test_limits_validate(kwargs: dict[str, float]) -> None:
    with pytest.raises(ValueError):
        SitemapLimits(**kwargs)  # type: ignore[arg-type]
