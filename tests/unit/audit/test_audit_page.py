"""audit_page: one test row per finding on small HTML snippets, plus WAF suppression."""

from __future__ import annotations

import pytest

from seolens_core.audit import (
    CATALOGUE,
    AuditSettings,
    Catalogue,
    Category,
    FetchFacts,
    Finding,
    FindingCode,
    FindingConflictError,
    FindingDef,
    Severity,
    UnknownFindingError,
    audit_page,
    detect_waf,
    make_finding,
)
from seolens_core.html import extract_page

URL = "https://example.com/page"
TITLE = "A perfectly reasonable page title here"  # 38 chars
DESC = "A meta description that is long enough to be useful and short enough to fit in results."  # 88
BODY_WORDS = " ".join(f"word{i}" for i in range(250))
OK = FetchFacts(status=200, final_url=URL, ttfb_ms=120.0, size=5000, content_type="text/html")


def html(
    title: str | None = TITLE,
    desc: str | None = DESC,
    h1: tuple[str, ...] = ("Heading",),
    body: str = BODY_WORDS,
    head: str = "",
) -> bytes:
    parts = ["<html><head>"]
    if title is not None:
        parts.append(f"<title>{title}</title>")
    if desc is not None:
        parts.append(f'<meta name="description" content="{desc}">')
    parts.append(head + "</head><body>")
    parts.extend(f"<h1>{text}</h1>" for text in h1)
    parts.append(f"<p>{body}</p></body></html>")
    return "".join(parts).encode()


def codes(findings: list[Finding]) -> list[str]:
    return [finding.code for finding in findings]


def audit(
    body: bytes, fetch: FetchFacts = OK, headers: dict[str, str] | None = None, **kwargs: object
) -> list[Finding]:
    facts = extract_page(body, url=URL, content_type=fetch.content_type, headers=headers or {})
    return audit_page(facts, fetch, **kwargs)  # type: ignore[arg-type]


def test_clean_page_has_no_findings() -> None:
    assert audit(html()) == []


@pytest.mark.parametrize(
    ("body", "expected", "detail"),
    [
        (html(title=None), "ALERT_TITLE_MISSING", ""),
        (html(title=""), "ALERT_TITLE_EMPTY", ""),
        (html(title="   "), "ALERT_TITLE_EMPTY", ""),
        (html(title="x" * 61), "ALERT_TITLE_TOO_LONG", "61 characters (max 60)"),
        (html(title="Short title"), "ALERT_TITLE_TOO_SHORT", "11 characters (min 30)"),
        (html(desc=None), "ALERT_META_DESC_MISSING", ""),
        (html(desc=""), "ALERT_META_DESC_MISSING", "empty"),
        (html(desc="d" * 161), "ALERT_META_DESC_TOO_LONG", "161 characters (max 160)"),
        (html(desc="Too short."), "ALERT_META_DESC_TOO_SHORT", "10 characters (min 70)"),
        (html(h1=()), "ALERT_H1_MISSING", ""),
        (html(h1=("",)), "ALERT_H1_MISSING", ""),
        (html(h1=("One", "Two")), "ALERT_H1_MULTIPLE", "2 H1 elements"),
        (html(body="only a few words"), "ALERT_THIN_CONTENT", "5 words (min 200)"),
        (
            html(body=BODY_WORDS + '<img src="a.png"><img src="b.png" alt="">'),
            "ALERT_IMAGES_WITHOUT_ALT",
            "1 images",
        ),
        (html(head='<meta name="robots" content="noindex">'), "ALERT_NOINDEX", "noindex"),
        (html(head='<meta name="robots" content="nofollow">'), "ALERT_NOFOLLOW_PAGE", ""),
        (
            html(head='<link rel="canonical" href="https://example.com/other">'),
            "ALERT_CANONICAL_ELSEWHERE",
            "",
        ),
    ],
)
def test_single_content_finding(body: bytes, expected: str, detail: str) -> None:
    findings = audit(body)
    assert codes(findings) == [expected]
    assert findings[0].detail == detail
    assert findings[0].url == URL
    assert findings[0].severity is CATALOGUE.get(expected).severity


def test_canonical_resolution() -> None:
    for href in ("/page", "https://example.com/page", "page#frag", "https://example.com/page#top"):
        relative = [] if href.startswith("https:") else ["ALERT_CANONICAL_RELATIVE"]
        assert codes(audit(html(head=f'<link rel="canonical" href="{href}">'))) == relative, href
    base = html(head='<base href="/dir/"><link rel="canonical" href="page">')
    assert audit(base)[0].related_url == "https://example.com/dir/page"
    # The caller's normalized canonical wins over the fallback join.
    other = html(head='<link rel="canonical" href="/Page">')
    assert codes(audit(other, canonical_url=URL)) == ["ALERT_CANONICAL_RELATIVE"]
    assert audit(other)[0].related_url == "https://example.com/Page"


def test_noindex_from_x_robots_tag_header() -> None:
    assert codes(audit(html(), headers={"X-Robots-Tag": "noindex"})) == ["ALERT_NOINDEX"]


@pytest.mark.parametrize(
    ("fetch", "expected"),
    [
        (FetchFacts(404, URL, content_type="text/html"), ["ALERT_HTTP_4XX"]),
        (FetchFacts(410, URL, content_type="text/html"), ["ALERT_HTTP_4XX"]),
        (FetchFacts(500, URL, content_type="text/html"), ["ALERT_HTTP_5XX"]),
        (FetchFacts(503, URL, content_type="text/html"), ["ALERT_HTTP_5XX"]),
        (FetchFacts(200, URL, ttfb_ms=1000.0, content_type="text/html"), []),
        (FetchFacts(200, URL, ttfb_ms=1000.5, content_type="text/html"), ["ALERT_SLOW_TTFB"]),
        (FetchFacts(200, URL, size=2 * 1024 * 1024, content_type="text/html"), []),
        (FetchFacts(200, URL, size=2 * 1024 * 1024 + 1, content_type="text/html"), ["ALERT_LARGE_PAGE"]),
        (FetchFacts(None, URL, error="dns: no such host"), ["ALERT_FETCH_ERROR"]),
    ],
)
def test_fetch_findings(fetch: FetchFacts, expected: list[str]) -> None:
    assert codes(audit(html(), fetch)) == expected


def test_content_rules_skip_error_and_non_html_answers() -> None:
    # A 404 page without a title is not a "missing title" problem.
    assert codes(audit(html(title=None, h1=()), FetchFacts(404, URL, content_type="text/html"))) == [
        "ALERT_HTTP_4XX"
    ]
    pdf = FetchFacts(200, URL, content_type="application/pdf")
    assert audit(b"%PDF-1.7", pdf) == []
    assert codes(audit(b"%PDF-1.7", pdf, headers={"X-Robots-Tag": "noindex"})) == ["ALERT_NOINDEX"]


def test_redirect_chain_and_loop_from_fetch() -> None:
    one_hop = FetchFacts(200, URL, redirect_chain=("https://example.com/a",), content_type="text/html")
    assert audit(html(), one_hop) == []
    chain = FetchFacts(
        200, URL, redirect_chain=("https://example.com/a", "https://example.com/b"), content_type="text/html"
    )
    findings = audit(html(), chain)
    assert codes(findings) == ["ALERT_REDIRECT_CHAIN"]
    assert findings[0].url == "https://example.com/a"
    assert findings[0].detail == f"2 hops: https://example.com/a -> https://example.com/b -> {URL}"
    assert findings[0].related_url == URL
    loop = FetchFacts(
        301, "https://example.com/a", redirect_chain=("https://example.com/a", "https://example.com/b")
    )
    assert codes(audit(html(), loop)) == ["ALERT_REDIRECT_LOOP"]


def test_links_truncated_finding() -> None:
    many = html(body=BODY_WORDS + "".join(f'<a href="/l{i}">l</a>' for i in range(5)))
    facts = extract_page(many, url=URL, content_type="text/html", max_links=3)
    findings = audit_page(facts, OK)
    assert codes(findings) == ["ALERT_LINKS_TRUNCATED"]
    assert findings[0].detail == "first 3 links recorded"


def test_settings_change_thresholds() -> None:
    strict = AuditSettings(title_min_chars=50, thin_content_words=300)
    assert codes(audit(html(), settings=strict)) == ["ALERT_TITLE_TOO_SHORT", "ALERT_THIN_CONTENT"]
    with pytest.raises(ValueError):
        AuditSettings(title_min_chars=70, title_max_chars=60)


CHALLENGE = b"""<html><head><title>Just a moment...</title></head><body>
<div id="cf-browser-verification"><p>Checking your browser before accessing example.com.</p></div>
</body></html>"""


@pytest.mark.parametrize("status", [200, 403, 503])
def test_waf_challenge_suppresses_content_findings(status: int) -> None:
    fetch = FetchFacts(status, URL, ttfb_ms=3000.0, content_type="text/html")
    waf = detect_waf(CHALLENGE, {}, status=status)
    assert waf is not None
    findings = audit(CHALLENGE, fetch, waf=waf)
    assert codes(findings) == ["ALERT_WAF_BOT_CHALLENGE"]
    assert findings[0].detail == (
        "Blocked by Cloudflare WAF challenge. Whitelist the crawler IP or supply a session cookie."
    )
    assert findings[0].severity is Severity.CRITICAL
    # Without the WAF match the same body floods the report with false alarms.
    alarms = {
        200: {"ALERT_TITLE_TOO_SHORT", "ALERT_H1_MISSING", "ALERT_THIN_CONTENT", "ALERT_SLOW_TTFB"},
        403: {"ALERT_HTTP_4XX", "ALERT_SLOW_TTFB"},
        503: {"ALERT_HTTP_5XX", "ALERT_SLOW_TTFB"},
    }[status]
    assert alarms <= set(codes(audit(CHALLENGE, fetch)))


def test_waf_keeps_redirect_findings() -> None:
    fetch = FetchFacts(403, URL, redirect_chain=("https://example.com/a", "https://example.com/b"))
    waf = detect_waf(CHALLENGE, {}, status=403)
    assert codes(audit(CHALLENGE, fetch, waf=waf)) == ["ALERT_WAF_BOT_CHALLENGE", "ALERT_REDIRECT_CHAIN"]


def test_catalogue_defines_every_code_once_with_advice() -> None:
    # Other modules (the pipeline's traps, sitemaps, robots) register their own codes on top of these.
    assert {code.value for code in FindingCode} <= {definition.code for definition in CATALOGUE}
    for definition in CATALOGUE:
        assert definition.title and definition.advice.endswith(".")
        assert "\n" not in definition.advice


def test_catalogue_registration_of_external_codes() -> None:
    catalogue = Catalogue(CATALOGUE)
    trap = FindingDef("ALERT_TEST_ONLY_CODE", Severity.INFO, Category.CRAWL, "Calendar trap", "Pruned.")
    catalogue.register(trap)
    catalogue.register(trap)  # identical: no-op
    assert make_finding("ALERT_TEST_ONLY_CODE", URL, catalogue=catalogue).severity is Severity.INFO
    with pytest.raises(FindingConflictError):
        catalogue.register(FindingDef("ALERT_TEST_ONLY_CODE", Severity.WARNING, Category.CRAWL, "x", "y."))
    with pytest.raises(ValueError):
        catalogue.register(FindingDef("trap_lower", Severity.INFO, Category.CRAWL, "x", "y."))
    with pytest.raises(UnknownFindingError):
        make_finding("ALERT_TEST_ONLY_CODE", URL)  # the shared catalogue was not touched
    assert make_finding(FindingCode.NOINDEX, URL).to_row() == {
        "code": "ALERT_NOINDEX",
        "severity": "notice",
        "url": URL,
        "detail": "",
        "related_url": None,
    }
