"""The fixture server over real sockets, hit with httpx: routes, framing, keep-alive, log and failures."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from infra.fixture_site import (
    FixtureServer,
    Phase,
    Phased,
    Request,
    RequestRecord,
    Response,
    RouteContext,
    SiteSpec,
    chunked,
    data,
    endless,
    hang,
    html,
    lying_length,
    redirect,
    reset,
    text,
    trickle,
    xml,
)

BIG = "<p>" + "widget " * 5000 + "</p>"


def _generated(request: Request, ctx: RouteContext) -> Response:
    if request.path.startswith("/p/"):
        return html(f"<h1>page {request.path[3:]}</h1><a href='{ctx.url('/', site='other')}'>other</a>")
    return text("nope", status=404)


async def _async_route(request: Request, ctx: RouteContext) -> Response:
    await asyncio.sleep(0.01)
    return text(f"async #{ctx.number} {request.method} {request.query}")


def _broken(request: Request, ctx: RouteContext) -> Response:
    raise RuntimeError("route bug")


def _basic_site() -> SiteSpec:
    return SiteSpec(
        "basic",
        {
            "/": html("<h1>home</h1>"),
            "/feed.xml": xml("<rss/>"),
            "/teapot": text("short and stout", status=418, headers={"X-Kind": "teapot"}),
            "/bin": data(b"\x00\x01\x02", "application/octet-stream"),
            "/big": html(BIG, gzip=True),
            "/chunked": chunked(html(BIG)),
            "/r1": redirect("/r2", 301),
            "/r2": redirect("/", 302),
            "/async": _async_route,
            "/broken": _broken,
            "/slow": Response(body=b"late", delay=0.3),
            "/trickle": trickle("abcd", interval=0.1),
            "/endless": endless("x" * 1000, interval=0.0),
            "/lie": lying_length("short", claimed=100),
            "/reset": reset(),
            "/reset-mid": reset(after_bytes=30, then=html(BIG)),
            "/hang": hang(),
            "/late": hang(after=0.2, then=text("finally")),
        },
        fallback=_generated,
    )


@pytest.fixture(scope="module")
def server() -> Iterator[FixtureServer]:
    with FixtureServer([_basic_site(), SiteSpec("other", {"/": text("other")}, ip="127.0.0.2")]) as srv:
        yield srv


@pytest.fixture
def client(server: FixtureServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=server.base_url("basic"), trust_env=False, timeout=5.0) as c:
        yield c


def _last(server: FixtureServer, path: str) -> RequestRecord:
    server.wait_until(lambda s: all(r.end is not None for r in s.log("basic") if r.path == path), 3.0)
    return [r for r in server.log("basic") if r.path == path][-1]


@pytest.mark.parametrize(
    ("path", "status", "content_type", "body"),
    [
        ("/", 200, "text/html; charset=utf-8", b"<h1>home</h1>"),
        ("/feed.xml", 200, "application/xml; charset=utf-8", b"<rss/>"),
        ("/teapot", 418, "text/plain; charset=utf-8", b"short and stout"),
        ("/bin", 200, "application/octet-stream", b"\x00\x01\x02"),
        ("/missing", 404, "text/plain; charset=utf-8", b"nope"),
        ("/p/7", 200, "text/html; charset=utf-8", None),
    ],
)
def test_static_and_generated_routes(
    client: httpx.Client, path: str, status: int, content_type: str, body: bytes | None
) -> None:
    response = client.get(path)
    assert response.status_code == status
    assert response.headers["content-type"] == content_type
    if body is not None:
        assert response.content == body
    assert int(response.headers["content-length"]) == len(response.content)


def test_route_headers_and_cross_site_urls(server: FixtureServer, client: httpx.Client) -> None:
    assert client.get("/teapot").headers["x-kind"] == "teapot"
    other = server.base_url("other")
    assert other.startswith("http://127.0.0.2:")
    assert f"href='{other}/'" in client.get("/p/3").text
    with httpx.Client(trust_env=False) as c:
        assert c.get(other + "/").text == "other"
    assert server.host_port("other") == ("127.0.0.2", int(other.rsplit(":", 1)[1]))


def test_async_route_sees_query_method_and_site_counter(client: httpx.Client) -> None:
    first = client.get("/async?a=1").text
    second = client.post("/async?b=2", content=b"payload").text
    assert first.endswith("GET a=1") and second.endswith("POST b=2")
    assert int(second.split("#")[1].split()[0]) > int(first.split("#")[1].split()[0])


def test_route_exception_becomes_500(client: httpx.Client) -> None:
    assert client.get("/broken").status_code == 500
    assert client.get("/").status_code == 200


def test_gzip_body_is_decoded_by_the_client(client: httpx.Client) -> None:
    response = client.get("/big")
    assert response.headers["content-encoding"] == "gzip"
    assert int(response.headers["content-length"]) < len(BIG) // 10
    assert response.text == BIG


def test_head_sends_headers_only_with_the_get_length(server: FixtureServer, client: httpx.Client) -> None:
    get = client.get("/big")
    head = client.head("/big")
    assert head.status_code == 200 and head.content == b""
    assert head.headers["content-length"] == get.headers["content-length"]
    # the connection is still usable: nothing stray was sent after the HEAD answer
    assert client.get("/").text == "<h1>home</h1>"


def test_chunked_framing(client: httpx.Client) -> None:
    response = client.get("/chunked")
    assert response.headers["transfer-encoding"] == "chunked"
    assert "content-length" not in response.headers
    assert response.text == BIG


def test_redirects_are_served_and_can_be_followed(client: httpx.Client) -> None:
    first = client.get("/r1")
    assert (first.status_code, first.headers["location"]) == (301, "/r2")
    followed = client.get("/r1", follow_redirects=True)
    assert [r.status_code for r in followed.history] == [301, 302]
    assert followed.text == "<h1>home</h1>"


def test_keep_alive_reuses_one_connection(server: FixtureServer, client: httpx.Client) -> None:
    for path in ("/p/1", "/p/2", "/p/3"):
        client.get(path)
    client.get("/p/4", headers={"Connection": "close"})
    client.get("/p/5")
    server.wait_until(lambda s: s.count("basic", "/p/5") == 1)
    by_path = {r.path: r for r in server.log("basic")}
    connections = [by_path[f"/p/{n}"].connection for n in range(1, 6)]
    assert connections[0] == connections[1] == connections[2] == connections[3]
    assert connections[4] != connections[3]


def test_raw_keep_alive_framing_serves_two_requests_on_one_socket(server: FixtureServer) -> None:
    with socket.create_connection(server.host_port("basic"), timeout=3) as sock:
        sock.sendall(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        time.sleep(0.05)
        sock.sendall(b"GET /teapot HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    assert received.count(b"HTTP/1.1 ") == 2
    assert received.startswith(b"HTTP/1.1 200 OK")
    assert received.endswith(b"short and stout")


def test_bad_request_gets_400(server: FixtureServer) -> None:
    with socket.create_connection(server.host_port("basic"), timeout=3) as sock:
        sock.sendall(b"NONSENSE\r\n\r\n")
        assert sock.recv(1024).startswith(b"HTTP/1.1 400 ")


def test_log_records_timing_status_bytes_and_headers(server: FixtureServer, client: httpx.Client) -> None:
    wall = time.time()
    client.get("/slow?x=1", headers={"User-Agent": "SEOLens-test/1.0"})
    record = _last(server, "/slow?x=1")
    assert record.site == "basic" and record.method == "GET"
    assert record.status == 200 and record.outcome == "ok"
    assert record.duration is not None and record.duration >= 0.29
    assert abs(record.start_wall - wall) < 1.0
    assert record.bytes_sent > len(b"late")
    assert record.header("user-agent") == "SEOLens-test/1.0"
    assert record.host_header == server.base_url("basic").split("//")[1]
    assert record.client[0] == "127.0.0.1"


def test_log_helpers(server: FixtureServer, client: httpx.Client) -> None:
    server.clear_log()
    for target in ("/p/1", "/p/1?a=1", "/p/1?a=2", "/p/2"):
        client.get(target)
    server.wait_until(lambda s: len(s.log("basic")) == 4)
    assert server.paths("basic") == ["/p/1", "/p/1?a=1", "/p/1?a=2", "/p/2"]
    assert server.count("basic", "/p/1") == 3
    assert server.count("basic", "/p/1?a=1") == 1
    assert server.log("other") == []
    assert len(server.log()) == 4
    server.clear_log()
    assert server.log() == []


def test_trickle_sends_one_byte_per_interval(server: FixtureServer, client: httpx.Client) -> None:
    started = time.monotonic()
    assert client.get("/trickle").text == "abcd"
    assert time.monotonic() - started >= 0.29
    duration = _last(server, "/trickle").duration
    assert duration is not None and duration >= 0.29


def test_endless_body_until_the_client_gives_up(server: FixtureServer, client: httpx.Client) -> None:
    received = 0
    with client.stream("GET", "/endless") as response:
        assert response.headers["transfer-encoding"] == "chunked"
        for piece in response.iter_bytes():
            received += len(piece)
            if received > 200_000:
                break
    assert received > 200_000
    record = _last(server, "/endless")
    assert record.outcome == "client_gone" and record.bytes_sent >= 200_000


def test_lying_content_length_breaks_the_body(server: FixtureServer, client: httpx.Client) -> None:
    with pytest.raises(httpx.RemoteProtocolError):
        client.get("/lie")
    assert _last(server, "/lie").status == 200


@pytest.mark.parametrize("path", ["/reset", "/reset-mid"])
def test_reset_aborts_the_connection(server: FixtureServer, client: httpx.Client, path: str) -> None:
    with pytest.raises((httpx.ReadError, httpx.RemoteProtocolError)):
        client.get(path)
    record = _last(server, path)
    assert record.outcome == "reset" and record.status is None
    assert record.bytes_sent == (0 if path == "/reset" else 30)


def test_hang_until_client_timeout(server: FixtureServer, client: httpx.Client) -> None:
    started = time.monotonic()
    with pytest.raises(httpx.ReadTimeout):
        client.get("/hang", timeout=httpx.Timeout(5.0, read=0.3))
    assert time.monotonic() - started < 2.0
    record = _last(server, "/hang")
    assert record.status is None and record.outcome == "client_gone"
    assert record.duration is not None and 0.25 < record.duration < 1.0


def test_hang_then_answer(client: httpx.Client) -> None:
    started = time.monotonic()
    assert client.get("/late").text == "finally"
    assert time.monotonic() - started >= 0.19


def test_phased_route_over_the_wire() -> None:
    ok = text("ok")
    site = SiteSpec("phased", fallback=Phased([Phase(ok, requests=2), Phase(text("no", status=503))]))
    with FixtureServer([site]) as srv, httpx.Client(base_url=srv.base_url("phased"), trust_env=False) as c:
        assert [c.get(f"/{i}").status_code for i in range(4)] == [200, 200, 503, 503]
        assert [r.status for r in srv.log()] == [200, 200, 503, 503]


def test_stop_cuts_hung_requests_and_json_log_is_written(tmp_path: Path) -> None:
    log_path = tmp_path / "requests.jsonl"
    srv = FixtureServer([SiteSpec("h", {"/": text("ok"), "/hang": hang()})], log_path=log_path)
    srv.start()
    url = srv.base_url("h")
    with httpx.Client(trust_env=False) as c:
        c.get(url + "/")
    sock = socket.create_connection(srv.host_port("h"))
    sock.sendall(b"GET /hang HTTP/1.1\r\nHost: h\r\n\r\n")
    assert srv.wait_until(lambda s: s.count("h", "/hang") == 1)
    assert srv.log()[-1].outcome == "in_flight"
    srv.stop()
    sock.close()
    outcomes = {r.path: r.outcome for r in srv.log()}
    assert outcomes == {"/": "ok", "/hang": "cancelled"}
    lines = [json.loads(line) for line in log_path.read_text().splitlines()]
    assert [(x["path"], x["status"], x["outcome"]) for x in lines] == [
        ("/", 200, "ok"),
        ("/hang", None, "cancelled"),
    ]
    assert lines[0]["site"] == "h" and lines[0]["end"] >= lines[0]["start"]


def test_lifecycle_errors() -> None:
    with pytest.raises(ValueError):
        FixtureServer([SiteSpec("a"), SiteSpec("a")])
    with FixtureServer([SiteSpec("a")]) as srv:
        with pytest.raises(RuntimeError):
            srv.start()
        taken = srv.host_port("a")[1]
        clash = FixtureServer([SiteSpec("b", port=taken)])
        with pytest.raises(OSError):
            clash.start()
    not_started = FixtureServer([SiteSpec("c")])
    with pytest.raises(RuntimeError):
        not_started.base_url("c")
    not_started.stop()


def test_many_sites_on_loopback_addresses(serve_sites: Callable[..., FixtureServer]) -> None:
    sites = [SiteSpec(f"s{i}", {"/": text(f"site {i}")}, ip=f"127.0.0.{i + 1}") for i in range(4)]
    srv = serve_sites(*sites)
    with httpx.Client(trust_env=False) as c:
        for i in range(4):
            assert c.get(srv.url(f"s{i}")).text == f"site {i}"
    assert {r.site for r in srv.log()} == {"s0", "s1", "s2", "s3"}


@pytest.fixture
def serve_sites() -> Iterator[Callable[..., FixtureServer]]:
    started: list[FixtureServer] = []

    def start(*sites: SiteSpec) -> FixtureServer:
        srv = FixtureServer(sites)
        srv.start()
        started.append(srv)
        return srv

    yield start
    for srv in started:
        srv.stop()


def test_gaps_and_peak_concurrency(serve_sites: Callable[..., FixtureServer]) -> None:
    srv = serve_sites(SiteSpec("g", {"/robots.txt": text("User-agent: *\n")}, fallback=Response(delay=0.2)))
    with httpx.Client(base_url=srv.base_url("g"), trust_env=False) as c:
        c.get("/robots.txt")
        c.get("/a")
        time.sleep(0.1)
        c.get("/b")
    gaps = srv.gaps("g")
    assert len(gaps) == 1 and gaps[0] >= 0.29
    assert srv.peak_concurrency("g") == 1

    async def burst() -> None:
        async with httpx.AsyncClient(base_url=srv.base_url("g"), trust_env=False) as ac:
            await asyncio.gather(*(ac.get(f"/c{i}") for i in range(3)))

    asyncio.run(burst())
    assert srv.peak_concurrency("g") == 3
