"""detect_waf: every guide signature, case-insensitivity, and the false-positive rule."""

from __future__ import annotations

import html

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seolens_core.audit import WAF_SIGNATURES, SignatureKind, WafSignature, detect_waf

ARTICLE = " ".join(["Plain article prose about caching and content delivery networks."] * 40)  # 360 words


def _html(body: str, head: str = "") -> bytes:
    return f"<html><head><title>t</title>{head}</head><body>{body}</body></html>".encode()


def _challenge(sig: WafSignature) -> tuple[bytes, dict[str, str], int]:
    """A response carrying `sig` in the context a real challenge would: markup, headers or wording."""
    text = sig.text.upper()  # matching is case-insensitive
    if sig.kind is SignatureKind.PHRASE:
        return _html(f"<p>{text} example.com. Please wait.</p>"), {}, 403
    if sig.text.endswith("=") or "incap" in sig.text:
        return _html("<p>Access denied</p>"), {"Set-Cookie": f"{text}abc; path=/"}, 403
    if sig.text == "reference&#32;number:":
        return _html(f"<h1>Access Denied</h1><p>{text} 18.2d351ab8</p>"), {}, 200
    markup = f'<div id="{text}"></div><script src="https://{text}/c.js"></script>'
    status = 200 if sig.kind is SignatureKind.MARKER else 403
    return _html(markup + (f"<p>{ARTICLE}</p>" if status == 200 else "")), {}, status


def test_guide_signature_table_is_complete() -> None:
    providers = {sig.provider for sig in WAF_SIGNATURES}
    assert providers == {"Cloudflare", "Akamai", "DataDome", "Imperva"}
    assert len(WAF_SIGNATURES) == 14


@pytest.mark.parametrize("sig", WAF_SIGNATURES, ids=lambda sig: sig.text)
def test_every_signature_matches_its_challenge(sig: WafSignature) -> None:
    body, headers, status = _challenge(sig)
    match = detect_waf(body, headers, status=status)
    assert match is not None
    assert (match.provider, match.signature) == (sig.provider, sig.text)
    assert match.advice == (
        f"Blocked by {sig.provider} WAF challenge. Whitelist the crawler IP or supply a session cookie."
    )


@pytest.mark.parametrize("sig", WAF_SIGNATURES, ids=lambda sig: sig.text)
def test_signature_mentioned_in_prose_of_a_normal_page_does_not_match(sig: WafSignature) -> None:
    # Written the way an author's page carries it: HTML-escaped, so it renders as the literal signature.
    body = _html(f"<p>{ARTICLE} Our blog post explains {html.escape(sig.text)} in detail. {ARTICLE}</p>")
    assert detect_waf(body, {}, status=200) is None


def test_clean_page_mentioning_cloudflare_and_datadome_in_prose() -> None:
    prose = "We moved our DNS to Cloudflare last year, and DataDome protects our login form."
    assert detect_waf(_html(f"<p>{prose} {ARTICLE}</p>"), {"Server": "cloudflare"}, status=200) is None
    # Short pages too: a bare brand name needs markup or header context.
    assert detect_waf(_html(f"<p>{prose}</p>"), {}, status=200) is None
    assert detect_waf(_html(f"<p>{prose}</p>"), {}, status=403) is None


def test_traces_on_a_normal_protected_page_do_not_match() -> None:
    normal = _html(
        f"<p>{ARTICLE}</p>", head='<script src="/cdn-cgi/challenge-platform/scripts/jsd/main.js"></script>'
    )
    cookies = {"Set-Cookie": "_abck=1; visid_incap_123=2; _incap_ses_9=3"}
    assert detect_waf(normal, cookies, status=200) is None
    assert detect_waf(normal, cookies, status=503) is not None


def test_stub_200_with_trace_in_markup_matches() -> None:
    body = _html('<script src="https://js.datadome.co/tags.js"></script><p>Please enable JS</p>')
    match = detect_waf(body, {}, status=200)
    assert match is not None and match.provider == "DataDome"
    assert detect_waf(body, {}, status=200, stub_words=3) is None


def test_header_only_trace() -> None:
    match = detect_waf(b"", {"x-datadome": "protected"}, status=403)
    assert match is not None and (match.provider, match.location) == ("DataDome", "headers")


def test_cloudflare_origin_error_is_not_a_challenge() -> None:
    body = _html("<h1>Web server is down</h1><p>Error code 522. Cloudflare Ray ID: 8a1b2c</p>")
    assert detect_waf(body, {}, status=522) is None
    assert detect_waf(body, {}, status=503) is not None


def test_marker_beats_weaker_signatures() -> None:
    body = _html('<p>DataDome</p><iframe src="https://geo.captcha-delivery.com/captcha/"></iframe>')
    match = detect_waf(body, {"Set-Cookie": "datadome=abc"}, status=403)
    assert match is not None
    assert (match.signature, match.kind) == ("geo.captcha-delivery.com", SignatureKind.MARKER)


def test_real_world_shaped_cloudflare_challenge() -> None:
    body = b"""<!DOCTYPE HTML><html><head><title>Just a moment...</title></head><body>
    <div id="cf-browser-verification" class="cf-im-under-attack"><h1>Checking your browser before accessing
    example.com.</h1><p>This process is automatic.</p></div>
    <script src="/cdn-cgi/challenge-platform/h/g/orchestrate/jsch/v1"></script>
    <div class="ray-id">Cloudflare Ray ID: <code>7a1b2c3d4e5f</code></div></body></html>"""
    for status in (200, 403, 503):
        match = detect_waf(body, {}, status=status)
        assert match is not None and match.provider == "Cloudflare"


def test_binary_or_empty_bodies() -> None:
    assert detect_waf(b"", {}) is None
    assert detect_waf(b"\x00\xff" * 100, {}, status=403) is None


_PIECES = [sig.text for sig in WAF_SIGNATURES] + [
    "<p>",
    "</p>",
    "<script>",
    "</script>",
    "word ",
    "<!--",
    "&#32;",
]


@settings(max_examples=100, deadline=None)
@given(
    body=st.lists(st.sampled_from(_PIECES) | st.text(max_size=20), max_size=30).map(
        lambda xs: "".join(xs).encode()
    )
    | st.binary(max_size=1024),
    cookie=st.text(max_size=40),
    status=st.none() | st.integers(min_value=100, max_value=599),
)
def test_detect_waf_never_raises(body: bytes, cookie: str, status: int | None) -> None:
    match = detect_waf(body, {"Set-Cookie": cookie}, status=status)
    if match is not None:
        assert match.signature.encode() in body.lower() or match.signature in cookie.lower()
        if status is not None and not 200 <= status < 300 and status not in {401, 403, 405, 406, 429, 503}:
            assert match.kind is SignatureKind.MARKER
