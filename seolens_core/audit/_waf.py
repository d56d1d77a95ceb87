"""WAF / anti-bot challenge detection (crawler guide section 6): four providers, case-insensitive.

False-positive rule. Each guide signature has a kind:
- MARKER: markup that only a challenge or block page carries (an element id, the captcha host, an
  entity-encoded block message). Matches on any status, but only in markup or headers: a marker that
  occurs solely in the page's readable text (someone writing about it) does not count.
- PHRASE: the wording of a challenge page ("checking your browser before accessing"). Matches only
  when the response looks like a challenge.
- TRACE: a token a protected site sends with every normal page too (bot-manager cookies, the
  provider's script path, the bare brand name "datadome"). Matches only when the response looks
  like a challenge AND the token occurs in markup or headers (not only in readable text).
A response looks like a challenge when its status is a WAF block status (401, 403, 405, 406, 429,
503), or it is a 2xx (or unknown) answer whose visible text is a stub (fewer than `stub_words` words).
So a normal article mentioning "Cloudflare Ray ID" or "DataDome" in prose never matches; a short
page quoting a challenge phrase on a 2xx answer can (accepted residual risk).
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass

from selectolax.lexbor import LexborHTMLParser

from seolens_core.audit._settings import WAF_BLOCK_STATUSES
from seolens_core.html import decode_body, guard_depth, header_value

_EMPTY_HEADERS: Mapping[str, str] = {}


class SignatureKind(enum.StrEnum):
    MARKER = "marker"
    PHRASE = "phrase"
    TRACE = "trace"


@dataclass(frozen=True, slots=True)
class WafSignature:
    provider: str
    text: str  # lower case, matched case-insensitively against the raw body and the headers
    kind: SignatureKind


M, P, T = SignatureKind.MARKER, SignatureKind.PHRASE, SignatureKind.TRACE
WAF_SIGNATURES: tuple[WafSignature, ...] = (
    WafSignature("Cloudflare", "cf-browser-verification", M),
    WafSignature("Cloudflare", "checking your browser before accessing", P),
    WafSignature("Cloudflare", "cloudflare ray id", P),
    # Cloudflare also injects /cdn-cgi/challenge-platform/scripts/jsd/ into ordinary pages.
    WafSignature("Cloudflare", "/cdn-cgi/challenge-platform/", T),
    WafSignature("Akamai", "akamai bot manager", P),
    WafSignature("Akamai", "_abck=", T),
    WafSignature("Akamai", "reference&#32;number:", M),
    WafSignature("Akamai", "bm-sz=", T),
    WafSignature("DataDome", "geo.captcha-delivery.com", M),
    WafSignature("DataDome", "datadome", T),
    WafSignature("DataDome", "dd_cookie_test", M),
    WafSignature("Imperva", "incapsula incident id", P),
    WafSignature("Imperva", "_incap_ses", T),
    WafSignature("Imperva", "visid_incap", T),
)
_KIND_RANK = {M: 0, P: 1, T: 2}


@dataclass(frozen=True, slots=True)
class WafMatch:
    """A detected challenge: which provider, which signature, and where it was seen."""

    provider: str
    signature: str
    kind: SignatureKind
    location: str  # "body" or "headers"

    @property
    def advice(self) -> str:
        return (
            f"Blocked by {self.provider} WAF challenge. Whitelist the crawler IP or supply a session cookie."
        )


class _Prose:
    """Readable text of the body (title and visible text, no script/style), computed on first use."""

    def __init__(self, body: bytes, content_type: str | None) -> None:
        self._body = body
        self._content_type = content_type
        self._text: str | None = None

    @property
    def text(self) -> str:
        if self._text is None:
            decoded, _ = decode_body(self._body, self._content_type)
            parser = LexborHTMLParser(guard_depth(decoded), scripting=True)
            parser.strip_tags(["script", "style", "noscript", "template"])
            root = parser.root
            self._text = " ".join(root.text(separator=" ").split()).lower() if root is not None else ""
        return self._text

    def word_count(self) -> int:
        return self.text.count(" ") + 1 if self.text else 0


def _header_text(headers: Mapping[str, str]) -> str:
    return "\n".join(f"{name}: {value}" for name, value in headers.items()).lower()


def detect_waf(
    body: bytes,
    headers: Mapping[str, str] = _EMPTY_HEADERS,
    *,
    status: int | None = None,
    stub_words: int = 150,
    block_statuses: frozenset[int] = WAF_BLOCK_STATUSES,
) -> WafMatch | None:
    """Return the WAF challenge this response is, or None; see the module docstring for the rule."""
    raw = body.lower()
    header_text = _header_text(headers)
    hits = [
        (sig, sig.text.encode("utf-8") in raw, sig.text in header_text)
        for sig in WAF_SIGNATURES
        if sig.text.encode("utf-8") in raw or sig.text in header_text
    ]
    if not hits:
        return None
    prose = _Prose(body, header_value(headers, "content-type"))

    def in_markup(sig: WafSignature) -> bool:
        needle = sig.text.encode("utf-8")
        return raw.count(needle) > prose.text.count(sig.text)

    challenge: list[bool] = []

    def challenge_like() -> bool:
        if not challenge:
            challenge.append(
                status in block_statuses
                or ((status is None or 200 <= status < 300) and prose.word_count() < stub_words)
            )
        return challenge[0]

    accepted: list[WafMatch] = []
    for sig, in_body, in_headers in hits:
        if sig.kind is not M and not challenge_like():
            continue
        if sig.kind is not P and not (in_headers or in_markup(sig)):
            continue
        accepted.append(WafMatch(sig.provider, sig.text, sig.kind, "body" if in_body else "headers"))
    if not accepted:
        return None
    return min(accepted, key=lambda match: _KIND_RANK[match.kind])
