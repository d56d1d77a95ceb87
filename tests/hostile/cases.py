"""The hostile-input corpus: what the web may send us, how each case is served, and the expected outcome.

Each case is served raw (tests/hostile/_raw_server.py) and run through the real fetch + parse path:
Fetcher (size cap, deadline, SSRF guard) and then extract_page / SitemapParser / RobotsRules.
`expect` names the outcome recorded for it: "parsed" (a normal result), "truncated" (body capped at the
fetch limit), "timeout" (the total deadline fired), "protocol" (the response was refused as malformed),
"finding:<CODE>" (the parser recorded that finding), "not_html" (not treated as a page).
"""

from __future__ import annotations

import asyncio
import functools
import gzip
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import brotli

Writer = Callable[[asyncio.StreamWriter], Awaitable[None]]
MB = 1024 * 1024
BODY_CAP = 5 * MB  # the Fetcher's default max_body_bytes


@dataclass(frozen=True, slots=True)
class Case:
    name: str
    kind: str  # "page" | "robots" | "sitemap"
    serve: Writer
    expect: frozenset[str]  # any of these outcomes is acceptable
    heavy: bool = False


def _response(
    content: bytes | Callable[[], bytes], ctype: str = "text/html", extra: str = "", length: int | None = None
) -> Writer:
    async def serve(w: asyncio.StreamWriter) -> None:
        body = content() if callable(content) else content
        n = len(body) if length is None else length
        w.write(
            f"HTTP/1.1 200 OK\r\nContent-Type: {ctype}\r\nContent-Length: {n}\r\n{extra}\r\n".encode(
                "latin-1"
            )
        )
        w.write(body)

    return serve


def _raw(data: bytes) -> Writer:
    async def serve(w: asyncio.StreamWriter) -> None:
        w.write(data)

    return serve


def _trickle(interval: float, total: int) -> Writer:
    async def serve(w: asyncio.StreamWriter) -> None:
        w.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: %d\r\n\r\n" % total)
        for _ in range(total):
            w.write(b"x")
            await w.drain()
            await asyncio.sleep(interval)

    return serve


def _endless_chunked() -> Writer:
    async def serve(w: asyncio.StreamWriter) -> None:
        w.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nTransfer-Encoding: chunked\r\n\r\n")
        chunk = b"<p>" + b"a" * 65_000 + b"</p>"
        frame = b"%x\r\n%s\r\n" % (len(chunk), chunk)
        while True:
            w.write(frame)
            await w.drain()

    return serve


@functools.cache
def _gzip_bomb(size: int) -> bytes:
    c = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = b"\0" * MB
    return b"".join([c.compress(block) for _ in range(size // MB)] + [c.flush()])


@functools.cache
def _deflate_bomb(size: int) -> bytes:
    c = zlib.compressobj(9)
    block = b"\0" * MB
    return b"".join([c.compress(block) for _ in range(size // MB)] + [c.flush()])


@functools.cache
def _brotli_bomb() -> bytes:
    return bytes(brotli.compress(b"\0" * 100 * MB, quality=5))


def _html(inner: str) -> bytes:
    return f"<!doctype html><html><head><title>t</title></head><body>{inner}</body></html>".encode()


URLSET = "<?xml version='1.0'?><urlset xmlns='http://www.sitemaps.org/schemas/sitemap/0.9'>{}</urlset>"
BILLION_LAUGHS = (
    b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">'
    + b"".join(
        b'<!ENTITY lol%d "%s">' % (i, (b"&lol%d;" % (i - 1) if i > 1 else b"&lol;") * 10)
        for i in range(1, 10)
    )
    + b"]><urlset><url><loc>http://x/&lol9;</loc></url></urlset>"
)
XXE = (
    b'<?xml version="1.0"?><!DOCTYPE u [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>'
    b"<urlset xmlns='http://www.sitemaps.org/schemas/sitemap/0.9'><url><loc>http://x/&xxe;</loc></url></urlset>"
)
XXE_PARAM = (
    b'<?xml version="1.0"?><!DOCTYPE u [<!ENTITY % p SYSTEM "http://169.254.169.254/latest/meta-data/">%p;]>'
    b"<urlset/>"
)
INDEX_SELF = (
    b"<?xml version='1.0'?><sitemapindex xmlns='http://www.sitemaps.org/schemas/sitemap/0.9'>"
    b"<sitemap><loc>http://127.0.0.1/sitemap.xml</loc></sitemap></sitemapindex>"
)

ANY_FETCH_END = frozenset({"parsed", "truncated", "timeout", "protocol"})


def _cases() -> list[Case]:
    c: list[Case] = []
    page, robots, sitemap = "page", "robots", "sitemap"
    parsed = frozenset({"parsed"})
    # --- sitemaps
    c.append(
        Case(
            "xml_bomb_billion_laughs",
            sitemap,
            _response(BILLION_LAUGHS, "application/xml"),
            frozenset({"finding:ALERT_SITEMAP_DTD_REJECTED"}),
        )
    )
    c.append(
        Case(
            "xxe_external_entity",
            sitemap,
            _response(XXE, "application/xml"),
            frozenset({"finding:ALERT_SITEMAP_DTD_REJECTED"}),
        )
    )
    c.append(
        Case(
            "xxe_parameter_entity_to_metadata",
            sitemap,
            _response(XXE_PARAM, "application/xml"),
            frozenset({"finding:ALERT_SITEMAP_DTD_REJECTED"}),
        )
    )
    c.append(
        Case(
            "gzip_bomb_sitemap_1GB",
            sitemap,
            _response(lambda: _gzip_bomb(1024 * MB), "application/x-gzip"),
            frozenset(
                {
                    "finding:ALERT_SITEMAP_TOO_LARGE",
                    "finding:ALERT_SITEMAP_MALFORMED",
                    "finding:ALERT_SITEMAP_NOT_A_SITEMAP",
                }
            ),
            heavy=True,
        )
    )
    c.append(Case("sitemap_index_self_cycle", sitemap, _response(INDEX_SELF, "application/xml"), parsed))
    c.append(
        Case(
            "sitemap_malformed_xml",
            sitemap,
            _response(b"<urlset><url><loc>http://x/</url>", "text/xml"),
            frozenset({"finding:ALERT_SITEMAP_MALFORMED", "parsed"}),
        )
    )
    c.append(
        Case(
            "sitemap_html_instead",
            sitemap,
            _response(_html("not a sitemap")),
            frozenset({"finding:ALERT_SITEMAP_NOT_A_SITEMAP", "finding:ALERT_SITEMAP_MALFORMED"}),
        )
    )
    c.append(
        Case(
            "sitemap_100k_urls_over_limit",
            sitemap,
            _response(
                URLSET.format(
                    "".join(f"<url><loc>http://127.0.0.1/p{i}</loc></url>" for i in range(60_000))
                ).encode(),
                "application/xml",
            ),
            frozenset({"finding:ALERT_SITEMAP_TOO_MANY_URLS", "parsed"}),
        )
    )
    c.append(
        Case(
            "sitemap_100kb_loc",
            sitemap,
            _response(
                URLSET.format(f"<url><loc>http://127.0.0.1/{'a' * 100_000}</loc></url>").encode(),
                "application/xml",
            ),
            frozenset({"finding:ALERT_SITEMAP_INVALID_ENTRIES", "parsed"}),
        )
    )
    c.append(
        Case(
            "sitemap_binary_garbage",
            sitemap,
            _response(bytes(range(256)) * 1000, "application/xml"),
            frozenset({"finding:ALERT_SITEMAP_MALFORMED", "finding:ALERT_SITEMAP_NOT_A_SITEMAP", "parsed"}),
        )
    )
    c.append(
        Case(
            "sitemap_truncated_gzip",
            sitemap,
            _response(gzip.compress(URLSET.encode())[:20], "application/gzip"),
            frozenset({"finding:ALERT_SITEMAP_MALFORMED", "finding:ALERT_SITEMAP_NOT_A_SITEMAP", "parsed"}),
        )
    )
    # --- robots.txt
    c.append(
        Case(
            "robots_10MB",
            robots,
            _response(b"Disallow: /x\n" * (10 * MB // 13), "text/plain"),
            frozenset({"truncated", "parsed"}),
        )
    )
    c.append(
        Case(
            "robots_bom",
            robots,
            _response(b"\xef\xbb\xbfUser-agent: *\nDisallow: /private\n", "text/plain"),
            frozenset({"parsed:disallows_private"}),
        )
    )
    c.append(
        Case(
            "robots_nul_bytes",
            robots,
            _response(b"User-agent: *\n\0\0Disallow: /private\n\0", "text/plain"),
            parsed,
        )
    )
    c.append(
        Case(
            "robots_cr_only",
            robots,
            _response(b"User-agent: *\rDisallow: /private\r", "text/plain"),
            frozenset({"parsed:disallows_private"}),
        )
    )
    c.append(
        Case(
            "robots_invalid_utf8",
            robots,
            _response(b"User-agent: *\nDisallow: /\xff\xfe\xc3(\nDisallow: /private\n", "text/plain"),
            frozenset({"parsed:disallows_private"}),
        )
    )
    c.append(
        Case(
            "robots_utf16",
            robots,
            _response("User-agent: *\nDisallow: /private\n".encode("utf-16"), "text/plain"),
            parsed,
        )
    )
    c.append(Case("robots_html_page", robots, _response(_html("<h1>robots</h1>")), parsed))
    c.append(
        Case(
            "robots_huge_line",
            robots,
            _response(b"Disallow: /" + b"a" * 2 * MB + b"\n", "text/plain"),
            parsed,
        )
    )
    c.append(Case("robots_binary", robots, _response(bytes(range(256)) * 400, "text/plain"), parsed))
    # --- HTML pages
    c.append(
        Case("html_20MB", page, _response(_html("<p>word </p>" * (20 * MB // 12))), frozenset({"truncated"}))
    )
    c.append(
        Case(
            "html_100k_deep_nesting",
            page,
            _response(_html("<div>" * 100_000 + "x" + "</div>" * 100_000)),
            parsed,
        )
    )
    c.append(Case("html_100k_deep_unclosed", page, _response(_html("<span>" * 100_000)), parsed))
    c.append(
        Case(
            "html_million_links",
            page,
            _response(_html("<a href='/l'>l</a>" * 1_000_000)),
            frozenset({"truncated", "parsed:links_capped"}),
        )
    )
    c.append(
        Case(
            "html_10k_distinct_links",
            page,
            _response(_html("".join(f"<a href='/l{i}'>l</a>" for i in range(50_000)))),
            frozenset({"parsed:links_capped"}),
        )
    )
    c.append(Case("html_100kb_url", page, _response(_html(f"<a href='/{'u' * 100_000}'>x</a>")), parsed))
    c.append(
        Case(
            "html_invalid_idn",
            page,
            _response(
                _html(
                    "<a href='http://xn--zz.example/'>a</a><a href='http://\u2603\u2603..example/'>b</a>"
                    "<a href='http://a\u200d\u0000b.example/'>c</a><a href='http://xn--/'>d</a>"
                )
            ),
            parsed,
        )
    )
    c.append(Case("html_binary_as_text_html", page, _response(bytes(range(256)) * 4000), parsed))
    c.append(Case("html_nul_flood", page, _response(b"\0" * MB), parsed))
    c.append(
        Case(
            "html_invalid_utf8",
            page,
            _response(b"<title>\xff\xfe\xc3(</title><h1>\xed\xa0\x80</h1>", "text/html; charset=utf-8"),
            parsed,
        )
    )
    c.append(
        Case("html_bogus_charset", page, _response(_html("x"), "text/html; charset=x-no-such-codec"), parsed)
    )
    c.append(
        Case(
            "html_utf7_charset",
            page,
            _response(_html("+ADw-script+AD4-"), "text/html; charset=utf-7"),
            parsed,
        )
    )
    c.append(
        Case(
            "html_meta_charset_loop",
            page,
            _response(b"<meta charset=utf-16><meta charset=utf-32>" + _html("x")),
            parsed,
        )
    )
    c.append(Case("html_10k_titles", page, _response(_html("<title>t</title>" * 10_000)), parsed))
    c.append(Case("html_huge_attribute", page, _response(_html(f"<div class='{'c ' * MB}'>x</div>")), parsed))
    c.append(Case("html_unterminated_comment", page, _response(b"<html><!--" + b"x" * MB), parsed))
    c.append(
        Case(
            "html_script_json_ld_bomb",
            page,
            _response(_html("<script type='application/ld+json'>" + "[" * 100_000 + "</script>")),
            parsed,
        )
    )
    c.append(
        Case(
            "lying_content_type_png_is_html",
            page,
            _response(_html("<h1>x</h1>"), "image/png"),
            frozenset({"not_html"}),
        )
    )
    c.append(Case("pdf_served_as_html", page, _response(b"%PDF-1.4\n" + bytes(range(256)) * 100), parsed))
    # --- transfer-level lies and bombs
    c.append(
        Case(
            "gzip_bombed_body_1GB",
            page,
            _response(lambda: _gzip_bomb(1024 * MB), extra="Content-Encoding: gzip\r\n"),
            frozenset({"truncated"}),
            heavy=True,
        )
    )
    c.append(
        Case(
            "gzip_bombed_body_100MB",
            page,
            _response(lambda: _gzip_bomb(100 * MB), extra="Content-Encoding: gzip\r\n"),
            frozenset({"truncated"}),
        )
    )
    c.append(
        Case(
            "deflate_bombed_body_100MB",
            page,
            _response(lambda: _deflate_bomb(100 * MB), extra="Content-Encoding: deflate\r\n"),
            frozenset({"truncated"}),
        )
    )
    c.append(
        Case(
            "brotli_bombed_body_100MB",
            page,
            _response(_brotli_bomb, extra="Content-Encoding: br\r\n"),
            frozenset({"truncated"}),
            heavy=True,
        )
    )
    c.append(
        Case(
            "bad_gzip_stream",
            page,
            _response(b"not gzip at all", extra="Content-Encoding: gzip\r\n"),
            frozenset({"protocol"}),
        )
    )
    c.append(
        Case(
            "content_length_too_long",
            page,
            _response(_html("x"), length=10_000),
            frozenset({"protocol", "timeout"}),
        )
    )
    c.append(Case("content_length_too_short", page, _response(_html("x" * 1000), length=10), parsed))
    c.append(Case("content_length_negative", page, _response(_html("x"), length=-5), frozenset({"protocol"})))
    c.append(
        Case(
            "two_content_lengths",
            page,
            _raw(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 50\r\n\r\nhello"),
            frozenset({"protocol", "parsed"}),
        )
    )
    c.append(Case("one_byte_per_second", page, _trickle(1.0, 100), frozenset({"timeout"})))
    c.append(Case("endless_chunked", page, _endless_chunked(), frozenset({"truncated"})))
    c.append(
        Case(
            "header_flood_100k_headers",
            page,
            _raw(
                b"HTTP/1.1 200 OK\r\n"
                + b"".join(b"X-H%d: v\r\n" % i for i in range(100_000))
                + b"Content-Length: 2\r\n\r\nhi"
            ),
            frozenset({"protocol", "parsed"}),
        )
    )
    c.append(
        Case(
            "header_line_1MB",
            page,
            _raw(b"HTTP/1.1 200 OK\r\nX-Big: " + b"a" * MB + b"\r\nContent-Length: 2\r\n\r\nhi"),
            frozenset({"protocol", "parsed"}),
        )
    )
    c.append(Case("no_status_line", page, _raw(b"garbage garbage\r\n\r\n"), frozenset({"protocol"})))
    c.append(Case("http_0_9_body_only", page, _raw(b"<html>hello</html>"), frozenset({"protocol"})))
    c.append(
        Case(
            "status_999",
            page,
            _raw(b"HTTP/1.1 999 Weird\r\nContent-Length: 0\r\n\r\n"),
            frozenset({"parsed"}),
        )
    )
    c.append(Case("close_mid_headers", page, _raw(b"HTTP/1.1 200 OK\r\nContent-Ty"), frozenset({"protocol"})))
    c.append(Case("silent_server", page, _trickle(30.0, 0), frozenset({"timeout", "parsed"})))
    return c


CASES: tuple[Case, ...] = tuple(_cases())


def warm() -> None:
    """Build the cached bombs up front, so serving them does not eat into the client's deadline."""
    _gzip_bomb(1024 * MB)
    _gzip_bomb(100 * MB)
    _deflate_bomb(100 * MB)
    _brotli_bomb()
