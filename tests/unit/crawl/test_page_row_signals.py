"""page_row: the headers search engines read (X-Robots-Tag, Link) reach the row and its findings, HTML or not."""

from __future__ import annotations

from typing import Any

from seolens_core.crawl._links import CrawlScope
from seolens_core.crawl._pages import page_row
from seolens_core.fetch import FetchResult
from seolens_core.frontier import FrontierMessage
from seolens_core.settings import CrawlSettings
from seolens_core.urls import NormalizedURL, normalize, url_key_hex

SITE = "https://example.com"
SETTINGS = CrawlSettings(start_urls=(SITE + "/",))
SCOPE = CrawlScope.from_settings(SETTINGS, 0.0)


def fetched(path: str, body: bytes, content_type: str, status: int = 200, **headers: str) -> dict[str, Any]:
    url = normalize(SITE + path)
    assert isinstance(url, NormalizedURL)
    msg = FrontierMessage(crawl_id="c1", url=url.url, key=url_key_hex(url.url), depth=1)
    all_headers = {"content-type": content_type, **{k.replace("_", "-"): v for k, v in headers.items()}}
    result = FetchResult(url=url.url, status=status, headers=all_headers, body=body, ttfb_ms=10.0)
    row, _ = page_row(msg, url, result, SCOPE, SETTINGS)
    return row


def test_a_pdf_row_has_its_x_robots_tag_and_header_canonical() -> None:
    row = fetched(
        "/doc.pdf", b"%PDF-1.4", "application/pdf", x_robots_tag="noindex", link="</doc>; rel=canonical"
    )
    assert row["noindex"] is True and row["x_robots_tag"] == "noindex"
    assert row["canonical"] == SITE + "/doc" and row["canonical_header"] == SITE + "/doc"
    assert {"ALERT_NOINDEX", "ALERT_CANONICAL_ELSEWHERE", "ALERT_NOINDEX_AND_CANONICAL"} <= set(row["alerts"])


def test_html_canonical_resolves_against_base_and_header_against_the_url() -> None:
    body = b'<html><head><base href="/dir/"><link rel="canonical" href="page"></head><body>x</body></html>'
    row = fetched("/a/b", body, "text/html", link='<other>; rel="canonical"')
    assert row["canonical"] == SITE + "/dir/page"
    assert row["canonical_header"] == SITE + "/a/other"
    assert "ALERT_CANONICAL_MULTIPLE" in row["alerts"]
    assert "2 different canonicals" in row["alert_details"]["ALERT_CANONICAL_MULTIPLE"]


def test_an_expired_unavailable_after_makes_the_row_noindex() -> None:
    row = fetched("/old", b"<p>old news</p>", "text/html", x_robots_tag="unavailable_after: 2001-01-01")
    assert row["noindex"] is True and row["unavailable_after"] == "2001-01-01"
    assert "ALERT_NOINDEX" in row["alerts"]


def test_hreflang_from_html_and_header_normalized_and_named_urls_crawled_without_edges() -> None:
    body = (
        b'<html><head><link rel="alternate" hreflang="de" href="/de"><link rel="canonical" href="/en/">'
        b'</head><body><a href="/linked">l</a></body></html>'
    )
    url = normalize(SITE + "/en")
    assert isinstance(url, NormalizedURL)
    msg = FrontierMessage(crawl_id="c1", url=url.url, key=url_key_hex(url.url), depth=1)
    headers = {"content-type": "text/html", "link": '</fr>; rel="alternate"; hreflang="fr"'}
    result = FetchResult(url=url.url, status=200, headers=headers, body=body, ttfb_ms=10.0)
    row, plan = page_row(msg, url, result, SCOPE, SETTINGS)
    assert row["hreflang"] == [["de", SITE + "/de"], ["fr", SITE + "/fr"]]
    assert plan is not None
    assert [e["target"] for e in plan.edges] == [SITE + "/linked"]
    assert sorted(m.url for m in plan.enqueue) == [
        SITE + "/de",
        SITE + "/en/",
        SITE + "/fr",
        SITE + "/linked",
    ]
    assert {m.depth for m in plan.enqueue} == {2}


def test_a_meta_refresh_is_a_redirect_row_and_edge() -> None:
    body = b'<html><head><meta http-equiv="refresh" content="0; url=/new"></head><body>moved</body></html>'
    url = normalize(SITE + "/old")
    assert isinstance(url, NormalizedURL)
    msg = FrontierMessage(crawl_id="c1", url=url.url, key=url_key_hex(url.url), depth=1)
    result = FetchResult(url=url.url, status=200, headers={"content-type": "text/html"}, body=body)
    row, plan = page_row(msg, url, result, SCOPE, SETTINGS)
    assert (row["redirect_type"], row["meta_refresh_to"], row["meta_refresh"]) == (
        "meta refresh",
        SITE + "/new",
        "0; url=/new",
    )
    assert "ALERT_META_REFRESH" in row["alerts"]
    assert plan is not None
    assert [(e["target"], e.get("redirect"), e["depth"]) for e in plan.edges] == [(SITE + "/new", True, 1)]
    assert [(m.url, m.depth) for m in plan.enqueue] == [(SITE + "/new", 1)]


def test_http_urls_of_an_https_crawl_and_307_308_rows() -> None:
    assert fetched("/plain", b"<p>x</p>", "text/html")["redirect_type"] is None
    row = fetched("/tmp", b"", "text/html", status=307, location="/final")
    assert row["redirect_type"] == "temporary" and "ALERT_REDIRECT_TEMPORARY" in row["alerts"]
    assert fetched("/perm", b"", "text/html", status=308, location="/final")["redirect_type"] == "permanent"
    url = normalize("http://example.com/insecure")
    assert isinstance(url, NormalizedURL)
    msg = FrontierMessage(crawl_id="c1", url=url.url, key=url_key_hex(url.url), depth=1)
    result = FetchResult(url=url.url, status=200, headers={"content-type": "text/html"}, body=b"<p>x</p>")
    row, _ = page_row(msg, url, result, SCOPE, SETTINGS)  # the crawl starts on https://example.com/
    assert {"ALERT_HTTP_PAGE_ON_HTTPS_SITE", "ALERT_HTTPS_REDIRECT_MISSING"} <= set(row["alerts"])


def _http_row(url_text: str, **flags: bool) -> tuple[dict[str, Any], Any]:
    url = normalize(url_text)
    assert isinstance(url, NormalizedURL)
    msg = FrontierMessage(crawl_id="c1", url=url.url, key=url_key_hex(url.url), depth=0, **flags)
    body = b'<html><head><link rel="canonical" href="/c"></head><body><a href="/about">a</a></body></html>'
    result = FetchResult(url=url.url, status=200, headers={"content-type": "text/html"}, body=body)
    return page_row(msg, url, result, SCOPE, SETTINGS)


def test_the_http_probe_is_audited_but_names_nothing_to_crawl() -> None:
    row, plan = _http_row("http://example.com/", probe=True)
    assert {"ALERT_HTTP_PAGE_ON_HTTPS_SITE", "ALERT_HTTPS_REDIRECT_MISSING"} <= set(row["alerts"])
    assert plan is None  # its links would crawl the site's http copy
    _, linked = _http_row("http://example.com/")  # the same page reached by a link is crawled on
    assert linked is not None and {m.url for m in linked.enqueue} == {
        "http://example.com/about",
        "http://example.com/c",
    }


def test_an_external_http_url_is_no_page_of_the_https_site() -> None:
    row, _ = _http_row("http://elsewhere.example/page", check_only=True)
    assert not {"ALERT_HTTP_PAGE_ON_HTTPS_SITE", "ALERT_HTTPS_REDIRECT_MISSING"} & set(row["alerts"])


def test_https_start_urls_get_an_http_probe_on_the_default_port_only() -> None:
    from seolens_core.crawl._seed import https_probes

    settings = CrawlSettings(
        start_urls=(
            "https://example.com/",
            "https://example.com/shop",
            "http://plain.example/",
            "https://x.example:8443/",
        )
    )
    probes = https_probes(CrawlScope.from_settings(settings, 0.0))
    assert [u.url for u in probes] == ["http://example.com/", "http://example.com/shop"]


def test_a_page_with_thousands_of_alternates_keeps_the_first_256() -> None:
    links = "".join(f'<link rel="alternate" hreflang="x{i}" href="/v{i}">' for i in range(3_000))
    row = fetched("/many", f"<html><head>{links}</head><body>x</body></html>".encode(), "text/html")
    assert len(row["hreflang"]) == 256 and row["hreflang"][0] == ["x0", SITE + "/v0"]
