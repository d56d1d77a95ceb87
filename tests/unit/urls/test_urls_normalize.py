"""normalize(): each of the guide's stages with positive and negative cases, percent-encoding, rejections."""

from __future__ import annotations

import dataclasses

import pytest

from seolens_core.urls import (
    DEFAULT_CONFIG,
    DEFAULT_TRACKING_PARAMS,
    NormalizeConfig,
    NormalizedURL,
    Rejection,
    RejectReason,
    normalize,
)

PAGE = "https://example.com/dir/page.html"


def ok(
    href: str, base: str | NormalizedURL | None = None, config: NormalizeConfig = DEFAULT_CONFIG
) -> NormalizedURL:
    result = normalize(href, base, config)
    assert isinstance(result, NormalizedURL), result
    return result


def rejected(href: str, base: str | None = None, config: NormalizeConfig = DEFAULT_CONFIG) -> RejectReason:
    result = normalize(href, base, config)
    assert isinstance(result, Rejection), result
    assert result.detail
    return result.reason


# (href, base, expected normalized URL)
STAGES = [
    # 1. scheme: lowercased; protocol-relative takes the base's scheme
    ("HTTP://example.com/", None, "http://example.com/"),
    ("HtTpS://example.com/", None, "https://example.com/"),
    ("//cdn.example.com/x", PAGE, "https://cdn.example.com/x"),
    ("//cdn.example.com/x", "http://example.com/", "http://cdn.example.com/x"),
    ("https://example.com/", "http://example.com/", "https://example.com/"),  # negative: own scheme wins
    # 2. host: lowercase, IDN to punycode, trailing root dot removed
    ("http://Example.COM/", None, "http://example.com/"),
    ("http://example.com./a", None, "http://example.com/a"),
    ("http://Bücher.DE/", None, "http://xn--bcher-kva.de/"),
    ("http://xn--bcher-kva.de/", None, "http://xn--bcher-kva.de/"),
    ("http://пример.рф/", None, "http://xn--e1afmkfd.xn--p1ai/"),
    (
        "http://\uff25\uff38\uff21\uff2d\uff30\uff2c\uff25\u3002com/",
        None,
        "http://example.com/",
    ),  # UTS 46 maps full-width forms and dots
    ("http://fa\u00df.de/", None, "http://xn--fa-hia.de/"),  # non-transitional: ß stays ß (IDNA 2008)
    ("http://ex%41mple.com/", None, "http://example.com/"),  # percent-encoded host
    ("http://my_site.example.com/", None, "http://my_site.example.com/"),
    ("http://example.com/Path", None, "http://example.com/Path"),  # negative: path case is kept
    # IP literals
    ("http://127.0.0.1:8001/", None, "http://127.0.0.1:8001/"),
    ("http://0x7f.1/", None, "http://127.0.0.1/"),  # WHATWG IPv4 forms
    ("http://[::1]/", None, "http://[::1]/"),
    ("http://[0:0:0:0:0:0:0:1]:8080/a", None, "http://[::1]:8080/a"),
    ("https://[2001:DB8::1]:443/", None, "https://[2001:db8::1]/"),
    # 3. default port stripped, others kept, leading zeros are the same number
    ("http://example.com:80/", None, "http://example.com/"),
    ("https://example.com:443/", None, "https://example.com/"),
    ("https://example.com:0443/", None, "https://example.com/"),
    ("http://example.com:/", None, "http://example.com/"),  # empty port = default
    ("http://example.com:443/", None, "http://example.com:443/"),  # negative: 443 is not http's default
    ("https://example.com:80/", None, "https://example.com:80/"),
    ("http://example.com:8080/", None, "http://example.com:8080/"),
    ("http://example.com:08080/", None, "http://example.com:8080/"),
    # 4. dot segments and repeated slashes
    ("http://example.com/a/b/../c", None, "http://example.com/a/c"),
    ("http://example.com/a/./b/", None, "http://example.com/a/b/"),
    ("http://example.com/blog//post", None, "http://example.com/blog/post"),
    ("http://example.com///a////b", None, "http://example.com/a/b"),
    ("http://example.com/a/%2E%2e/b", None, "http://example.com/b"),  # encoded dots are dot segments
    ("../../../x", PAGE, "https://example.com/x"),
    ("http://example.com/a.b/c..d", None, "http://example.com/a.b/c..d"),  # negative: not dot segments
    # 5. empty path becomes "/"
    ("http://example.com", None, "http://example.com/"),
    ("http://example.com?x=1", None, "http://example.com/?x=1"),
    ("http://example.com/a/", None, "http://example.com/a/"),  # negative: trailing slash is kept
    # 6. fragment removed
    ("http://example.com/page#reviews", None, "http://example.com/page"),
    ("#top", PAGE, PAGE),
    ("http://example.com/#!/app/route", None, "http://example.com/"),
    ("http://example.com/page?q=1#x?y", None, "http://example.com/page?q=1"),
    # 7. tracking parameters stripped (case-insensitively, also when percent-encoded)
    (
        "http://example.com/?utm_source=tw&utm_medium=s&utm_campaign=c&utm_term=t&utm_content=x",
        None,
        "http://example.com/",
    ),
    (
        "http://example.com/?fbclid=1&gclid=2&msclkid=3&mc_eid=4&_ga=5&_gl=6&ref=7&id=9",
        None,
        "http://example.com/?id=9",
    ),
    ("http://example.com/?UTM_Source=tw&a=1", None, "http://example.com/?a=1"),
    ("http://example.com/?utm%5Fsource=tw&a=1", None, "http://example.com/?a=1"),
    ("http://example.com/?utm_source", None, "http://example.com/"),
    ("http://example.com/?reference=1&utm=2", None, "http://example.com/?reference=1&utm=2"),  # negative
    ("http://example.com/?x=utm_source", None, "http://example.com/?x=utm_source"),  # negative: value only
    # sorting facets collapse (ignore_sorting_facets on by default)
    ("http://example.com/c?sort=price_desc&color=red", None, "http://example.com/c?color=red"),
    ("http://example.com/c?order=date&view=grid&orderby=x&sort_by=y", None, "http://example.com/c"),
    ("http://example.com/c?sorted=1&viewer=2", None, "http://example.com/c?sorted=1&viewer=2"),  # negative
    # 8. stable lexicographic sort by key
    ("http://example.com/?b=2&a=1", None, "http://example.com/?a=1&b=2"),
    (
        "http://example.com/?b=1&a=2&b=0&a=1",
        None,
        "http://example.com/?a=2&a=1&b=1&b=0",
    ),  # repeats keep order
    ("http://example.com/?B=1&a=1&_=1", None, "http://example.com/?B=1&_=1&a=1"),  # code point order
    ("http://example.com/?a=1&b=2", None, "http://example.com/?a=1&b=2"),  # negative: already sorted
]


@pytest.mark.parametrize(("href", "base", "expected"), STAGES)
def test_stage(href: str, base: str | None, expected: str) -> None:
    result = ok(href, base)
    assert result.url == expected
    assert ok(result.url) == result


@pytest.mark.parametrize(
    ("href", "expected"),
    [
        ("http://example.com/a%7eb", "http://example.com/a~b"),  # unreserved decoded
        ("http://example.com/%41%62%2D%5F", "http://example.com/Ab-_"),
        ("http://example.com/a%2fb%3A", "http://example.com/a%2Fb%3A"),  # reserved kept, hex uppercased
        ("http://example.com/a%2Fb", "http://example.com/a%2Fb"),  # not decoded into a separator
        ("http://example.com/100%", "http://example.com/100%25"),  # stray percent encoded
        ("http://example.com/%zz", "http://example.com/%25zz"),
        ("http://example.com/%2541", "http://example.com/%2541"),  # never double-decoded
        ("http://example.com/caf%C3%A9", "http://example.com/caf%C3%A9"),  # never double-encoded
        ("http://example.com/café", "http://example.com/caf%C3%A9"),
        ("http://example.com/a b", "http://example.com/a%20b"),
        ('http://example.com/a<b>"{}|\\^`', "http://example.com/a%3Cb%3E%22%7B%7D%7C%5C%5E%60"),
        ("http://example.com/p:@!$&'()*+,;=", "http://example.com/p:@!$&'()*+,;="),  # pchar stays
        ("http://example.com/?q=caf%c3%a9", "http://example.com/?q=caf%C3%A9"),
        ("http://example.com/?q=%7E&r=%26", "http://example.com/?q=~&r=%26"),  # encoded & stays data
        ("http://example.com/?a=[1]", "http://example.com/?a=%5B1%5D"),
        ("http://example.com/?next=/a?b", "http://example.com/?next=/a?b"),  # "?" and "/" allowed in query
    ],
)
def test_percent_encoding(href: str, expected: str) -> None:
    assert ok(href).url == expected


@pytest.mark.parametrize(
    ("href", "expected_query"),
    [
        ("http://e.com/s?q=a+b", "q=a+b"),  # "+" kept: only form decoding reads it as a space
        ("http://e.com/s?q=a b", "q=a%20b"),
        ("http://e.com/s?q=a%2Bb", "q=a%2Bb"),  # an encoded "+" stays distinct from "+"
        ("http://e.com/s?q=a%20b", "q=a%20b"),
        ("http://e.com/s?", ""),  # empty "?" dropped
        ("http://e.com/s?&&", ""),
        ("http://e.com/s?a=1&&b=2&", "a=1&b=2"),  # empty parameters dropped
        ("http://e.com/s?flag&a=1", "a=1&flag"),  # key without "=" kept as is and sorted by its key
        ("http://e.com/s?flag=&flag", "flag=&flag"),  # "flag=" and "flag" stay distinct, order kept
        ("http://e.com/s?=1&a", "=1&a"),  # empty key sorts first
        ("http://e.com/s?a=1=2", "a=1=2"),
    ],
)
def test_query_forms(href: str, expected_query: str) -> None:
    result = ok(href)
    assert result.query == expected_query
    assert result.url == "http://e.com/s" + ("?" + expected_query if expected_query else "")


def test_spaces_and_tabs_in_hrefs_follow_html_preprocessing() -> None:
    assert ok("  \n https://example.com/a\tb\nc \x00").url == "https://example.com/abc"


@pytest.mark.parametrize(
    "href",
    [
        "http://user:secret@example.com/a",
        "http://user@example.com/a",
        "http://@example.com/a",
        "http://a@b@example.com/a",  # the last "@" ends the userinfo, as in browsers
        "http://user:pa%40ss@example.com:80/a",
    ],
)
def test_userinfo_is_dropped(href: str) -> None:
    result = ok(href)
    assert result.url == "http://example.com/a"
    assert result.host == "example.com"


def test_ipv6_with_port_and_userinfo() -> None:
    result = ok("HTTP://u:p@[2001:DB8:0:0::1]:08080/x?b=1&a=2#f")
    assert result.url == "http://[2001:db8::1]:8080/x?a=2&b=1"
    assert (result.host, result.port) == ("[2001:db8::1]", 8080)
    assert result.host_port == "[2001:db8::1]:8080"
    assert result.origin == "http://[2001:db8::1]:8080"


def test_parts_and_properties() -> None:
    result = ok("https://Example.com/a/b?z=1&y=2")
    assert (result.scheme, result.host, result.port, result.path, result.query) == (
        "https",
        "example.com",
        None,
        "/a/b",
        "y=2&z=1",
    )
    assert result.origin == "https://example.com:443"
    assert result.host_port == "example.com"
    assert result.path_query == "/a/b?y=2&z=1"
    assert str(result) == result.url
    local = ok("http://127.0.0.1:8001/")
    assert (local.port, local.origin, local.host_port, local.path_query) == (
        8001,
        "http://127.0.0.1:8001",
        "127.0.0.1:8001",
        "/",
    )
    assert ok("http://example.com/").origin == "http://example.com:80"


def test_relative_links_against_a_normalized_base() -> None:
    base = ok("https://shop.example.com:8443/cat/shoes/?page=2")
    assert ok("item-1", base).url == "https://shop.example.com:8443/cat/shoes/item-1"
    assert ok("?page=3", base).url == "https://shop.example.com:8443/cat/shoes/?page=3"
    assert ok("", base).url == base.url
    assert ok("/", base).url == "https://shop.example.com:8443/"
    assert ok("//other.example/x", base).url == "https://other.example/x"


def test_ten_spellings_of_one_product_collapse_into_one_url() -> None:
    base = ok("http://shop.example.com/")
    spellings = [
        "http://shop.example.com/product/42?color=red&size=9",
        "HTTP://SHOP.example.com/product/42?color=red&size=9",
        "http://shop.example.com:80/product/42?color=red&size=9",
        "http://shop.example.com/product/42?color=red&size=9#reviews",
        "http://shop.example.com/product/42?utm_source=x&color=red&size=9&fbclid=abc",
        "http://shop.example.com/./product/./42?color=red&size=9",
        "http://shop.example.com//product//42?color=red&size=9",
        "http://shop.example.com/product/42?size=9&color=red",
        "/product/42?size=9&sort=price_desc&color=red",
        "product/x/../42?color=red&size=9&",
    ]
    assert {ok(href, base).url for href in spellings} == {
        "http://shop.example.com/product/42?color=red&size=9"
    }


@pytest.mark.parametrize(
    ("href", "base", "reason"),
    [
        ("javascript:void(0)", PAGE, RejectReason.JAVASCRIPT),
        ("JavaScript:alert(1)", None, RejectReason.JAVASCRIPT),
        ("  javascript:x", PAGE, RejectReason.JAVASCRIPT),
        ("mailto:a@example.com", PAGE, RejectReason.MAILTO),
        ("tel:+441234", PAGE, RejectReason.TEL),
        ("data:text/html,hi", PAGE, RejectReason.DATA),
        ("ftp://example.com/f", PAGE, RejectReason.UNSUPPORTED_SCHEME),
        ("file:///etc/passwd", PAGE, RejectReason.UNSUPPORTED_SCHEME),
        ("whatsapp://send?text=x", PAGE, RejectReason.UNSUPPORTED_SCHEME),
        ("C:\\docs\\a.html", PAGE, RejectReason.UNSUPPORTED_SCHEME),
        ("g", "mailto:x@example.com", RejectReason.MAILTO),  # a non-http base
        ("/a", None, RejectReason.RELATIVE_WITHOUT_BASE),
        ("", None, RejectReason.RELATIVE_WITHOUT_BASE),
        ("/a", "not/absolute", RejectReason.INVALID_BASE),
        ("http:///a", None, RejectReason.EMPTY_HOST),
        ("http:/a", None, RejectReason.EMPTY_HOST),
        ("http://:80/", None, RejectReason.EMPTY_HOST),
        ("http://user@/", None, RejectReason.EMPTY_HOST),
        ("http://./", None, RejectReason.EMPTY_HOST),
        ("http://exa mple.com/", None, RejectReason.INVALID_HOST),
        ("http://a..b/", None, RejectReason.INVALID_HOST),
        ("http://.example.com/", None, RejectReason.INVALID_HOST),
        ("http://example.com../", None, RejectReason.INVALID_HOST),
        ("http://exa<mple.com/", None, RejectReason.INVALID_HOST),
        ("http://-bad.example.com/", None, RejectReason.INVALID_HOST),
        ("http://" + "a" * 64 + ".com/", None, RejectReason.INVALID_HOST),
        ("http://" + ".".join(["abcdefgh"] * 30) + "/", None, RejectReason.INVALID_HOST),
        ("http://1.2.3.256/", None, RejectReason.INVALID_HOST),
        ("http://1.2.3.4.5/", None, RejectReason.INVALID_HOST),
        ("http://09.1.1.1/", None, RejectReason.INVALID_HOST),  # "09" is not octal
        ("http://[::1/", None, RejectReason.INVALID_HOST),
        ("http://[::g]/", None, RejectReason.INVALID_HOST),
        ("http://[fe80::1%25eth0]/", None, RejectReason.INVALID_HOST),
        ("http://[v1.x]/", None, RejectReason.INVALID_HOST),
        ("http://[::1]x/", None, RejectReason.INVALID_HOST),
        ("http://ex%ffample.com/", None, RejectReason.INVALID_HOST),
        ("http://xn--a.\u0378.com/", None, RejectReason.INVALID_HOST),  # unassigned code point
        ("http://example.com:http/", None, RejectReason.INVALID_PORT),
        ("http://example.com:0/", None, RejectReason.INVALID_PORT),
        ("http://example.com:65536/", None, RejectReason.INVALID_PORT),
        ("http://example.com:99999999999999999999/", None, RejectReason.INVALID_PORT),
        ("http://example.com:-1/", None, RejectReason.INVALID_PORT),
        (
            "http://example.com:\uff18\uff10/",
            None,
            RejectReason.INVALID_PORT,
        ),  # full-width digits are not a port
        ("http://[::1]:x/", None, RejectReason.INVALID_PORT),
        ("http://example.com/\ud800", None, RejectReason.UNPARSEABLE),  # lone surrogate
    ],
)
def test_rejections(href: str, base: str | None, reason: RejectReason) -> None:
    assert rejected(href, base) is reason


def test_valid_ports_at_the_edges() -> None:
    assert ok("http://example.com:1/").port == 1
    assert ok("http://example.com:65535/").port == 65535


def test_too_long_is_measured_on_the_normalized_url() -> None:
    config = NormalizeConfig(max_length=64)
    path = "/" + "a" * 40
    assert ok("http://example.com" + path, config=config).url == "http://example.com" + path
    assert rejected("http://example.com" + path + "b" * 30, config=config) is RejectReason.TOO_LONG
    # Tracking noise does not count against the limit...
    assert ok("http://example.com" + path + "?utm_source=" + "x" * 60, config=config)
    # ...but raw input is bounded before any work.
    assert rejected("http://example.com/?utm_source=" + "x" * 300, config=config) is RejectReason.TOO_LONG
    assert rejected("http://example.com/" + "a" * 3000) is RejectReason.TOO_LONG


def test_never_raises_on_non_strings() -> None:
    result = normalize(None)  # type: ignore[arg-type]
    assert isinstance(result, Rejection)
    assert result.reason is RejectReason.UNPARSEABLE


def test_config_extends_tracking_and_facets() -> None:
    config = DEFAULT_CONFIG.extended(tracking=["SessionID"], facets=["Per_Page"])
    assert "sessionid" in config.tracking_params
    assert config.tracking_params >= DEFAULT_TRACKING_PARAMS
    assert ok("http://e.com/?sessionid=1&PER_PAGE=5&a=1", config=config).url == "http://e.com/?a=1"
    assert ok("http://e.com/?sessionid=1&a=1").url == "http://e.com/?a=1&sessionid=1"  # default unchanged


def test_sorting_facets_can_be_kept() -> None:
    config = dataclasses.replace(DEFAULT_CONFIG, ignore_sorting_facets=False)
    assert (
        ok("http://e.com/c?sort=price&view=grid&utm_source=x", config=config).url
        == "http://e.com/c?sort=price&view=grid"
    )


def test_custom_tracking_list_replaces_the_default() -> None:
    config = NormalizeConfig(tracking_params=frozenset({"sid"}))
    assert ok("http://e.com/?sid=1&utm_source=x", config=config).url == "http://e.com/?utm_source=x"


def test_config_validates() -> None:
    with pytest.raises(ValueError, match="max_length"):
        NormalizeConfig(max_length=0)
