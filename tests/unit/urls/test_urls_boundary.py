"""CrawlBoundary: exact host:port matches, and registrable domains under the Public Suffix List."""

from __future__ import annotations

import pytest

from seolens_core.urls import CrawlBoundary, NormalizedURL, normalize


def url(href: str) -> NormalizedURL:
    result = normalize(href)
    assert isinstance(result, NormalizedURL), result
    return result


@pytest.mark.parametrize(
    ("start", "include_subdomains", "host", "internal"),
    [
        ("example.com", False, "example.com", True),
        ("example.com", False, "EXAMPLE.com.", True),
        ("example.com", False, "www.example.com", False),
        ("example.com", True, "www.example.com", True),
        ("www.example.com", True, "shop.example.com", True),  # shares example.com
        ("example.com", True, "example.org", False),
        ("example.com", True, "notexample.com", False),
        ("a.example.co.uk", True, "b.example.co.uk", True),
        ("example.co.uk", True, "other.co.uk", False),
        ("example.co.uk", True, "co.uk", False),  # a public suffix is nobody's site
        ("alice.github.io", True, "bob.github.io", False),  # private section of the PSL
        ("alice.github.io", True, "www.alice.github.io", True),
        ("bücher.de", True, "shop.xn--bcher-kva.de", True),  # IDN start host is normalized
        ("127.0.0.1:8001", False, "127.0.0.1:8001", True),
        ("127.0.0.1:8001", False, "127.0.0.1:9000", False),
        ("127.0.0.1:8001", False, "127.0.0.1", False),
        ("127.0.0.1:8001", True, "127.0.0.1:9000", False),  # IP literals never match by domain
        ("10.0.0.1", True, "10.0.0.2", False),
        ("[::1]:8001", True, "[0:0::1]:8001", True),
        ("[::1]:8001", True, "[::2]:8001", False),
        ("example.com:8080", True, "www.example.com:8080", True),
        ("example.com:8080", True, "www.example.com", False),  # same domain, other port: another server
        ("example.com", True, "www.example.com:8080", False),
    ],
)
def test_is_internal(start: str, include_subdomains: bool, host: str, internal: bool) -> None:
    assert CrawlBoundary([start], include_subdomains=include_subdomains).is_internal(host) is internal


def test_start_urls_and_link_urls_compare_by_host_port() -> None:
    boundary = CrawlBoundary([url("http://127.0.0.1:8001/start")])
    assert boundary.is_internal(url("http://127.0.0.1:8001/other"))
    assert boundary.is_internal(url("https://127.0.0.1:8001/"))
    assert not boundary.is_internal(url("http://127.0.0.1:9000/"))
    site = CrawlBoundary([url("https://example.com/")])
    assert site.is_internal(url("http://example.com:80/"))  # http and https on default ports: one site
    assert site.is_internal(url("https://example.com:443/x"))
    assert not site.is_internal(url("https://example.com:8443/"))


def test_several_start_hosts() -> None:
    boundary = CrawlBoundary(["example.com", "blog.example.org"], include_subdomains=False)
    assert boundary.is_internal("blog.example.org")
    assert not boundary.is_internal("example.org")


def test_needs_a_start_host() -> None:
    with pytest.raises(ValueError):
        CrawlBoundary([])
