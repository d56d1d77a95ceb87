"""The crawl boundary: which hosts are internal (crawled recursively) and which external (checked only)."""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

from publicsuffixlist import PublicSuffixList

from ._host import is_ip_literal, normalize_host
from ._model import NormalizedURL


@lru_cache(maxsize=1)
def _psl() -> PublicSuffixList:
    """The list bundled with the package (ICANN and private sections), loaded once; no network."""
    return PublicSuffixList()


@lru_cache(maxsize=16384)
def _registrable_domain(host: str) -> str | None:
    """eTLD+1 of a normalized host, None for IP literals and for public suffixes themselves."""
    if is_ip_literal(host):
        return None
    domain = _psl().privatesuffix(host)
    return domain if isinstance(domain, str) else None


def _split_host_port(value: str) -> tuple[str, str]:
    """`host[:port]` into a normalized host and the port text ("" when absent); bad hosts stay as given."""
    if value.startswith("["):
        close = value.find("]")
        raw_host, port = (value, "") if close < 0 else (value[: close + 1], value[close + 2 :])
    else:
        raw_host, _, port = value.partition(":")
    host = normalize_host(raw_host)
    return (host if isinstance(host, str) else raw_host.lower()), port.lstrip("0")


class CrawlBoundary:
    """Internal: same `host[:port]` as a start host, or (include_subdomains) same registrable domain + port.

    Hosts are compared as `NormalizedURL.host_port`: a start URL http://127.0.0.1:8001 makes 127.0.0.1:8001
    internal but not 127.0.0.1:9000, and http and https on default ports count as the same site.
    Registrable domains come from the Public Suffix List, private section included, so a.github.io and
    b.github.io are different sites. IP literals never match by domain.
    """

    __slots__ = ("_domains", "_exact", "include_subdomains")

    def __init__(self, start_hosts: Iterable[str | NormalizedURL], include_subdomains: bool = False) -> None:
        self.include_subdomains = include_subdomains
        exact: set[tuple[str, str]] = set()
        domains: set[tuple[str, str]] = set()
        for start in start_hosts:
            host, port = _split_host_port(start.host_port if isinstance(start, NormalizedURL) else start)
            exact.add((host, port))
            domain = _registrable_domain(host)
            if domain is not None:
                domains.add((domain, port))
        if not exact:
            raise ValueError("CrawlBoundary needs at least one start host")
        self._exact = frozenset(exact)
        self._domains = frozenset(domains)

    def is_internal(self, host: str | NormalizedURL) -> bool:
        """True when links to `host` (a `host[:port]` string or a URL) are crawled, False if only checked."""
        host_port = _split_host_port(host.host_port if isinstance(host, NormalizedURL) else host)
        if host_port in self._exact:
            return True
        if not self.include_subdomains:
            return False
        domain = _registrable_domain(host_port[0])
        return domain is not None and (domain, host_port[1]) in self._domains
