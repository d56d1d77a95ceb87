"""Values produced by page extraction: PageFacts, RawLink, OpenGraph, and robots-directive parsing."""

from __future__ import annotations

import datetime
import email.utils
from dataclasses import dataclass, field
from typing import Any, Literal

LinkTag = Literal["a", "area"]

# advertools joins multi-valued columns with this separator; pandas users split on it.
MULTI_VALUE_SEP = "@@"

# X-Robots-Tag may scope directives to one crawler ("googlebot: noindex"); these scopes apply to us.
ROBOTS_AGENTS = frozenset({"googlebot", "seolens"})
_DIRECTIVES_WITH_VALUE = frozenset(
    {"unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"}
)


@dataclass(frozen=True, slots=True)
class RawLink:
    """One outgoing link as written in the page; `href` is raw (the caller resolves and normalizes it)."""

    href: str
    text: str
    nofollow: bool
    tag: LinkTag


@dataclass(frozen=True, slots=True)
class OpenGraph:
    """Open Graph basics (`og:*` meta properties); None when absent."""

    title: str | None = None
    description: str | None = None
    image: str | None = None
    type: str | None = None


def _scoped_tokens(value: str) -> list[tuple[str, str]]:
    """(scope, token) pairs of a robots value, lower-cased; scope "" when unscoped.

    Tokens are comma-separated; `agent: a, b` scopes the following tokens to `agent` until the next scope
    (Google's X-Robots-Tag syntax). A token starting with a digit after `unavailable_after` continues its
    date (RFC 850 and RFC 1123 dates hold a comma after the weekday).
    """
    out: list[tuple[str, str]] = []
    scope = ""
    for raw in value.split(","):
        token = raw.strip().lower()
        if not token:
            continue
        if out and out[-1][1].startswith("unavailable_after") and token[0].isdigit():
            out[-1] = (out[-1][0], f"{out[-1][1]}, {token}")
            continue
        head, sep, tail = token.partition(":")
        if sep and head.strip() not in _DIRECTIVES_WITH_VALUE:
            scope = head.strip()
            token = tail.strip()
            if not token:
                continue
        out.append((scope, token))
    return out


def robots_directives(value: str | None, agents: frozenset[str] = ROBOTS_AGENTS) -> frozenset[str]:
    """Lower-cased directive names of a meta robots / X-Robots-Tag value that apply to our crawler.

    Unscoped tokens and tokens scoped to one of `agents` (googlebot, seolens) apply; `none` means
    noindex and nofollow.
    """
    if not value:
        return frozenset()
    found = {
        token.split(":", 1)[0].strip()
        for scope, token in _scoped_tokens(value)
        if not scope or scope in agents
    }
    if "none" in found:
        found |= {"noindex", "nofollow"}
    return frozenset(found)


def unavailable_after(value: str | None, agents: frozenset[str] = ROBOTS_AGENTS) -> str | None:
    """The date of the first `unavailable_after:` directive that applies to us, as written (None: none)."""
    for scope, token in _scoped_tokens(value or ""):
        name, sep, date = token.partition(":")
        if sep and name.strip() == "unavailable_after" and (not scope or scope in agents) and date.strip():
            return date.strip()
    return None


def parse_http_date(text: str) -> float | None:
    """Epoch seconds of an RFC 822/850/1123 or ISO 8601 date (UTC when no zone is given), else None."""
    text = text.strip()
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        try:
            when = datetime.datetime.fromisoformat(text.replace("Z", "+00:00"))
        except ValueError:
            return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.UTC)
    try:
        return when.timestamp()
    except (OverflowError, OSError, ValueError):
        return None


def _joined(values: tuple[str, ...]) -> str | None:
    return MULTI_VALUE_SEP.join(values) if values else None


@dataclass(frozen=True, slots=True)
class PageFacts:
    """What one fetched page says about itself; everything raw as written (URLs unresolved).

    `title`/`meta_desc` are None when the tag is absent and "" when present but empty.
    `is_html` is False for non-HTML content types: then only `x_robots_tag` is filled.
    """

    url: str
    is_html: bool = True
    charset: str | None = None
    title: str | None = None
    meta_desc: str | None = None
    meta_robots: str | None = None
    x_robots_tag: str | None = None
    canonical: str | None = None
    h1: tuple[str, ...] = ()
    h2: tuple[str, ...] = ()
    lang: str | None = None
    hreflang: tuple[tuple[str, str], ...] = ()
    word_count: int = 0
    links: tuple[RawLink, ...] = ()
    links_truncated: bool = False
    images_without_alt: int = 0
    og: OpenGraph = field(default_factory=OpenGraph)
    jsonld_types: frozenset[str] = frozenset()
    # JSON-LD blocks: how many, the parse error of each invalid one (in order), and the top-level items
    # without `@context` / without `@type` over all blocks.
    jsonld_blocks: int = 0
    jsonld_invalid: tuple[str, ...] = ()
    jsonld_without_context: int = 0
    jsonld_without_type: int = 0
    # xxh64 hex of the whitespace-normalized visible text; None when the page has no visible text.
    content_hash: str | None = None
    base_href: str | None = None
    # Every <link rel=canonical> href in document order (`canonical` is the first), and the Link header's.
    canonicals: tuple[str, ...] = ()
    header_canonicals: tuple[str, ...] = ()
    # hreflang alternates of the Link header (`<url>; rel="alternate"; hreflang="de"`), as `hreflang`.
    header_hreflang: tuple[tuple[str, str], ...] = ()
    # `<meta http-equiv="refresh">` content (else the `Refresh` header), and `Strict-Transport-Security`.
    meta_refresh: str | None = None
    hsts: str | None = None
    # Subresources (img, script, stylesheet, iframe, media, embed, object) written with an http:// URL:
    # how many, and the first few.
    http_subresources: int = 0
    http_subresource_examples: tuple[str, ...] = ()
    # Robots meta tags named after one crawler (`<meta name="googlebot">`): (name, content), lower-case name.
    meta_agents: tuple[tuple[str, str], ...] = ()

    def _robots_values(self) -> list[str]:
        """The robots values that apply to us: meta robots, X-Robots-Tag, our agents' meta tags."""
        values = [self.meta_robots or "", self.x_robots_tag or ""]
        values += [content for name, content in self.meta_agents if name in ROBOTS_AGENTS]
        return values

    @property
    def robots_directives(self) -> frozenset[str]:
        """Directives from meta robots, googlebot/seolens meta tags and X-Robots-Tag combined."""
        found: frozenset[str] = frozenset()
        for value in self._robots_values():
            found |= robots_directives(value)
        return found

    @property
    def unavailable_after(self) -> str | None:
        """The `unavailable_after` date that applies to us, as written (the first one found)."""
        for value in self._robots_values():
            date = unavailable_after(value)
            if date is not None:
                return date
        return None

    @property
    def noindex(self) -> bool:
        return "noindex" in self.robots_directives

    @property
    def nofollow(self) -> bool:
        """Page-level nofollow: links are recorded but not followed when nofollow is respected."""
        return "nofollow" in self.robots_directives

    def to_row(self) -> dict[str, Any]:
        """A flat, JSON-ready row; column names and '@@'-joined multi-values follow advertools."""
        return {
            "url": self.url,
            "title": self.title,
            "meta_desc": self.meta_desc,
            "h1": _joined(self.h1),
            "h2": _joined(self.h2),
            "canonical": self.canonical,
            "canonical_header": _joined(self.header_canonicals),
            "meta_robots": self.meta_robots,
            "meta_robots_agents": _joined(tuple(f"{name}: {content}" for name, content in self.meta_agents)),
            "unavailable_after": self.unavailable_after,
            "meta_refresh": self.meta_refresh,
            "hsts": self.hsts,
            "http_subresources": self.http_subresources,
            "x_robots_tag": self.x_robots_tag,
            "lang": self.lang,
            "charset": self.charset,
            "alt_href": _joined(tuple(href for _, href in self.hreflang)),
            "alt_hreflang": _joined(tuple(lang for lang, _ in self.hreflang)),
            "og:title": self.og.title,
            "og:description": self.og.description,
            "og:image": self.og.image,
            "og:type": self.og.type,
            "jsonld_@type": _joined(tuple(sorted(self.jsonld_types))),
            "jsonld_blocks": self.jsonld_blocks,
            "jsonld_types_count": len(self.jsonld_types),
            "jsonld_invalid": len(self.jsonld_invalid),
            "word_count": self.word_count,
            "content_hash": self.content_hash,
            "images_without_alt": self.images_without_alt,
            "links_count": len(self.links),
            "links_truncated": self.links_truncated,
            "base_href": self.base_href,
            "noindex": self.noindex,
            "nofollow": self.nofollow,
            "is_html": self.is_html,
        }
