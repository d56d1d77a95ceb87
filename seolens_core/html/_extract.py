"""extract_page: one pass of lexbor (via selectolax) over a fetched body, returning PageFacts.

Parsed with scripting enabled, as Googlebot renders: `<noscript>` is text, so a tracking pixel in
`<noscript>` inside `<head>` does not push the canonical and meta tags out of the head.
"""

from __future__ import annotations

from collections.abc import Mapping

import xxhash
from selectolax.lexbor import LexborHTMLParser, LexborNode

from seolens_core.html._charset import decode_body
from seolens_core.html._depth import guard_depth
from seolens_core.html._facts import LinkTag, OpenGraph, PageFacts, RawLink
from seolens_core.html._jsonld import JsonLdBlock, read_block
from seolens_core.html._link_header import parse_link_header

HTML_MEDIA_TYPES = frozenset({"text/html", "application/xhtml+xml"})
INVISIBLE_TAGS = ["script", "style", "noscript", "template"]
# A single traversal collects every element we read facts from; dispatch is by tag name.
_FACT_SELECTOR = (
    "title, meta, link, base, a[href], area[href], h1, h2, img, script, iframe[src], source[src], audio[src],"
    " video[src], embed[src], object[data]"
)
# Where each subresource element names its URL (mixed content: http:// ones on an https page).
_RESOURCE_ATTR = {
    "img": "src",
    "script": "src",
    "iframe": "src",
    "source": "src",
    "audio": "src",
    "video": "src",
    "embed": "src",
    "object": "data",
}
_RESOURCE_RELS = frozenset({"stylesheet", "icon", "preload", "modulepreload", "manifest"})
MAX_RESOURCE_EXAMPLES = 5
MAX_REFRESH_CHARS = 4096  # a refresh URL longer than a URL can be is kept cut
_JSONLD_MEDIA_TYPE = "application/ld+json"
_EMPTY_HEADERS: Mapping[str, str] = {}
# Robots meta tags named after one crawler; the audit applies those of ROBOTS_AGENTS (googlebot, seolens).
AGENT_META_NAMES = frozenset(
    {
        "googlebot",
        "googlebot-news",
        "googlebot-image",
        "google-extended",
        "bingbot",
        "msnbot",
        "slurp",
        "yandex",
        "baiduspider",
        "duckduckbot",
        "applebot",
        "seolens",
    }
)


def is_html_content_type(content_type: str | None) -> bool:
    """True for text/html and XHTML, and when the server sent no Content-Type (browsers sniff HTML)."""
    if content_type is None:
        return True
    media_type = content_type.split(";", 1)[0].strip().lower()
    return media_type in HTML_MEDIA_TYPES or not media_type


def header_value(headers: Mapping[str, str], name: str) -> str | None:
    """Case-insensitive header lookup."""
    value = headers.get(name)
    if value is not None:
        return value
    lowered = name.lower()
    for key, candidate in headers.items():
        if key.lower() == lowered:
            return candidate
    return None


def _squash(text: str) -> str:
    return " ".join(text.split())


def _attr(node: LexborNode, name: str) -> str | None:
    value = node.attributes.get(name)
    return value.strip() if value is not None else None


def _tokens(value: str | None) -> frozenset[str]:
    return frozenset(value.lower().split()) if value else frozenset()


def _inside_svg(node: LexborNode) -> bool:
    parent = node.parent
    while parent is not None:
        if parent.tag in ("svg", "math"):
            return True
        parent = parent.parent
    return False


def _anchor_text(node: LexborNode, tag: str) -> str:
    if tag == "area":
        return _squash(node.attributes.get("alt") or "")
    text = _squash(node.text(separator=" "))
    if not text:
        image = node.css_first("img[alt]")
        if image is not None:
            text = _squash(image.attributes.get("alt") or "")
    return text


def _header_links(headers: Mapping[str, str]) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """The Link header's canonicals and its hreflang alternates."""
    links = parse_link_header(header_value(headers, "link"))
    canonicals = tuple(link.href for link in links if "canonical" in link.rel and link.href)
    alternates = tuple(
        (link.hreflang, link.href)
        for link in links
        if "alternate" in link.rel and link.hreflang and link.href
    )
    return canonicals, alternates


def _insecure(url: str | None) -> bool:
    return url is not None and url.strip()[:7].lower() == "http://"


def non_html_facts(url: str, headers: Mapping[str, str] = _EMPTY_HEADERS) -> PageFacts:
    """The facts a non-HTML answer (PDF, image, ...) carries in its headers: X-Robots-Tag, Link, HSTS."""
    header_canonicals, header_hreflang = _header_links(headers)
    return PageFacts(
        url=url,
        is_html=False,
        hsts=header_value(headers, "strict-transport-security"),
        x_robots_tag=header_value(headers, "x-robots-tag"),
        canonical=header_canonicals[0] if header_canonicals else None,
        header_canonicals=header_canonicals,
        header_hreflang=header_hreflang,
    )


def extract_page(
    body: bytes,
    *,
    url: str,
    content_type: str | None,
    headers: Mapping[str, str] = _EMPTY_HEADERS,
    max_links: int = 10_000,
) -> PageFacts:
    """Extract SEO facts from a fetched body. Pure; never raises on arbitrary bytes.

    `url` is the page's own (final) URL, recorded as is. Links beyond `max_links` are dropped and
    flagged with `links_truncated`. Non-HTML content types give `is_html=False` and no links.
    """
    x_robots_tag = header_value(headers, "x-robots-tag")
    if not is_html_content_type(content_type):
        return non_html_facts(url, headers)
    text, charset = decode_body(body, content_type)
    parser = LexborHTMLParser(guard_depth(text), scripting=True)

    title: str | None = None
    meta_desc: str | None = None
    meta_robots: list[str] = []
    meta_agents: list[tuple[str, str]] = []
    canonicals: list[str] = []
    base_href: str | None = None
    h1: list[str] = []
    h2: list[str] = []
    hreflang: list[tuple[str, str]] = []
    links: list[RawLink] = []
    links_truncated = False
    images_without_alt = 0
    og: dict[str, str] = {}
    jsonld: list[JsonLdBlock] = []
    meta_refresh: str | None = None
    insecure: list[str] = []

    for node in parser.css(_FACT_SELECTOR):
        tag = node.tag
        if tag == "a" or tag == "area":
            if len(links) >= max_links:
                links_truncated = True
                continue
            link_tag: LinkTag = "a" if tag == "a" else "area"
            links.append(
                RawLink(
                    href=_attr(node, "href") or "",
                    text=_anchor_text(node, tag),
                    nofollow="nofollow" in _tokens(node.attributes.get("rel")),
                    tag=link_tag,
                )
            )
        elif tag in _RESOURCE_ATTR and tag != "script":
            attrs = node.attributes  # a new dict on each access: read once
            if tag == "img" and "alt" not in attrs:
                images_without_alt += 1
            source = attrs.get(_RESOURCE_ATTR[tag])
            if _insecure(source):
                insecure.append((source or "").strip())
        elif tag == "h1":
            h1.append(_squash(node.text(separator=" ")))
        elif tag == "h2":
            h2.append(_squash(node.text(separator=" ")))
        elif tag == "meta":
            attrs = node.attributes
            name = (attrs.get("name") or "").strip().lower()
            content = attrs.get("content")
            if name == "description" and meta_desc is None:
                meta_desc = _squash(content or "")
            elif name == "robots" and content:
                meta_robots.append(content.strip())
            elif name in AGENT_META_NAMES and content:
                meta_agents.append((name, content.strip()))
            if meta_refresh is None and (attrs.get("http-equiv") or "").strip().lower() == "refresh":
                meta_refresh = (content or "").strip()[:MAX_REFRESH_CHARS]
            prop = (attrs.get("property") or name).strip().lower()
            if prop.startswith("og:") and content is not None and prop not in og:
                og[prop] = content.strip()
        elif tag == "link":
            rel = _tokens(node.attributes.get("rel"))
            href = _attr(node, "href")
            if href is None:
                continue
            if "canonical" in rel:
                canonicals.append(href)
            if rel & _RESOURCE_RELS and _insecure(href):
                insecure.append(href)
            lang = _attr(node, "hreflang")
            if "alternate" in rel and lang:
                hreflang.append((lang.lower(), href))
        elif tag == "title":
            if title is None and not _inside_svg(node):
                title = _squash(node.text())
        elif tag == "base":
            if base_href is None:
                base_href = _attr(node, "href")
        elif tag == "script":
            attrs = node.attributes
            if _insecure(attrs.get("src")):
                insecure.append((attrs.get("src") or "").strip())
            kind = (attrs.get("type") or "").split(";", 1)[0].strip().lower()
            if kind == _JSONLD_MEDIA_TYPE:
                jsonld.append(read_block(node.text()))

    header_canonicals, header_hreflang = _header_links(headers)
    root = parser.root
    lang_attr = _attr(root, "lang") if root is not None else None
    parser.strip_tags(INVISIBLE_TAGS)
    container = parser.body or parser.root
    words = container.text(separator=" ").split() if container is not None else []
    visible = " ".join(words)

    return PageFacts(
        url=url,
        is_html=True,
        charset=charset,
        title=title,
        meta_desc=meta_desc,
        meta_robots=", ".join(meta_robots) or None,
        x_robots_tag=x_robots_tag,
        canonical=canonicals[0] if canonicals else (header_canonicals[0] if header_canonicals else None),
        h1=tuple(h1),
        h2=tuple(h2),
        lang=lang_attr or None,
        hreflang=tuple(hreflang),
        word_count=len(words),
        links=tuple(links),
        links_truncated=links_truncated,
        images_without_alt=images_without_alt,
        og=OpenGraph(
            title=og.get("og:title"),
            description=og.get("og:description"),
            image=og.get("og:image"),
            type=og.get("og:type"),
        ),
        meta_refresh=meta_refresh
        if meta_refresh is not None
        else (header_value(headers, "refresh") or "")[:MAX_REFRESH_CHARS] or None,
        hsts=header_value(headers, "strict-transport-security"),
        http_subresources=len(insecure),
        http_subresource_examples=tuple(insecure[:MAX_RESOURCE_EXAMPLES]),
        jsonld_types=frozenset().union(*(block.types for block in jsonld)),
        jsonld_blocks=len(jsonld),
        jsonld_invalid=tuple(block.invalid for block in jsonld if block.invalid is not None),
        jsonld_without_context=sum(block.without_context for block in jsonld),
        jsonld_without_type=sum(block.without_type for block in jsonld),
        content_hash=xxhash.xxh64_hexdigest(visible.encode("utf-8")) if visible else None,
        base_href=base_href,
        canonicals=tuple(canonicals),
        header_canonicals=header_canonicals,
        header_hreflang=header_hreflang,
        meta_agents=tuple(meta_agents),
    )
