"""Link planning (pure): which discovered links become edges, which are enqueued, which are pruned.

Every href goes through the one normalizer; internal links within the depth limit that pass the trap guards
are enqueued; nofollow, too-deep and external links are recorded as edges only (externals are status-checked
with a `check_only` message, never expanded).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, Protocol

from seolens_core.fetch import AddressPolicy
from seolens_core.frontier import FrontierMessage
from seolens_core.settings import CrawlSettings
from seolens_core.urls import (
    CrawlBoundary,
    NormalizeConfig,
    NormalizedURL,
    TrapConfig,
    TrapVerdict,
    base_dependency,
    check_traps,
    normalize,
    url_key_hex,
)

ALERT_REDIRECT_HOPS_EXCEEDED = "ALERT_REDIRECT_HOPS_EXCEEDED"
TARGET_CACHE_SIZE = 32_768
"""Link targets a crawl's scope remembers (~250 bytes each): a site's navigation and most of its links are the
same hrefs on page after page, and each resolves the same way whichever page it is on."""


@dataclass(frozen=True, slots=True)
class LinkTarget:
    """Where an href leads, as far as the page it is on does not matter: the normalized URL, whether it is
    inside the crawl, the trap guard it trips (internal URLs only) and its visited-set key."""

    url: NormalizedURL
    internal: bool
    trap: TrapVerdict | None
    key: str


@dataclass(frozen=True)
class CrawlScope:
    """The crawl's boundary and URL rules, built once per crawl from its settings."""

    boundary: CrawlBoundary
    normalize_config: NormalizeConfig
    trap_config: TrapConfig
    address_policy: AddressPolicy
    start_urls: tuple[NormalizedURL, ...]
    _targets: dict[tuple[str, str], LinkTarget | None] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )

    @classmethod
    def from_settings(cls, settings: CrawlSettings, now: float) -> CrawlScope:
        """`now` fixes the calendar trap guard's reference year."""
        config = NormalizeConfig(ignore_sorting_facets=settings.ignore_sorting_facets)
        starts = tuple(
            u
            for u in (normalize(s, None, config) for s in settings.start_urls)
            if isinstance(u, NormalizedURL)
        )
        trusted = list(settings.allow_hosts)
        if settings.trust_start_hosts:
            trusted += [u.host_port for u in starts] + [u.host for u in starts if u.port is None]
        return cls(
            boundary=CrawlBoundary([u.host_port for u in starts], settings.include_subdomains),
            normalize_config=config,
            trap_config=TrapConfig.at(now, max_query_params=settings.max_query_params),
            address_policy=AddressPolicy.for_hosts(trusted),
            start_urls=starts,
        )

    def normalize(self, href: str, base: str | NormalizedURL | None = None) -> NormalizedURL | None:
        result = normalize(href, base, self.normalize_config)
        return result if isinstance(result, NormalizedURL) else None

    def target(self, href: str, base: NormalizedURL) -> LinkTarget | None:
        """`href` on a page at `base` resolved, classified and keyed; None when it cannot be crawled. Kept for
        hrefs whose result does not depend on the page's path (absolute URLs and paths)."""
        shared = base_dependency(href, base)
        if shared is None:
            return self._target(href, base)
        cache_key = (href, shared)
        try:
            return self._targets[cache_key]
        except KeyError:
            pass
        if len(self._targets) >= TARGET_CACHE_SIZE:
            self._targets.clear()
        found = self._targets[cache_key] = self._target(href, base)
        return found

    def _target(self, href: str, base: NormalizedURL) -> LinkTarget | None:
        url = self.normalize(href, base)
        if url is None:
            return None
        internal = self.boundary.is_internal(url.host_port)
        trap = check_traps(url, self.trap_config) if internal else None
        return LinkTarget(url, internal, trap, url_key_hex(url.url))


@dataclass
class LinkPlan:
    edges: list[dict[str, Any]] = field(default_factory=list)
    enqueue: list[FrontierMessage] = field(default_factory=list)
    enqueue_hosts: list[str] = field(default_factory=list)
    pruned_rows: list[dict[str, Any]] = field(default_factory=list)
    rejected: int = 0

    def add(self, msg: FrontierMessage, origin: str) -> None:
        self.enqueue.append(msg)
        self.enqueue_hosts.append(origin)


class Href(Protocol):
    """A link as written in a page: its raw `href`, anchor `text` and `rel=nofollow` (`RawLink` is one)."""

    @property
    def href(self) -> str: ...

    @property
    def text(self) -> str: ...

    @property
    def nofollow(self) -> bool: ...


@dataclass(frozen=True, slots=True)
class RawHref:
    """An `Href` from elsewhere than a parsed page."""

    href: str
    text: str = ""
    nofollow: bool = False


def plan_links(
    msg: FrontierMessage,
    page: NormalizedURL,
    links: Iterable[Href],
    scope: CrawlScope,
    settings: CrawlSettings,
    *,
    base: NormalizedURL | None = None,
    page_nofollow: bool = False,
    known: Callable[[str], bool] | None = None,
) -> LinkPlan:
    """Edges for every http(s) link of the page, and the frontier messages this page may claim. `known(key)`:
    the URL is known to be claimed by another page (no message: its claim would be refused)."""
    plan = LinkPlan()
    seen: set[str] = set()
    depth = msg.depth + 1
    for link in links:
        resolved = scope.target(link.href, base or page)
        if resolved is None:
            plan.rejected += 1
            continue
        target, internal = resolved.url, resolved.internal
        nofollow = link.nofollow or page_nofollow
        plan.edges.append(
            {
                "crawl_id": msg.crawl_id,
                "source": page.url,
                "target": target.url,
                "internal": internal,
                "nofollow": nofollow,
                "anchor": link.text[:200],
                "depth": depth,
            }
        )
        if target.url in seen:
            continue
        seen.add(target.url)
        if msg.check_only or depth > settings.max_depth:
            continue
        if nofollow and settings.respect_nofollow and internal:
            continue
        if internal:
            verdict = resolved.trap
            if verdict is not None:
                plan.pruned_rows.append(_pruned(msg, target, depth, verdict.code, verdict.detail, page))
                continue
        elif not settings.check_external_links:
            continue
        if known is None or not known(resolved.key):
            plan.add(_message(msg, target, depth, check_only=not internal, key=resolved.key), target.origin)
    return plan


def plan_discovered(
    plan: LinkPlan,
    msg: FrontierMessage,
    urls: Iterable[NormalizedURL],
    scope: CrawlScope,
    settings: CrawlSettings,
    known: Callable[[str], bool] | None = None,
) -> None:
    """Add to `plan` the internal URLs a page names without linking them (its canonical and hreflang
    alternates), as search engines crawl them: enqueued like links (depth, trap guards), no edge, no inlink."""
    if msg.check_only or msg.depth + 1 > settings.max_depth:
        return
    claimed = {m.url for m in plan.enqueue} | {e["target"] for e in plan.edges}
    for url in urls:
        if url.url in claimed or url.url == msg.url or not scope.boundary.is_internal(url.host_port):
            continue
        claimed.add(url.url)
        if check_traps(url, scope.trap_config) is not None:
            continue
        key = url_key_hex(url.url)
        if known is None or not known(key):
            plan.add(_message(msg, url, msg.depth + 1, check_only=False, key=key), url.origin)


def plan_redirect(
    msg: FrontierMessage, page: NormalizedURL, location: str, scope: CrawlScope, settings: CrawlSettings
) -> LinkPlan:
    """A redirect target is a new URL at the same depth (a redirect is not a click); it is never followed inline.
    It passes the guards a link passes (the trap guards) and at most `fetch.max_redirect_hops` are followed."""
    plan = LinkPlan()
    target = scope.normalize(location, page)
    if target is None:
        plan.rejected += 1
        return plan
    internal = scope.boundary.is_internal(target.host_port)
    plan.edges.append(
        {
            "crawl_id": msg.crawl_id,
            "source": page.url,
            "target": target.url,
            "internal": internal,
            "nofollow": False,
            "anchor": "",
            "depth": msg.depth,
            "redirect": True,
        }
    )
    if msg.check_only:
        return plan
    hops, limit = msg.hops + 1, settings.fetch.max_redirect_hops
    if hops > limit:
        detail = f"not followed: more than {limit} redirects from the first URL"
        plan.pruned_rows.append(_pruned(msg, target, msg.depth, ALERT_REDIRECT_HOPS_EXCEEDED, detail, page))
        return plan
    if internal:
        verdict = check_traps(target, scope.trap_config)
        if verdict is not None:
            plan.pruned_rows.append(_pruned(msg, target, msg.depth, verdict.code, verdict.detail, page))
            return plan
        plan.add(_message(msg, target, msg.depth, check_only=False, hops=hops), target.origin)
    elif settings.check_external_links:
        plan.add(_message(msg, target, msg.depth, check_only=True, hops=hops), target.origin)
    return plan


def _pruned(
    msg: FrontierMessage, target: NormalizedURL, depth: int, code: str, detail: str, page: NormalizedURL
) -> dict[str, Any]:
    """The row of a URL that is recorded with a finding and never enqueued."""
    return {
        "crawl_id": msg.crawl_id,
        "url": target.url,
        "status": None,
        "depth": depth,
        "outcome": "pruned",
        "alerts": [code],
        "alert_detail": detail,
        "found_on": page.url,
    }


def _message(
    parent: FrontierMessage,
    target: NormalizedURL,
    depth: int,
    *,
    check_only: bool,
    key: str | None = None,
    hops: int = 0,
) -> FrontierMessage:
    return FrontierMessage(
        crawl_id=parent.crawl_id,
        url=target.url,
        key=key or url_key_hex(target.url),
        depth=depth,
        parent=parent.key,
        check_only=check_only,
        hops=hops,
    )
