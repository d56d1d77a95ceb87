"""The fixture server's HTTP/1.1 values: request parsing, head rendering and chunk framing."""

from __future__ import annotations

import gzip

import pytest

from infra.fixture_site import Response
from infra.fixture_site._http import BadRequest, chunk, parse_head, render_head


def test_parse_head_reads_request_line_and_headers() -> None:
    raw = b"GET /a/b?x=1&y=2 HTTP/1.1\r\nHost: 127.0.0.1:8000\r\nUser-Agent:  SEOLens/1.0 \r\n\r\n"
    request = parse_head(raw, ("127.0.0.1", 5000))
    assert (request.method, request.target, request.version) == ("GET", "/a/b?x=1&y=2", "HTTP/1.1")
    assert (request.path, request.query) == ("/a/b", "x=1&y=2")
    assert request.host == "127.0.0.1:8000"
    assert request.header("user-agent") == "SEOLens/1.0"
    assert request.header("accept") is None
    assert request.client == ("127.0.0.1", 5000)


def test_parse_head_reduces_absolute_form_to_origin_form() -> None:
    assert parse_head(b"GET http://h:1/x?q HTTP/1.1\r\n\r\n", ("", 0)).target == "/x?q"
    assert parse_head(b"GET http://h:1 HTTP/1.1\r\n\r\n", ("", 0)).target == "/"


@pytest.mark.parametrize(
    "raw",
    [
        b"GET /\r\n\r\n",
        b"GET / FTP/1.0\r\n\r\n",
        b"GET / HTTP/1.1\r\nNoColon\r\n\r\n",
        b"GET / HTTP/1.1\r\n :x\r\n\r\n",
    ],
)
def test_parse_head_rejects_malformed_heads(raw: bytes) -> None:
    with pytest.raises(BadRequest):
        parse_head(raw, ("", 0))


@pytest.mark.parametrize(
    ("accept", "expected"),
    [
        ("gzip, deflate, br", True),
        ("br;q=1.0, gzip;q=0.5", True),
        ("gzip;q=0", False),
        ("identity", False),
        ("*", True),
        (None, False),
    ],
)
def test_accepts_gzip(accept: str | None, expected: bool) -> None:
    head = b"GET / HTTP/1.1\r\n" + (f"Accept-Encoding: {accept}\r\n".encode() if accept else b"") + b"\r\n"
    assert parse_head(head, ("", 0)).accepts_gzip() is expected


def _head_lines(response: Response, length: int, keep_alive: bool = True) -> list[str]:
    raw = render_head(response, length, keep_alive=keep_alive)
    assert raw.endswith(b"\r\n\r\n")
    return raw.decode("latin-1").split("\r\n")[:-2]


def test_render_head_frames_with_content_length() -> None:
    lines = _head_lines(Response(status=200, body=b"hello"), 5)
    assert lines[0] == "HTTP/1.1 200 OK"
    assert "Content-Length: 5" in lines
    assert "Content-Type: text/html; charset=utf-8" in lines
    assert not any(line.startswith("Connection:") for line in lines)


def test_render_head_chunked_lie_and_close() -> None:
    assert "Transfer-Encoding: chunked" in _head_lines(Response(body=b"x", chunked=True), 1)
    lying = _head_lines(Response(body=b"abc", content_length=99), 3, keep_alive=False)
    assert "Content-Length: 99" in lying
    assert "Connection: close" in lying


def test_render_head_lets_route_headers_replace_defaults() -> None:
    lines = _head_lines(Response(body=b"x", headers=(("Server", "cloudflare"),)), 1)
    assert [line for line in lines if line.lower().startswith("server:")] == ["Server: cloudflare"]


@pytest.mark.parametrize("status", [204, 304, 101])
def test_render_head_has_no_body_framing_for_bodyless_statuses(status: int) -> None:
    lines = _head_lines(Response(status=status, body=b""), 0)
    assert not any(line.startswith(("Content-Length", "Transfer-Encoding", "Content-Type")) for line in lines)


def test_encoded_body_is_gzip_and_stable() -> None:
    response = Response(body=b"a" * 1000, gzip=True)
    assert gzip.decompress(response.encoded_body()) == b"a" * 1000
    assert response.encoded_body() == response.encoded_body()
    assert Response(body=b"plain").encoded_body() == b"plain"


def test_chunk_framing() -> None:
    assert chunk(b"hello world, 17 b") == b"11\r\nhello world, 17 b\r\n"
    assert chunk(b"") == b"0\r\n\r\n"
