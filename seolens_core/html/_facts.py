"""Values produced by page extraction: PageFacts, RawLink, OpenGraph, and robots-directive parsing."""

from __future__ import annotations

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


def robots_directives(value: str | None) -> frozenset[str]:
    """Lower-cased directives of a meta robots / X-Robots-Tag value that apply to our crawler.

    Tokens are comma-separated; `agent: a, b` scopes the following tokens to `agent` until the next
    scope (Google's X-Robots-Tag syntax). Unscoped and googlebot/seolens-scoped tokens apply.
    """
    if not value:
        return frozenset()
    found: set[str] = set()
    applies = True
    for raw in value.split(","):
        token = raw.strip().lower()
        if not token:
            continue
        head, sep, tail = token.partition(":")
        if sep and head.strip() not in _DIRECTIVES_WITH_VALUE:
            applies = head.strip() in ROBOTS_AGENTS
            token = tail.strip()
            if not token:
                continue
        if applies:
            found.add(token.split(":", 1)[0].strip())
    if "none" in found:
        found |= {"noindex", "nofollow"}
    return frozenset(found)


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
    # xxh64 hex of the whitespace-normalized visible text; None when the page has no visible text.
    content_hash: str | None = None
    base_href: str | None = None

    @property
    def robots_directives(self) -> frozenset[str]:
        """Directives from meta robots and X-Robots-Tag combined."""
        return robots_directives(self.meta_robots) | robots_directives(self.x_robots_tag)

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
            "meta_robots": self.meta_robots,
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
