"""hreflang: codes as Google reads them, a page's own annotations, and the pairs across pages (all sources)."""

from __future__ import annotations

import pytest

from seolens_core.audit import FetchFacts, PageRow, audit_page, hreflang_problem, pair_lang, site_findings
from seolens_core.html import extract_page

S = "https://example.com"


@pytest.mark.parametrize("code", ["x-default", "de", "en-GB", "en-gb", "zh-Hant-TW", "pt-BR", "sr-Latn"])
def test_valid_codes(code: str) -> None:
    assert hreflang_problem(code) is None


@pytest.mark.parametrize(
    ("code", "why"),
    [
        ("en-UK", "'UK' is not an ISO 3166-1 alpha-2 region (use GB)"),
        ("en_US", "separate language and region with '-'"),
        ("eng", "'eng' is not an ISO 639-1 language code"),
        ("us", "a region alone"),
        ("en-US-x", "too many subtags"),
        ("es-419", "'419' is not an ISO 3166-1 alpha-2 region"),
    ],
)
def test_invalid_codes_say_why(code: str, why: str) -> None:
    problem = hreflang_problem(code)
    assert problem is not None and why in problem


def page_codes(head: str, headers: dict[str, str] | None = None) -> list[tuple[str, str]]:
    body = f"<html><head>{head}</head><body><p>x</p></body></html>".encode()
    facts = extract_page(body, url=S + "/en", content_type="text/html", headers=headers or {})
    findings = audit_page(facts, FetchFacts(200, S + "/en", content_type="text/html"))
    return [(f.code, f.detail) for f in findings if "HREFLANG" in f.code]


def test_a_page_without_self_reference_x_default_and_with_a_bad_code() -> None:
    head = '<link rel="alternate" hreflang="de" href="/de"><link rel="alternate" hreflang="en-UK" href="/uk">'
    assert page_codes(head) == [
        ("ALERT_HREFLANG_INVALID_CODE", "HTML: 'en-uk': 'UK' is not an ISO 3166-1 alpha-2 region (use GB)"),
        ("ALERT_HREFLANG_NO_SELF", "HTML: 2 alternates, none to this URL"),
        ("ALERT_HREFLANG_NO_X_DEFAULT", "HTML: no x-default among 2 alternates"),
    ]


def test_link_header_alternates_count_like_html_ones() -> None:
    headers = {"Link": '</en>; rel="alternate"; hreflang="en", </>; rel="alternate"; hreflang="x-default"'}
    assert page_codes('<link rel="alternate" hreflang="de" href="/de">', headers) == []
    assert page_codes("") == []  # no annotations, no findings


def test_pairs_to_non_200_non_canonical_and_without_return() -> None:
    rows = [
        PageRow(
            S + "/en",
            200,
            hreflang=(
                ("en", S + "/en"),
                ("de", S + "/de"),
                ("fr", S + "/fr"),
                ("it", S + "/it"),
                ("es", S + "/es"),
            ),
        ),
        PageRow(S + "/de", 200, hreflang=(("de", S + "/de"), ("en", S + "/en"))),  # a correct pair
        PageRow(S + "/fr", 301, redirect_to=S + "/fr/"),
        PageRow(S + "/it", 200, canonical=S + "/it/home"),
        PageRow(S + "/es", 200),  # no annotations: no return link
    ]
    found = [(f.code, f.related_url, f.detail) for f in site_findings(rows, []) if "HREFLANG" in f.code]
    assert found == [
        ("ALERT_HREFLANG_TO_NON_200", S + "/fr", f"hreflang fr: status 301, redirects to {S}/fr/"),
        ("ALERT_HREFLANG_TO_NON_CANONICAL", S + "/it", f"hreflang it: canonical is {S}/it/home"),
        ("ALERT_HREFLANG_NO_RETURN", S + "/es", "hreflang es: no return link"),
    ]
    assert [pair_lang(f) for f in site_findings(rows, []) if "HREFLANG" in f.code] == ["fr", "it", "es"]


def test_sitemap_alternates_are_checked_and_count_as_return_links() -> None:
    rows = [
        PageRow(S + "/en", 200, hreflang=(("en", S + "/en"), ("de", S + "/de"))),
        # /de annotates only in its sitemap entry: that is a return link too.
        PageRow(S + "/de", 200, sitemap_hreflang=(("en", S + "/en"), ("de-XX", S + "/de"))),
    ]
    found = [(f.code, f.url, f.detail) for f in site_findings(rows, []) if "HREFLANG" in f.code]
    assert found == [
        (
            "ALERT_HREFLANG_INVALID_CODE",
            S + "/de",
            "sitemap: 'de-XX': 'XX' is not an ISO 3166-1 alpha-2 region",
        ),
        ("ALERT_HREFLANG_NO_X_DEFAULT", S + "/de", "sitemap: no x-default among 2 alternates"),
    ]


def test_an_alternate_never_crawled_or_behind_a_waf_is_not_judged() -> None:
    rows = [
        PageRow(S + "/en", 200, hreflang=(("en", S + "/en"), ("de", S + "/de"), ("fr", S + "/fr"))),
        PageRow(S + "/fr", 403, waf_provider="Cloudflare"),
    ]
    assert [f for f in site_findings(rows, []) if "HREFLANG" in f.code] == []
