"""Sitemap quality: lastmods in the future, unreadable or all the same, URLs on other hosts, and the
protocol's size limits at their real defaults (50,000 URLs, 50 MiB)."""

from __future__ import annotations

import pytest

from seolens_core.audit import PageRow, SiteAudit, lastmod_epoch, sitemap_quality
from seolens_core.sitemaps import (
    ALERT_SITEMAP_TOO_LARGE,
    ALERT_SITEMAP_TOO_MANY_URLS,
    SitemapEntry,
    SitemapParser,
    parse_sitemap,
)

NOW = 1_800_000_000.0  # 2027-01-15
SITEMAP = "https://example.com/sitemap.xml"


def entry(path: str, lastmod: str | None = None, host: str = "example.com") -> SitemapEntry:
    return SitemapEntry(f"https://{host}{path}", lastmod)


@pytest.mark.parametrize(
    ("value", "epoch"),
    [
        ("2024-05-01", 1714521600.0),
        ("2024-05", 1714521600.0),
        ("2024", 1704067200.0),
        ("2024-05-01T10:00:00+02:00", 1714550400.0),
        ("2024-05-01T08:00Z", 1714550400.0),
        ("2024-05-01T08:00:00.5Z", 1714550400.5),
        ("2024-13-01", None),
        ("01/05/2024", None),
        ("2024-05-01T08:00:00", None),  # a date-time needs its zone (W3C Datetime)
    ],
)
def test_w3c_datetime(value: str, epoch: float | None) -> None:
    assert lastmod_epoch(value) == epoch


def test_future_and_invalid_lastmods_say_how_many_and_which() -> None:
    entries = [
        entry("/a", "2030-01-01"),
        entry("/b", "2027-01-15T12:00:00Z"),  # within a day: time zones
        entry("/c", "last week"),
        entry("/d", "2020-01-01"),
        entry("/e"),
    ]
    assert sitemap_quality(SITEMAP, entries, NOW) == [
        ("ALERT_SITEMAP_LASTMOD_FUTURE", "1 of 5 entries: https://example.com/a (2030-01-01)"),
        ("ALERT_SITEMAP_LASTMOD_INVALID", "1 of 5 entries: https://example.com/c ('last week')"),
    ]


def test_the_same_lastmod_everywhere_needs_ten_entries_all_dated() -> None:
    same = [entry(f"/{i}", "2024-05-01") for i in range(10)]
    assert sitemap_quality(SITEMAP, same, NOW) == [
        ("ALERT_SITEMAP_LASTMOD_UNIFORM", "all 10 entries have lastmod 2024-05-01")
    ]
    assert sitemap_quality(SITEMAP, same[:9], NOW) == []
    assert sitemap_quality(SITEMAP, [*same, entry("/undated")], NOW) == []
    assert sitemap_quality(SITEMAP, [*same, entry("/x", "2024-05-02")], NOW) == []


def test_urls_on_other_hosts() -> None:
    entries = [entry("/a"), entry("/b", host="www.example.com"), entry("/c", host="cdn.example.org")]
    entries.append(SitemapEntry("https://elsewhere.example/child.xml", kind="sitemap"))  # an index entry
    assert sitemap_quality(SITEMAP, entries, NOW) == [
        (
            "ALERT_SITEMAP_OTHER_HOSTS",
            "2 of 3 URLs on other hosts than example.com: cdn.example.org, www.example.com",
        )
    ]


def test_non_indexable_sitemap_urls_are_counted_by_reason_with_their_target() -> None:
    rows = [
        PageRow("https://example.com/moved", 308, redirect_to="https://example.com/new", is_sitemap_url=True),
        PageRow("https://example.com/gone", 410, is_sitemap_url=True),
        PageRow("https://example.com/down", 503, is_sitemap_url=True),
        PageRow("https://example.com/copy", 200, canonical="https://example.com/orig", is_sitemap_url=True),
        PageRow("https://example.com/ok", 200, is_sitemap_url=True),
    ]
    audit = SiteAudit(rows)
    found = [
        (f.url, f.detail, f.related_url)
        for f in audit.page_findings()
        if f.code == "ALERT_SITEMAP_NON_INDEXABLE"
    ]
    assert found[0] == (
        "https://example.com/moved",
        "redirects (status 308) to https://example.com/new",
        "https://example.com/new",
    )
    assert audit.sitemap_non_indexable == {
        "redirect": 1,
        "client error": 1,
        "server error": 1,
        "canonicalised": 1,
    }


def test_protocol_limits_at_their_defaults() -> None:
    body = "".join(f"https://example.com/{i}\n" for i in range(50_001)).encode()
    entries, result = parse_sitemap(body)
    assert len(entries) == 50_000 and result.has(ALERT_SITEMAP_TOO_MANY_URLS)
    parser = SitemapParser()
    parser.feed(
        b'<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>https://example.com/</loc></url>'
    )
    chunk = b" " * (1 << 20)
    for _ in range(51):
        parser.feed(chunk)
    assert parser.close().has(ALERT_SITEMAP_TOO_LARGE)


def test_details_quote_at_most_200_characters_of_a_url() -> None:
    long = entry("/" + "a" * 2_000, "2099-01-01")
    [(code, detail)] = sitemap_quality(SITEMAP, [long], NOW)
    assert code == "ALERT_SITEMAP_LASTMOD_FUTURE" and len(detail) < 260
