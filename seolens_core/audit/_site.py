"""Site-wide rules over page rows and link rows (duplicates, broken links, redirects, canonicals, ...).

Shape: one pass over the pages keeps a compact per-URL summary (status, redirect target, canonical,
hreflang) and the duplicate groups; links are then streamed once and never held. Every rule keyed by
a value (duplicates: title/description/hash; links: target URL) can also run on partitions, as long
as pages and links are partitioned by that key, and the outputs concatenated.
"""

from __future__ import annotations

import bisect
from array import array
from collections import Counter, defaultdict
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from seolens_core.audit._catalogue import CATALOGUE, Catalogue, Finding, FindingCode, make_finding
from seolens_core.audit._hreflang import alternate_signals, pair_detail
from seolens_core.audit._settings import AuditSettings
from seolens_core.audit._transport import hsts_ok
from seolens_core.urls import url_key

F = FindingCode
_DEFAULT_SETTINGS = AuditSettings()
# Longest redirect path followed when rebuilding chains from hop rows (fetch caps hops at 20).
MAX_REDIRECT_WALK = 32
UNATTEMPTED_OUTCOMES = frozenset({"pending", "not_crawled"})
"""Row outcomes of URLs the crawl never fetched: no rule about their status applies to them."""


@dataclass(frozen=True, slots=True)
class PageRow:
    """What site rules need of one fetched URL; URLs are normalized absolute.

    One row per fetched hop: a redirect answer has `status` 3xx and `redirect_to` (its Location,
    normalized). `canonical` and `hreflang` hrefs are resolved too; `sitemap_hreflang` are the alternates its
    sitemap entries list (`xhtml:link`). `internal=False` marks an external
    URL that was only status-checked. `waf_provider` is set when the body was a WAF challenge.
    """

    url: str
    status: int | None
    redirect_to: str | None = None
    error: str | None = None
    internal: bool = True
    is_html: bool = True
    title: str | None = None
    meta_desc: str | None = None
    content_hash: str | None = None
    canonical: str | None = None
    noindex: bool = False
    hreflang: tuple[tuple[str, str], ...] = ()
    sitemap_hreflang: tuple[tuple[str, str], ...] = ()
    is_sitemap_url: bool = False
    robots_disallowed: bool = False
    waf_provider: str | None = None
    outcome: str | None = None
    hsts: str | None = None

    @property
    def attempted(self) -> bool:
        """False for a URL the crawl never got to (still queued, or left when the crawl stopped)."""
        return self.outcome not in UNATTEMPTED_OUTCOMES

    @property
    def ok(self) -> bool:
        return self.error is None and self.status is not None and 200 <= self.status < 300

    @property
    def redirects(self) -> bool:
        return self.status is not None and 300 <= self.status < 400

    @property
    def canonicalised(self) -> bool:
        return self.canonical is not None and self.canonical != self.url

    @property
    def indexable(self) -> bool:
        """A 2xx HTML-or-not page that is not noindex, not canonicalised elsewhere, not a challenge."""
        return self.ok and not self.noindex and not self.canonicalised and self.waf_provider is None

    @property
    def alternates(self) -> tuple[tuple[str, str], ...]:
        """hreflang alternates from every source (page, Link header, sitemap), each (language, URL) once."""
        if not self.sitemap_hreflang:
            return self.hreflang
        return tuple(dict.fromkeys((*self.hreflang, *self.sitemap_hreflang)))

    @classmethod
    def from_mapping(cls, row: Mapping[str, Any]) -> PageRow:
        """Build from a pages.jsonl row (unknown keys ignored; hreflang as [[lang, href], ...])."""
        hreflang = tuple((str(lang), str(href)) for lang, href in row.get("hreflang") or ())
        sitemap_hreflang = tuple((str(lang), str(href)) for lang, href in row.get("sitemap_hreflang") or ())
        status = row.get("status")
        return cls(
            url=str(row["url"]),
            status=int(status) if status is not None else None,
            redirect_to=row.get("redirect_to"),
            error=row.get("error"),
            internal=bool(row.get("internal", True)),
            is_html=bool(row.get("is_html", True)),
            title=row.get("title"),
            meta_desc=row.get("meta_desc"),
            content_hash=row.get("content_hash"),
            canonical=row.get("canonical"),
            noindex=bool(row.get("noindex", False)),
            hreflang=hreflang,
            sitemap_hreflang=sitemap_hreflang,
            is_sitemap_url=bool(row.get("is_sitemap_url", False)),
            robots_disallowed=bool(row.get("robots_disallowed", False)),
            waf_provider=row.get("waf_provider"),
            outcome=row.get("outcome"),
            hsts=row.get("hsts"),
        )


@dataclass(frozen=True, slots=True)
class LinkRow:
    """One edge from a crawled HTML page; `target` normalized absolute."""

    source: str
    target: str
    internal: bool
    nofollow: bool = False

    @classmethod
    def from_mapping(cls, row: Mapping[str, Any]) -> LinkRow:
        return cls(str(row["source"]), str(row["target"]), bool(row["internal"]), bool(row.get("nofollow")))


@dataclass(frozen=True, slots=True)
class _Target:
    status: int | None
    error: str | None
    redirect_to: str | None
    canonical: str | None
    waf: bool
    hreflang_hrefs: frozenset[str]
    noindex: bool = False


_PLAIN = _Target(200, None, None, None, False, frozenset())


def _can_make_link_finding(target: _Target) -> bool:
    """A link to it can be broken (a fetch error, 4xx, 5xx) or, internal, lead to a redirect (3xx): `link()`."""
    return not target.waf and (
        target.error is not None or (target.status is not None and target.status >= 300)
    )


def _status_text(target: _Target) -> str:
    return f"fetch error: {target.error}" if target.error is not None else f"status {target.status}"


def _target_text(target: _Target) -> str:
    """`_status_text`, plus where a redirecting target leads."""
    if target.redirect_to is not None and target.error is None:
        return f"{_status_text(target)}, redirects to {target.redirect_to}"
    return _status_text(target)


# The duplicate rules: (kind, finding code, what the pages share), in the order their findings are emitted.
DUPLICATE_KINDS: tuple[tuple[str, str, str], ...] = (
    ("title", F.TITLE_DUPLICATE, "title"),
    ("meta_desc", F.META_DESC_DUPLICATE, "meta description"),
    ("content_hash", F.DUPLICATE_CONTENT, "visible text"),
)


def duplicate_values(row: PageRow) -> Iterator[tuple[str, str]]:
    """The (kind, value) pairs by which `row` takes part in the duplicate rules (indexable internal HTML)."""
    if row.internal and row.is_html and row.indexable:
        if row.title:
            yield "title", row.title
        if row.meta_desc:
            yield "meta_desc", row.meta_desc
        if row.content_hash:
            yield "content_hash", row.content_hash


def duplicate_groups(groups: Iterable[Sequence[str]]) -> list[list[str]]:
    """The groups of more than one distinct URL, each sorted, in the order their findings are emitted
    (a partition of the values gives sorted runs that merge into the same order)."""
    return sorted(sorted(set(urls)) for urls in groups if len(set(urls)) > 1)


def duplicate_findings(
    groups: Iterable[Sequence[str]], code: str, what: str, catalogue: Catalogue = CATALOGUE
) -> Iterator[Finding]:
    """The findings of duplicate groups already in `duplicate_groups` form and order."""
    for urls in groups:
        for url in urls:
            other = urls[1] if url == urls[0] else urls[0]
            yield make_finding(code, url, f"{len(urls)} pages share this {what}", other, catalogue=catalogue)


def _duplicates(
    groups: Mapping[str, list[str]], code: str, what: str, catalogue: Catalogue
) -> Iterator[Finding]:
    yield from duplicate_findings(duplicate_groups(groups.values()), code, what, catalogue)


def _redirect_paths(redirects: Mapping[str, str], catalogue: Catalogue) -> Iterator[Finding]:
    for start in sorted(redirects):
        path = [start]
        seen = {start}
        current = redirects[start]
        loop = False
        while len(path) < MAX_REDIRECT_WALK:
            if current in seen:
                loop = True
                break
            if current not in redirects:
                break
            path.append(current)
            seen.add(current)
            current = redirects[current]
        text = " -> ".join((*path, current))
        if loop:
            yield make_finding(F.REDIRECT_LOOP, start, text, current, catalogue=catalogue)
        elif len(path) > 1:
            yield make_finding(
                F.REDIRECT_CHAIN, start, f"{len(path)} hops: {text}", current, catalogue=catalogue
            )


def _sitemap_reason(row: PageRow) -> tuple[str, str, str | None] | None:
    """Why a sitemap URL should not be listed: (kind, detail, related URL), or None when it is fine."""
    if row.robots_disallowed:
        return "blocked by robots.txt", "blocked by robots.txt", None
    if row.waf_provider is not None:
        return None
    if row.error is not None:
        return "fetch error", f"fetch error: {row.error}", None
    if row.redirects:
        to = f" to {row.redirect_to}" if row.redirect_to else ""
        return "redirect", f"redirects (status {row.status}){to}", row.redirect_to
    if not row.ok:
        kind = "server error" if row.status is not None and row.status >= 500 else "client error"
        return kind, f"status {row.status}", None
    if row.noindex:
        return "noindex", "noindex", None
    if row.canonicalised:
        return "canonicalised", f"canonicalised to {row.canonical}", row.canonical
    return None


def site_findings(
    pages: Iterable[PageRow],
    links: Iterable[LinkRow],
    settings: AuditSettings = _DEFAULT_SETTINGS,
    *,
    sitemap_urls: Collection[str] = (),
    inlinks: Mapping[str, int] | None = None,
    catalogue: Catalogue = CATALOGUE,
) -> Iterator[Finding]:
    """Site-wide findings. `pages` is read once, then `links` once.

    Duplicates (title, meta description, content hash) count only indexable internal HTML pages.
    Links to WAF-challenged URLs are never "broken". Orphans: sitemap URLs (rows flagged
    `is_sitemap_url` plus `sitemap_urls`) with no internal inlink from another crawled page; pass
    `inlinks` (URL -> count) to use counts computed elsewhere instead of counting `links`.
    `settings` is accepted for symmetry with audit_page (no site rule has a threshold yet).
    The same rules, fed one link at a time (links read from storage without a list): `SiteAudit`.
    """
    del settings
    audit = SiteAudit(pages, sitemap_urls=sitemap_urls, count_links=inlinks is None, catalogue=catalogue)
    yield from audit.page_findings()
    for link in links:
        finding = audit.link(link)
        if finding is not None:
            yield finding
    yield from audit.orphans(inlinks)


class SiteAudit:
    """`site_findings` in three calls, for callers that push links one by one (e.g. from an async stream).

    Build it from the pages (read once), emit `page_findings()`, call `link()` for every link row (it returns
    the link's finding, if any; a (source, target, code) is reported once), then `orphans(inlinks)`.
    Pages can also be pushed one at a time (`add_page`, in the order their findings should come out).
    Held: a summary of each page that can make a finding as a target (not 2xx, an error, a WAF challenge, a
    canonical elsewhere, noindex, hreflang alternates), 8 bytes (the 64-bit `url_key`) of every other page, the
    redirects, canonicalised and hreflang pages, the findings of non-indexable sitemap URLs and of sitemap
    hreflang entries, one HSTS summary per https host, the duplicate groups (unless `duplicates=False`: the
    caller runs `duplicate_values`/`duplicate_groups`/`duplicate_findings` on partitions) and the reported
    link findings; never links.
    """

    def __init__(
        self,
        pages: Iterable[PageRow],
        *,
        sitemap_urls: Collection[str] = (),
        count_links: bool = True,
        duplicates: bool = True,
        orphans: bool = True,
        catalogue: Catalogue = CATALOGUE,
    ) -> None:
        self._catalogue = catalogue
        self._duplicates = duplicates
        self._keep_sitemap = orphans  # False: `orphans()` is decided elsewhere, sitemap URLs are not kept
        self._targets: dict[str, _Target] = {}
        self._plain: array[int] = array("Q")  # url keys of 2xx pages that need no summary as a target
        self._plain_sorted = True
        self._redirects: dict[str, str] = {}
        self._titles: defaultdict[str, list[str]] = defaultdict(list)
        self._descriptions: defaultdict[str, list[str]] = defaultdict(list)
        self._hashes: defaultdict[str, list[str]] = defaultdict(list)
        self._canonicalised: list[tuple[str, str]] = []
        self._with_hreflang: list[tuple[str, tuple[tuple[str, str], ...]]] = []
        self._hreflang_rows: list[Finding] = []
        self._hsts: dict[str, list[Any]] = {}  # https host -> [first page, pages without HSTS, any with it]
        self._sitemap = set(sitemap_urls)
        self._sitemap_rows: list[Finding] = []
        self.sitemap_non_indexable: Counter[str] = Counter()
        """Non-indexable sitemap URLs by why: redirect, client error, noindex, canonicalised, ..."""
        self._count_links = count_links
        self._counted: defaultdict[str, int] = defaultdict(int)
        self._reported: set[tuple[str, str, str]] = set()
        for row in pages:
            self.add_page(row)

    def add_page(self, row: PageRow) -> None:
        """One page; a URL is added once (the caller deduplicates). One never fetched is no target of any rule."""
        if not row.attempted:
            if row.is_sitemap_url and self._keep_sitemap:
                self._sitemap.add(row.url)
            return
        plain = (
            row.ok
            and row.waf_provider is None
            and row.canonical in (None, row.url)
            and not row.alternates
            and not row.noindex
        )
        if plain:  # as a target: no link or canonical finding, hreflang only needs to know it is 2xx
            self._plain.append(url_key(row.url))
            self._plain_sorted = False
        else:
            self._targets[row.url] = _Target(
                row.status,
                row.error,
                row.redirect_to,
                row.canonical,
                row.waf_provider is not None,
                frozenset(href for _, href in row.alternates),
                row.noindex,
            )
        if row.redirects and row.redirect_to:
            self._redirects[row.url] = row.redirect_to
        if row.is_sitemap_url and self._keep_sitemap:
            self._sitemap.add(row.url)
        if row.is_sitemap_url or row.url in self._sitemap:
            reason = _sitemap_reason(row)
            if reason is not None:
                kind, detail, related = reason
                self.sitemap_non_indexable[kind] += 1
                self._sitemap_rows.append(
                    make_finding(F.SITEMAP_NON_INDEXABLE, row.url, detail, related, catalogue=self._catalogue)
                )
        usable = row.ok and row.internal and row.waf_provider is None
        if usable and row.canonical is not None and row.canonicalised:
            self._canonicalised.append((row.url, row.canonical))
        if usable and row.alternates:
            self._with_hreflang.append((row.url, row.alternates))
        if usable and row.sitemap_hreflang:  # the page's own annotations are checked by audit_page
            for code, detail, related in alternate_signals(row.url, row.sitemap_hreflang, "sitemap"):
                self._hreflang_rows.append(
                    make_finding(code, row.url, detail, related, catalogue=self._catalogue)
                )
        if usable and row.url.startswith("https://"):
            self._hsts_page(row)
        if self._duplicates:
            groups = {"title": self._titles, "meta_desc": self._descriptions, "content_hash": self._hashes}
            for kind, value in duplicate_values(row):
                groups[kind][value].append(row.url)

    def _hsts_page(self, row: PageRow) -> None:
        host = urlsplit(row.url).netloc
        seen = self._hsts.setdefault(host, [row.url, 0, False])
        if hsts_ok(row.hsts):
            seen[2] = True
        else:
            seen[1] += 1

    def _hsts_findings(self) -> Iterator[Finding]:
        """One finding per https host none of whose 2xx pages sent a Strict-Transport-Security header."""
        for host, (first, without, protected) in self._hsts.items():
            if not protected:
                detail = f"{without} https pages of {host}, none with Strict-Transport-Security"
                yield make_finding(F.HSTS_MISSING, first, detail, catalogue=self._catalogue)

    def _target(self, url: str) -> _Target | None:
        """The summary of `url` as a target; a plain 2xx page gets `_PLAIN` (None: not a crawled page)."""
        target = self._targets.get(url)
        if target is not None:
            return target
        if not self._plain_sorted:
            self._plain = array("Q", sorted(self._plain))
            self._plain_sorted = True
        key = url_key(url)
        i = bisect.bisect_left(self._plain, key)
        return _PLAIN if i < len(self._plain) and self._plain[i] == key else None

    def page_findings(self) -> Iterator[Finding]:
        """Duplicates, redirect chains and loops, sitemap URLs not indexable, canonicals, hreflang."""
        catalogue = self._catalogue
        if self._duplicates:
            yield from _duplicates(self._titles, F.TITLE_DUPLICATE, "title", catalogue)
            yield from _duplicates(self._descriptions, F.META_DESC_DUPLICATE, "meta description", catalogue)
            yield from _duplicates(self._hashes, F.DUPLICATE_CONTENT, "visible text", catalogue)
        yield from _redirect_paths(self._redirects, catalogue)
        yield from self._sitemap_rows
        for url, canonical in self._canonicalised:
            target = self._target(canonical)
            if target is None or target.waf:
                continue
            ok = target.error is None and target.status is not None and 200 <= target.status < 300
            if not ok:
                yield make_finding(
                    F.CANONICAL_NON_200, url, _target_text(target), canonical, catalogue=catalogue
                )
            elif target.canonical is not None and target.canonical != canonical:
                detail = f"{url} -> {canonical} -> {target.canonical}"
                yield make_finding(F.CANONICAL_CHAIN, url, detail, canonical, catalogue=catalogue)
            elif target.noindex:
                yield make_finding(
                    F.CANONICAL_TO_NOINDEX,
                    url,
                    "the canonical URL is noindex",
                    canonical,
                    catalogue=catalogue,
                )
        yield from self._hreflang_rows
        yield from self._hreflang_pairs()
        yield from self._hsts_findings()

    def _hreflang_pairs(self) -> Iterator[Finding]:
        """Each (page, alternate) pair: the alternate answers non-200, canonicalises elsewhere, or does not
        link back (`pair_detail` says which language; the report's hreflang matrix reads it back)."""
        for url, alternates in self._with_hreflang:
            for lang, href in alternates:
                target = self._target(href)
                if href == url or target is None or target.waf:
                    continue
                if target.error is not None or (target.status is not None and not 200 <= target.status < 300):
                    code, what = F.HREFLANG_TO_NON_200, _target_text(target)
                elif target.status is None:
                    continue
                elif target.canonical not in (None, href):
                    code, what = F.HREFLANG_TO_NON_CANONICAL, f"canonical is {target.canonical}"
                elif url not in target.hreflang_hrefs:
                    code, what = F.HREFLANG_NO_RETURN, "no return link"
                else:
                    continue
                yield make_finding(code, url, pair_detail(lang, what), href, catalogue=self._catalogue)

    def link(self, link: LinkRow) -> Finding | None:
        """The finding of one link (broken internal/external, internal link to a redirect), or None."""
        if self._count_links and link.internal and link.source != link.target:
            self._counted[link.target] += 1
        target = self._targets.get(link.target)  # a plain 2xx target makes no link finding
        if target is None or not _can_make_link_finding(target):
            return None
        broken = target.error is not None or (target.status is not None and target.status >= 400)
        code: str | None = None
        if broken:
            code = F.BROKEN_INTERNAL_LINK if link.internal else F.BROKEN_EXTERNAL_LINK
        elif link.internal and target.status is not None and 300 <= target.status < 400:
            code = F.INTERNAL_LINK_TO_REDIRECT
        if code is None or (link.source, link.target, code) in self._reported:
            return None
        self._reported.add((link.source, link.target, code))
        return make_finding(code, link.source, _status_text(target), link.target, catalogue=self._catalogue)

    def link_targets(self) -> Collection[str]:
        """The URLs a link can make a finding for: unless links are counted, `link()` of a link to any other
        URL does nothing, so a caller may skip such links unread."""
        return [url for url, target in self._targets.items() if _can_make_link_finding(target)]

    def link_rows(self, rows: Iterable[Mapping[str, Any]]) -> Iterator[Finding]:
        """`link()` of each stored link row; a row that cannot make a finding (its target is a plain 2xx
        page or was not crawled, and links are not counted) is passed over unbuilt."""
        for row in rows:
            if self._count_links or row["target"] in self._targets:
                finding = self.link(LinkRow.from_mapping(row))
                if finding is not None:
                    yield finding

    def orphans(self, inlinks: Mapping[str, int] | None = None) -> Iterator[Finding]:
        """Sitemap URLs with no inlink (`inlinks` from elsewhere, or the links counted by `link()`)."""
        counts = inlinks if inlinks is not None else self._counted
        for url in sorted(self._sitemap):
            if counts.get(url, 0) == 0:
                yield make_finding(
                    F.GRAPH_ORPHAN_PAGE, url, "in sitemap, 0 internal inlinks", catalogue=self._catalogue
                )
