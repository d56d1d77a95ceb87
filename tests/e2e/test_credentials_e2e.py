"""`--cookie` / `--header` secrets end to end: only the audited site's own requests carry them.

The shop (https://shop.test:P/, TLS and plain HTTP on one port) reaches a third-party host every way a crawl
does: a linked pixel (external status check), an off-site redirect, that host's robots.txt and a `Sitemap:`
line naming it; it also links its own host over plain http and a subdomain. The evidence is the fixture
server's record of every request's headers: the secrets reach https://shop.test:P only, and
https://blog.shop.test:P only with `include_subdomains`.
"""

from __future__ import annotations

import socket
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from infra.fixture_site import FixtureServer, RequestRecord, SiteSpec
from infra.fixture_site._http import Request, Response
from infra.fixture_site._routes import RouteContext, html, redirect, text, xml
from infra.fixture_site._tls import TlsFixture
from infra.local.iam_audit import IamAudit
from infra.local.runtime import LocalCloud, run_crawl
from seolens_core.fetch import _pool
from seolens_core.settings import CrawlSettings
from tests.e2e.conftest import translated_template

COOKIE = "session=SECRET-COOKIE"
BEARER = "Bearer SECRET-TOKEN"
SHOP_IP, OTHER_IP = "127.0.0.41", "127.0.0.42"
NAMES = {"shop.test": SHOP_IP, "blog.shop.test": SHOP_IP, "other.test": OTHER_IP}


def _site(urls: dict[str, str], tls: TlsFixture) -> tuple[SiteSpec, SiteSpec]:
    def home(request: Request, ctx: RouteContext) -> Response:
        links = [
            f"{urls['shop']}/ok",
            f"{urls['shop_http']}/plain",  # the audited host, but over plain http
            f"{urls['blog']}/post",  # a subdomain
            f"{urls['other']}/pixel",  # third party: a status check
            "/go",  # redirects off-site
        ]
        anchors = " ".join(f"<a href='{href}'>{i}</a>" for i, href in enumerate(links))
        return html(f"<html><head><title>The shop</title></head><body><h1>Shop</h1>{anchors}</body></html>")

    page = html("<html><head><title>A page of the scenario</title></head><body><h1>Page</h1></body></html>")
    shop = SiteSpec(
        "shop",
        {
            "/": home,
            "/go": lambda req, ctx: redirect(f"{urls['other']}/landing", 302),
            "/robots.txt": lambda req, ctx: text(
                f"User-agent: *\nAllow: /\nSitemap: {urls['other']}/sitemap.xml\n"
            ),
        },
        fallback=page,
        ip=SHOP_IP,
        tls=tls.server(),
    )
    other = SiteSpec(
        "other",
        {
            "/sitemap.xml": lambda req, ctx: xml(
                "<?xml version='1.0'?><urlset xmlns='http://www.sitemaps.org/schemas/sitemap/0.9'>"
                f"<url><loc>{urls['shop']}/from-sitemap</loc></url></urlset>"
            )
        },
        fallback=page,
        ip=OTHER_IP,
    )
    return shop, other


@pytest.fixture
def names_resolve(monkeypatch: pytest.MonkeyPatch) -> None:
    """shop.test, blog.shop.test and other.test resolve to their fixture addresses (no DNS here)."""
    real: Callable[..., Any] = socket.getaddrinfo

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        return real(NAMES.get(host, host), *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)


@pytest.fixture
def tls(monkeypatch: pytest.MonkeyPatch) -> TlsFixture:
    """A certificate for the shop's names, trusted by the crawler's TLS context for this test."""
    fixture = TlsFixture.for_names(["shop.test", "blog.shop.test"])
    monkeypatch.setattr(_pool, "crawler_ssl_context", fixture.client)
    return fixture


@pytest.fixture
def server(tls: TlsFixture, names_resolve: None) -> Iterator[tuple[FixtureServer, dict[str, str]]]:
    urls: dict[str, str] = {}
    with FixtureServer(_site(urls, tls)) as srv:
        shop_port, other_port = srv.host_port("shop")[1], srv.host_port("other")[1]
        urls.update(
            shop=f"https://shop.test:{shop_port}",
            shop_http=f"http://shop.test:{shop_port}",
            blog=f"https://blog.shop.test:{shop_port}",
            other=f"http://other.test:{other_port}",
        )
        yield srv, urls


def _carries_secrets(record: RequestRecord) -> bool:
    return record.header("cookie") is not None or record.header("authorization") is not None


def _has_both(record: RequestRecord) -> bool:
    return record.header("cookie") == COOKIE and record.header("authorization") == BEARER


@pytest.mark.parametrize("include_subdomains", [False, True], ids=["exact-host", "include-subdomains"])
def test_secrets_go_to_the_audited_site_only(
    local_cloud: LocalCloud,
    server: tuple[FixtureServer, dict[str, str]],
    tmp_path: Path,
    include_subdomains: bool,
) -> None:
    srv, urls = server
    port = srv.host_port("shop")[1]
    settings = CrawlSettings(
        start_urls=(f"{urls['shop']}/",),
        cookie=COOKIE,
        extra_headers={"Authorization": BEARER},
        include_subdomains=include_subdomains,
        allow_hosts=(f"blog.shop.test:{port}", f"other.test:{srv.host_port('other')[1]}"),
        progress_poll_s=1,
        robots_retry_base_s=1,
    )
    assert local_cloud.stack is not None
    audit = IamAudit(local_cloud.stack)
    with audit.recording():
        run = run_crawl(local_cloud, settings, workers=2, out_dir=tmp_path)
    assert run.execution.status == "SUCCEEDED"
    # The secrets were sealed with KMS; the worker and the seeder opening them is granted by their roles.
    assert ("FetchWorkerFunction", "kms:Decrypt") in {(a.function, a.action) for a in audit.accesses}
    assert audit.violations(translated_template()) == [] and not audit.unresolved
    assert run.record.status.terminal and run.record.sealed_secrets is None  # dropped when the crawl ended
    assert run.record.secret_names == ("Authorization", "Cookie")  # the masked view still names them

    shop = [r for r in srv.log("shop") if r.host_header == f"shop.test:{port}"]
    over_https = [r for r in shop if r.tls]
    assert {"/", "/robots.txt", "/ok", "/go"} <= {r.path for r in over_https}
    assert all(_has_both(r) for r in over_https), [(r.path, r.headers) for r in over_https]

    over_http = [r for r in shop if not r.tls]
    assert "/plain" in {r.path for r in over_http}  # the start URL was https: never in the clear
    assert not any(_carries_secrets(r) for r in over_http), [(r.path, r.headers) for r in over_http]

    blog = [r for r in srv.log("shop") if r.host_header == f"blog.shop.test:{port}"]
    assert "/post" in {r.path for r in blog}
    if include_subdomains:
        assert all(_has_both(r) for r in blog), [(r.path, r.headers) for r in blog]
    else:
        assert not any(_carries_secrets(r) for r in blog), [(r.path, r.headers) for r in blog]

    other = srv.log("other")
    assert {"/pixel", "/landing", "/robots.txt", "/sitemap.xml"} <= {r.path for r in other}
    assert not any(_carries_secrets(r) for r in other), [(r.path, r.headers) for r in other]
