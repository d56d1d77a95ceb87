"""site_findings: duplicates, links, redirects, canonicals, hreflang, sitemap and orphans."""

from __future__ import annotations

from collections.abc import Iterable

from seolens_core.audit import Finding, LinkRow, PageRow, site_findings

S = "https://example.com"


def page(path: str, status: int | None = 200, **kwargs: object) -> PageRow:
    kwargs.setdefault("hsts", "max-age=31536000")  # the https site protects itself (else ALERT_HSTS_MISSING)
    return PageRow(url=S + path, status=status, **kwargs)  # type: ignore[arg-type]


def link(source: str, target: str, internal: bool = True) -> LinkRow:
    return LinkRow(S + source, target if target.startswith("http") else S + target, internal)


def run(
    pages: Iterable[PageRow], links: Iterable[LinkRow] = (), **kwargs: object
) -> list[tuple[str, str, str | None]]:
    findings: list[Finding] = list(site_findings(pages, links, **kwargs))  # type: ignore[arg-type]
    return [(f.code, f.url.removeprefix(S), (f.related_url or "").removeprefix(S) or None) for f in findings]


def test_duplicate_title_description_and_content() -> None:
    pages = [
        page("/a", title="Same", meta_desc="D1", content_hash="h1"),
        page("/b", title="Same", meta_desc="D1", content_hash="h2"),
        page("/c", title="Same", meta_desc="D2", content_hash="h2"),
        page("/d", title="Unique", meta_desc="D3", content_hash="h3"),
        # Not indexable or not internal: never counted as duplicates.
        page("/e", title="Same", noindex=True),
        page("/f", title="Same", canonical=S + "/a"),
        page("/g", 404, title="Same"),
        page("/h", title="Same", waf_provider="Cloudflare"),
        page("/x", title="Same", internal=False),
    ]
    assert run(pages) == [
        ("ALERT_TITLE_DUPLICATE", "/a", "/b"),
        ("ALERT_TITLE_DUPLICATE", "/b", "/a"),
        ("ALERT_TITLE_DUPLICATE", "/c", "/a"),
        ("ALERT_META_DESC_DUPLICATE", "/a", "/b"),
        ("ALERT_META_DESC_DUPLICATE", "/b", "/a"),
        ("ALERT_DUPLICATE_CONTENT", "/b", "/c"),
        ("ALERT_DUPLICATE_CONTENT", "/c", "/b"),
    ]


def test_duplicate_detail_counts_pages() -> None:
    findings = list(site_findings([page("/a", title="T"), page("/b", title="T"), page("/c", title="T")], []))
    assert {f.detail for f in findings} == {"3 pages share this title"}


def test_broken_links_and_links_to_redirects_name_their_sources() -> None:
    pages = [
        page("/"),
        page("/gone", 404),
        page("/down", 500),
        page("/moved", 301, redirect_to=S + "/"),
        page("/blocked", 403, waf_provider="Akamai"),
        PageRow("https://other.org/dead", 410, internal=False),
        PageRow("https://other.org/nxdomain", None, error="dns", internal=False),
        PageRow("https://other.org/ok", 200, internal=False),
    ]
    links = [
        link("/", "/gone"),
        link("/", "/gone"),  # same edge twice: one finding
        link("/", "/down"),
        link("/", "/moved"),
        link("/", "/blocked"),  # a challenge is not a broken link
        link("/", "/never-crawled"),
        link("/", "https://other.org/dead", internal=False),
        link("/", "https://other.org/nxdomain", internal=False),
        link("/", "https://other.org/ok", internal=False),
        link("/gone", "/gone"),
    ]
    findings = list(site_findings(pages, links))
    assert [(f.code, f.url, f.related_url, f.detail) for f in findings] == [
        ("ALERT_BROKEN_INTERNAL_LINK", S + "/", S + "/gone", "status 404"),
        ("ALERT_BROKEN_INTERNAL_LINK", S + "/", S + "/down", "status 500"),
        ("ALERT_INTERNAL_LINK_TO_REDIRECT", S + "/", S + "/moved", "status 301"),
        ("ALERT_BROKEN_EXTERNAL_LINK", S + "/", "https://other.org/dead", "status 410"),
        ("ALERT_BROKEN_EXTERNAL_LINK", S + "/", "https://other.org/nxdomain", "fetch error: dns"),
        ("ALERT_BROKEN_INTERNAL_LINK", S + "/gone", S + "/gone", "status 404"),
    ]


def test_redirect_chains_and_loops_from_hop_rows() -> None:
    pages = [
        page("/a", 301, redirect_to=S + "/b"),
        page("/b", 302, redirect_to=S + "/c"),
        page("/c", 301, redirect_to=S + "/d"),
        page("/d"),
        page("/single", 301, redirect_to=S + "/d"),
        page("/x", 301, redirect_to=S + "/y"),
        page("/y", 301, redirect_to=S + "/x"),
        page("/self", 301, redirect_to=S + "/self"),
    ]
    findings = [f for f in site_findings(pages, []) if f.code.startswith("ALERT_REDIRECT")]
    assert [(f.code, f.url.removeprefix(S), f.detail.replace(S, "")) for f in findings] == [
        ("ALERT_REDIRECT_CHAIN", "/a", "3 hops: /a -> /b -> /c -> /d"),
        ("ALERT_REDIRECT_CHAIN", "/b", "2 hops: /b -> /c -> /d"),
        ("ALERT_REDIRECT_LOOP", "/self", "/self -> /self"),
        ("ALERT_REDIRECT_LOOP", "/x", "/x -> /y -> /x"),
        ("ALERT_REDIRECT_LOOP", "/y", "/y -> /x -> /y"),
    ]


def test_canonical_non_200_and_chain() -> None:
    pages = [
        page("/a", canonical=S + "/gone"),
        page("/gone", 404),
        page("/b", canonical=S + "/moved"),
        page("/moved", 301, redirect_to=S + "/final"),
        page("/c", canonical=S + "/mid"),
        page("/mid", canonical=S + "/end"),
        page("/end", canonical=S + "/end"),
        page("/d", canonical=S + "/end"),  # fine: target is self-canonical
        page("/e", canonical=S + "/not-crawled"),
        page("/f", canonical=S + "/challenged"),
        page("/challenged", 403, waf_provider="DataDome"),
    ]
    assert [r for r in run(pages) if r[0].startswith("ALERT_CANONICAL")] == [
        ("ALERT_CANONICAL_NON_200", "/a", "/gone"),
        ("ALERT_CANONICAL_NON_200", "/b", "/moved"),
        ("ALERT_CANONICAL_CHAIN", "/c", "/mid"),
    ]


def test_hreflang_without_return_link() -> None:
    pages = [
        page("/en", hreflang=(("en", S + "/en"), ("de", S + "/de"), ("fr", S + "/fr"), ("es", S + "/es"))),
        page("/de", hreflang=(("de", S + "/de"), ("en", S + "/en"))),
        page("/fr", hreflang=(("fr", S + "/fr"),)),
        # /es not crawled: nothing to compare against.
    ]
    findings = [f for f in site_findings(pages, []) if f.code == "ALERT_HREFLANG_NO_RETURN"]
    assert [(f.url, f.related_url, f.detail) for f in findings] == [
        (S + "/en", S + "/fr", "hreflang fr: no return link")
    ]


def test_sitemap_non_indexable_and_orphans() -> None:
    pages = [
        page("/", is_sitemap_url=True),
        page("/linked", is_sitemap_url=True),
        page("/orphan", is_sitemap_url=True),
        page("/noindex", is_sitemap_url=True, noindex=True),
        page("/missing", 404, is_sitemap_url=True),
        page("/redirect", 301, redirect_to=S + "/linked"),
        page("/canon", canonical=S + "/linked"),
        page("/robots", None, robots_disallowed=True),
        page("/waf", 403, is_sitemap_url=True, waf_provider="Imperva"),
    ]
    links = [
        link("/", "/linked"),
        link("/", "/noindex"),
        link("/", "/missing"),
        link("/", "/redirect"),
        link("/", "/canon"),
        link("/", "/robots"),
        link("/", "/waf"),
        link("/orphan", "/orphan"),  # self-links do not count
        link("/", "/", internal=True),
    ]
    extra = {S + "/redirect", S + "/canon", S + "/robots"}
    found = [r for r in run(pages, links, sitemap_urls=extra) if "SITEMAP" in r[0] or "ORPHAN" in r[0]]
    assert found == [
        ("ALERT_SITEMAP_NON_INDEXABLE", "/noindex", None),
        ("ALERT_SITEMAP_NON_INDEXABLE", "/missing", None),
        ("ALERT_SITEMAP_NON_INDEXABLE", "/redirect", "/linked"),
        ("ALERT_SITEMAP_NON_INDEXABLE", "/canon", "/linked"),
        ("ALERT_SITEMAP_NON_INDEXABLE", "/robots", None),
        ("ALERT_GRAPH_ORPHAN_PAGE", "/", None),
        ("ALERT_GRAPH_ORPHAN_PAGE", "/orphan", None),
    ]
    reasons = {
        f.url.removeprefix(S): f.detail
        for f in site_findings(pages, [], sitemap_urls=extra)
        if f.code == "ALERT_SITEMAP_NON_INDEXABLE"
    }
    assert reasons["/robots"] == "blocked by robots.txt"
    assert reasons["/canon"] == f"canonicalised to {S}/linked"


def test_orphans_from_given_inlink_counts() -> None:
    pages = [page("/a", is_sitemap_url=True), page("/b", is_sitemap_url=True)]
    assert run(pages, [], inlinks={S + "/a": 3}) == [("ALERT_GRAPH_ORPHAN_PAGE", "/b", None)]


def test_links_are_streamed_once() -> None:
    consumed = []

    def stream() -> Iterable[LinkRow]:
        for i in range(3):
            consumed.append(i)
            yield link("/", f"/p{i}")

    findings = site_findings([page("/p0", 404)], stream())
    assert consumed == []  # lazy until iterated
    assert len(list(findings)) == 1 and consumed == [0, 1, 2]


def test_rows_from_jsonl_mappings() -> None:
    row = PageRow.from_mapping(
        {"url": S + "/a", "status": "200", "hreflang": [["de", S + "/de"]], "waf_provider": None, "extra": 1}
    )
    assert row == PageRow(S + "/a", 200, hreflang=(("de", S + "/de"),))
    assert row.indexable
    edge = LinkRow.from_mapping({"source": S + "/", "target": S + "/a", "internal": True})
    assert edge == LinkRow(S + "/", S + "/a", True, False)
