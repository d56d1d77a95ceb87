"""Credentials: the crawl's configured headers (`--cookie`, `--header`) and the one rule for where they go.

They are the audited site's secrets: a request carries them only when its URL is on a start host (same host
and port; with `include_subdomains`, also a subdomain of a start host on that port), and never over plain
http when that start URL was https. Every request the fetcher makes is checked here, one at a time, so
external link checks, off-site redirect targets, other hosts' robots.txt and sitemaps never see them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import httpx

from seolens_core.urls import NormalizedURL, normalize

__all__ = ["CredentialScope", "Credentials"]


@dataclass(frozen=True, slots=True)
class _StartHost:
    host: str
    port: int | None
    https_only: bool


@dataclass(frozen=True, slots=True)
class CredentialScope:
    """Which URLs may carry the crawl's credentials (see the module docstring)."""

    starts: tuple[_StartHost, ...]
    include_subdomains: bool = False

    @classmethod
    def for_start_urls(cls, start_urls: Iterable[str], include_subdomains: bool = False) -> CredentialScope:
        """Start URLs as the crawl normalizes them (the URLs it fetches are in that form too)."""
        starts = []
        for raw in start_urls:
            start = normalize(raw)
            if isinstance(start, NormalizedURL):
                url = httpx.URL(start.url)
                starts.append(_StartHost(url.host, url.port, https_only=url.scheme == "https"))
        return cls(tuple(starts), include_subdomains)

    def allows(self, url: httpx.URL) -> bool:
        """True when a request to `url` may carry the credentials."""
        host = url.host
        return any(
            start.port == url.port
            and (url.scheme == "https" or (url.scheme == "http" and not start.https_only))
            and (host == start.host or (self.include_subdomains and _is_subdomain(host, start.host)))
            for start in self.starts
        )


def _is_subdomain(host: str, parent: str) -> bool:
    # IP literals have no subdomains ("1.127.0.0.1" is not one of 127.0.0.1's).
    return host.endswith("." + parent) and not _is_ip(parent)


def _is_ip(host: str) -> bool:
    return ":" in host or host.replace(".", "").isdigit()


@dataclass(frozen=True, slots=True)
class Credentials:
    """Secret request headers and the scope they are sent in; revealed per request, never stored elsewhere."""

    headers: Mapping[str, str] = field(default_factory=dict, repr=False)
    scope: CredentialScope = field(default_factory=lambda: CredentialScope(()))

    def for_url(self, url: httpx.URL) -> Mapping[str, str]:
        """The headers a request to `url` carries: all of them or none."""
        if not self.headers or not self.scope.allows(url):
            return {}
        return self.headers
