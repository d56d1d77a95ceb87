"""Security and transport: redirect kinds (307/308 with 301/302, meta refresh), http on an https site, the
http to https redirect, mixed content, HSTS per host."""

from __future__ import annotations

import pytest

from seolens_core.audit import (
    FetchFacts,
    PageRow,
    audit_page,
    detect_waf,
    hsts_ok,
    redirect_type,
    site_findings,
)
from seolens_core.html import extract_page, parse_refresh
from seolens_core.report_html._signals import SIGNAL_LINES

HTTPS = "https://example.com/page"
HTTP = "http://example.com/page"
TRANSPORT = {
    code for family, lines in SIGNAL_LINES if family == "Security and transport" for code, _ in lines
}


def found(
    url: str, status: int, body: str = "<p>x</p>", redirect_to: str | None = None, https_site: bool = True
) -> dict[str, str]:
    facts = extract_page(body.encode(), url=url, content_type="text/html")
    fetch = FetchFacts(status, url, content_type="text/html", redirect_to=redirect_to)
    return {f.code: f.detail for f in audit_page(facts, fetch, https_site=https_site) if f.code in TRANSPORT}


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (301, "permanent"),
        (308, "permanent"),
        (302, "temporary"),
        (303, "temporary"),
        (307, "temporary"),
        (304, None),
        (200, None),
    ],
)
def test_redirect_statuses_are_permanent_or_temporary(status: int, kind: str | None) -> None:
    assert redirect_type(status) == kind
    codes = found(HTTPS, status, redirect_to="https://example.com/new")
    assert ("ALERT_REDIRECT_TEMPORARY" in codes) == (kind == "temporary")


@pytest.mark.parametrize(
    ("content", "kind", "code"),
    [
        ("0; url=/next", "meta refresh", "ALERT_META_REFRESH"),
        ("0;URL='https://example.com/next'", "meta refresh", "ALERT_META_REFRESH"),
        ("5; url=/next", "meta refresh (delayed)", "ALERT_META_REFRESH_DELAYED"),
        ("30", None, None),  # reloads itself: no redirect
    ],
)
def test_meta_refresh_is_a_redirect_instant_or_delayed(
    content: str, kind: str | None, code: str | None
) -> None:
    body = f'<meta http-equiv="Refresh" content="{content}"><p>moved</p>'
    facts = extract_page(body.encode(), url=HTTPS, content_type="text/html")
    assert redirect_type(200, facts) == kind
    assert set(found(HTTPS, 200, body)) == ({code} if code else set())


def test_a_refresh_header_counts_like_the_meta_tag() -> None:
    facts = extract_page(b"<p>x</p>", url=HTTPS, content_type="text/html", headers={"Refresh": "0; url=/n"})
    assert facts.meta_refresh == "0; url=/n" and redirect_type(200, facts) == "meta refresh"
    assert parse_refresh("soon") is None


def test_http_urls_of_an_https_site_must_redirect_to_https() -> None:
    assert set(found(HTTP, 200)) == {"ALERT_HTTP_PAGE_ON_HTTPS_SITE", "ALERT_HTTPS_REDIRECT_MISSING"}
    assert found(HTTP, 301, redirect_to="https://example.com/page") == {}
    assert found(HTTP, 301, redirect_to="http://example.com/other") == {
        "ALERT_HTTPS_REDIRECT_MISSING": "status 301, redirects to http://example.com/other"
    }
    assert set(found(HTTP, 404)) == {"ALERT_HTTPS_REDIRECT_MISSING"}
    assert found(HTTP, 200, https_site=False) == {}  # an http site: nothing to redirect to


def test_mixed_content_counts_http_subresources_of_an_https_page_only() -> None:
    body = (
        '<img src="http://cdn.example.com/a.png" alt=""><script src="HTTP://cdn.example.com/a.js"></script>'
        '<link rel="stylesheet" href="http://cdn.example.com/a.css"><iframe src="http://x.example/f"></iframe>'
        '<img src="//cdn.example.com/b.png" alt=""><img src="https://cdn.example.com/c.png" alt="">'
        '<a href="http://elsewhere.example/">a link is no subresource</a><link rel="alternate" href="http://a/">'
    )
    facts = extract_page(body.encode(), url=HTTPS, content_type="text/html")
    assert facts.http_subresources == 4 and facts.to_row()["http_subresources"] == 4
    assert found(HTTPS, 200, body)["ALERT_MIXED_CONTENT"].startswith("4 http:// subresources: http://cdn")
    assert "ALERT_MIXED_CONTENT" not in found(HTTP, 200, body, https_site=False)


def test_a_challenge_page_gets_no_transport_content_findings() -> None:
    body = '<div id="cf-browser-verification"></div><img src="http://cdn.example.com/a.png">'
    facts = extract_page(body.encode(), url=HTTPS, content_type="text/html")
    waf = detect_waf(body.encode(), {}, status=200)
    fetch = FetchFacts(200, HTTPS, content_type="text/html")
    assert {f.code for f in audit_page(facts, fetch, waf=waf)} == {"ALERT_WAF_BOT_CHALLENGE"}


@pytest.mark.parametrize(
    ("value", "ok"),
    [
        ("max-age=31536000; includeSubDomains", True),
        ('max-age="600"', True),
        ("max-age=0", False),
        ("includeSubDomains", False),
        (None, False),
        ("max-age=soon", False),
    ],
)
def test_hsts_needs_a_positive_max_age(value: str | None, ok: bool) -> None:
    assert hsts_ok(value) is ok


def test_hsts_missing_once_per_https_host_whose_pages_never_send_it() -> None:
    pages = [
        PageRow("https://a.example/", 200),
        PageRow("https://a.example/x", 200, hsts="max-age=0"),
        PageRow("https://b.example/", 200),
        PageRow("https://b.example/x", 200, hsts="max-age=63072000"),
        PageRow("https://c.example/", 200, waf_provider="Cloudflare"),  # a challenge tells nothing
        PageRow("http://d.example/", 200),  # http: HSTS means nothing there
        PageRow("https://e.example/", 404),
    ]
    hsts = [(f.url, f.detail) for f in site_findings(pages, []) if f.code == "ALERT_HSTS_MISSING"]
    assert hsts == [("https://a.example/", "2 https pages of a.example, none with Strict-Transport-Security")]
