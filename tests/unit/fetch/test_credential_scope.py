"""Where the crawl's secrets may go (`CredentialScope`): the start hosts only, never in the clear after https.

The end-to-end proof, on the fixture server's request headers, is `tests/e2e/test_credentials_e2e.py`.
"""

from __future__ import annotations

import httpx
import pytest

from seolens_core.fetch import Credentials, CredentialScope

CASES = [
    # (start URL, include_subdomains, URL fetched, carries the secrets)
    ("https://shop.test/", False, "https://shop.test/page", True),
    ("https://shop.test/", False, "https://shop.test:443/page", True),
    ("https://SHOP.test./", False, "https://shop.test/page", True),
    ("https://shop.test/", False, "http://shop.test/page", False),  # never in the clear after https
    ("https://shop.test/", False, "https://shop.test:8443/page", False),  # another port, another service
    ("https://shop.test/", False, "https://blog.shop.test/", False),
    ("https://shop.test/", True, "https://blog.shop.test/", True),
    ("https://shop.test/", True, "https://a.b.shop.test/", True),
    ("https://shop.test/", True, "http://blog.shop.test/", False),
    ("https://www.shop.test/", True, "https://shop.test/", False),  # a parent is not a subdomain
    ("https://shop.test/", True, "https://evilshop.test/", False),
    ("https://shop.test/", True, "https://shop.test.evil.example/", False),
    ("http://shop.test/", False, "http://shop.test/page", True),
    ("http://shop.test/", False, "https://shop.test/page", True),  # an upgrade keeps them
    ("http://127.0.0.41:8080/", True, "http://127.0.0.41:8080/x", True),
    ("http://127.0.0.41:8080/", True, "http://1.127.0.0.41:8080/x", False),  # IP literals have no subdomains
    ("http://127.0.0.41:8080/", False, "http://127.0.0.42:8080/x", False),
    ("http://[::1]:8080/", False, "http://[::1]:8080/x", True),
]


@pytest.mark.parametrize(("start", "subdomains", "url", "carries"), CASES)
def test_scope(start: str, subdomains: bool, url: str, carries: bool) -> None:
    scope = CredentialScope.for_start_urls([start], subdomains)
    assert scope.allows(httpx.URL(url)) is carries


def test_all_or_none_of_the_headers_and_never_in_repr() -> None:
    credentials = Credentials(
        {"Cookie": "sid=SECRET", "Authorization": "Bearer SECRET"},
        CredentialScope.for_start_urls(["https://shop.test/"]),
    )
    assert credentials.for_url(httpx.URL("https://shop.test/a")) == {
        "Cookie": "sid=SECRET",
        "Authorization": "Bearer SECRET",
    }
    assert credentials.for_url(httpx.URL("https://cdn.example/a")) == {}
    assert "SECRET" not in repr(credentials)
