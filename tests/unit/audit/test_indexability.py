"""Indexability: canonical conflicts, robots signals from every source, and the indexability verdict."""

from __future__ import annotations

from typing import Any

import pytest

from seolens_core.audit import FetchFacts, PageRow, audit_page, detect_waf, indexability, site_findings
from seolens_core.html import extract_page

URL = "https://example.com/page"
OK = FetchFacts(status=200, final_url=URL, content_type="text/html")
PDF = FetchFacts(status=200, final_url=URL, content_type="application/pdf")
NOW = 1_800_000_000.0  # 2027-01-15
FILLER = "<title>A perfectly reasonable page title here</title><h1>Topic</h1>"


def codes(body: str, headers: dict[str, str] | None = None, fetch: FetchFacts = OK, **kw: Any) -> set[str]:
    facts = extract_page(body.encode(), url=URL, content_type=fetch.content_type, headers=headers or {})
    signals = {f for f in audit_page(facts, fetch, now=NOW, **kw)}
    return {f.code for f in signals if "CANONICAL" in f.code or "INDEX" in f.code or "UNAVAILABLE" in f.code}


@pytest.mark.parametrize(
    ("head", "headers", "expected"),
    [
        ('<link rel="canonical" href="https://example.com/page">', None, set()),
        # The same canonical twice (HTML and Link header) is no conflict; two different ones are.
        (
            '<link rel="canonical" href="https://example.com/page">',
            {"Link": "<https://example.com/page>; rel=canonical"},
            set(),
        ),
        (
            '<link rel="canonical" href="https://example.com/page"><link rel="canonical" href="https://example.com/b">',
            None,
            {"ALERT_CANONICAL_MULTIPLE"},
        ),
        (
            '<link rel="canonical" href="https://example.com/page">',
            {"Link": "<https://example.com/other>; rel=canonical"},
            {"ALERT_CANONICAL_MULTIPLE"},
        ),
        ('<link rel="canonical" href="/page">', None, {"ALERT_CANONICAL_RELATIVE"}),
        (
            "",
            {"Link": "</other>; rel=canonical"},
            {"ALERT_CANONICAL_RELATIVE", "ALERT_CANONICAL_ELSEWHERE"},
        ),
        (
            '<link rel="canonical" href="https://www.example.org/page">',
            None,
            {"ALERT_CANONICAL_CROSS_DOMAIN", "ALERT_CANONICAL_ELSEWHERE"},
        ),
        (
            '<meta name="robots" content="noindex"><link rel="canonical" href="https://example.com/b">',
            None,
            {"ALERT_NOINDEX", "ALERT_CANONICAL_ELSEWHERE", "ALERT_NOINDEX_AND_CANONICAL"},
        ),
        (
            '<meta name="robots" content="noindex"><link rel="canonical" href="https://example.com/page">',
            None,
            {"ALERT_NOINDEX"},
        ),
        ('<meta name="googlebot" content="noindex">', None, {"ALERT_NOINDEX"}),
        ('<meta name="bingbot" content="noindex">', None, set()),
        ("", {"X-Robots-Tag": "googlebot: none"}, {"ALERT_NOINDEX"}),
        ("", {"X-Robots-Tag": "otherbot: noindex"}, set()),
        ("", {"X-Robots-Tag": "unavailable_after: 2030-06-01"}, {"ALERT_UNAVAILABLE_AFTER"}),
        ("", {"X-Robots-Tag": "unavailable_after: soon"}, {"ALERT_UNAVAILABLE_AFTER"}),
        # A date already past: the page counts as noindex.
        ("", {"X-Robots-Tag": "unavailable_after: Wed, 25 Jun 2010 15:00:00 GMT"}, {"ALERT_NOINDEX"}),
    ],
)
def test_canonical_and_robots_signals(head: str, headers: dict[str, str] | None, expected: set[str]) -> None:
    assert codes(FILLER + head, headers) == expected


def test_expired_unavailable_after_says_why_it_is_noindex() -> None:
    facts = extract_page(
        b"<p>x</p>",
        url=URL,
        content_type="text/html",
        headers={"X-Robots-Tag": "unavailable_after: 2010-06-25"},
    )
    noindex = [f for f in audit_page(facts, OK, now=NOW) if f.code == "ALERT_NOINDEX"]
    assert noindex and "2010-06-25 has passed" in noindex[0].detail


def test_signals_of_a_pdf_come_from_its_headers() -> None:
    headers = {"X-Robots-Tag": "noindex", "Link": '<https://example.com/doc>; rel="canonical"'}
    assert codes("%PDF-1.4", headers, fetch=PDF) == {
        "ALERT_NOINDEX",
        "ALERT_CANONICAL_ELSEWHERE",
        "ALERT_NOINDEX_AND_CANONICAL",
    }


def test_a_challenge_page_gets_no_indexability_findings() -> None:
    body = '<html><body><div id="cf-browser-verification">Checking your browser before accessing</div>'
    body += '<link rel="canonical" href="/x"><link rel="canonical" href="/y"></body></html>'
    facts = extract_page(body.encode(), url=URL, content_type="text/html", headers={})
    waf = detect_waf(body.encode(), {}, status=200)
    assert waf is not None
    assert {"ALERT_CANONICAL_MULTIPLE", "ALERT_CANONICAL_RELATIVE"} <= {f.code for f in audit_page(facts, OK)}
    assert {f.code for f in audit_page(facts, OK, waf=waf)} == {"ALERT_WAF_BOT_CHALLENGE"}


S = "https://example.com"


def test_canonical_to_a_noindex_page_and_to_a_redirect() -> None:
    pages = [
        PageRow(S + "/a", 200, canonical=S + "/hidden"),
        PageRow(S + "/hidden", 200, noindex=True),
        PageRow(S + "/b", 200, canonical=S + "/moved"),
        PageRow(S + "/moved", 301, redirect_to=S + "/new"),
        PageRow(S + "/new", 200),
    ]
    found = [(f.code, f.url, f.related_url, f.detail) for f in site_findings(pages, [])]
    assert ("ALERT_CANONICAL_TO_NOINDEX", S + "/a", S + "/hidden", "the canonical URL is noindex") in found
    assert ("ALERT_CANONICAL_NON_200", S + "/b", S + "/moved", f"status 301, redirects to {S}/new") in found


def row(**kw: Any) -> dict[str, Any]:
    return {"url": S + "/p", "outcome": "fetched", "status": 200, "internal": True, **kw}


@pytest.mark.parametrize(
    ("fields", "verdict"),
    [
        ({}, ("indexable", None)),
        ({"canonical": S + "/p"}, ("indexable", None)),
        ({"canonical": S + "/q"}, ("non-indexable", "canonicalised")),
        ({"noindex": True, "canonical": S + "/q"}, ("non-indexable", "noindex")),
        ({"status": 301}, ("non-indexable", "redirected")),
        ({"status": 308}, ("non-indexable", "redirected")),
        ({"status": 404}, ("non-indexable", "client error")),
        ({"status": 503, "waf_provider": "Cloudflare"}, ("non-indexable", "server error")),
        ({"status": 200, "waf_provider": "Cloudflare"}, ("non-indexable", "WAF challenge")),
        ({"redirect_type": "meta refresh"}, ("non-indexable", "meta refresh")),
        (
            {"outcome": "disallowed", "status": None, "robots_disallowed": True},
            ("non-indexable", "blocked by robots.txt"),
        ),
        ({"outcome": "error", "status": None}, ("non-indexable", "fetch error")),
        ({"outcome": "suspended", "status": None}, ("non-indexable", "not fetched")),
        ({"outcome": "not_crawled", "status": None}, (None, None)),
        ({"internal": False, "external": True}, (None, None)),
    ],
)
def test_indexability_column(fields: dict[str, Any], verdict: tuple[str | None, str | None]) -> None:
    assert indexability(row(**fields)) == verdict
