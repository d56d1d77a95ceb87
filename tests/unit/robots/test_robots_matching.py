"""RFC 9309 matching: the standard's own examples first, then each rule of the issue."""

from __future__ import annotations

import pytest

from seolens_core.robots import DEFAULT_MAX_BYTES, RobotsRules, decode_robots_body

# RFC 9309 section 5.1, "Simple Example" (the trailing "EOF" line is part of the RFC's listing).
RFC_SIMPLE = """\
User-Agent: *
Disallow: *.gif$
Disallow: /example/
Allow: /publications/

User-Agent: foobot
Disallow:/
Allow:/example/page.html
Allow:/example/allowed.gif

User-Agent: barbot
User-Agent: bazbot
Disallow: /example/page.html

User-Agent: quxbot

EOF
"""


@pytest.mark.parametrize(
    ("agent", "path", "allowed"),
    [
        # foobot: only the two allowed pages.
        ("foobot", "/example/page.html", True),
        ("foobot", "/example/allowed.gif", True),
        ("foobot", "/example/other.html", False),
        ("foobot", "/publications/", False),
        ("foobot", "/", False),
        # barbot and bazbot share one group: only /example/page.html is disallowed.
        ("barbot", "/example/page.html", False),
        ("bazbot", "/example/page.html", False),
        ("barbot", "/example/allowed.gif", True),
        ("bazbot", "/publications/x", True),
        # quxbot has an empty group: everything allowed (it does not fall back to *).
        ("quxbot", "/example/page.html", True),
        ("quxbot", "/a.gif", True),
        # Others use *.
        ("otherbot", "/a.gif", False),
        ("otherbot", "/a.gif?x", True),
        ("otherbot", "/example/x", False),
        ("otherbot", "/publications/x", True),
        ("otherbot", "/", True),
    ],
)
def test_rfc9309_simple_example(agent: str, path: str, allowed: bool) -> None:
    rules = RobotsRules.parse(RFC_SIMPLE, (agent, "*"))
    assert rules.can_fetch(path) is allowed


def test_rfc9309_applied_groups_of_simple_example() -> None:
    assert RobotsRules.parse(RFC_SIMPLE, ("quxbot", "*")).applied_agent == "quxbot"
    assert RobotsRules.parse(RFC_SIMPLE, ("otherbot", "*")).applied_agent == "*"


def test_rfc9309_longest_match_example() -> None:
    # RFC 9309 section 5.2.
    rules = RobotsRules.parse(
        "User-Agent: foobot\nAllow: /example/page/\nDisallow: /example/page/disallowed.gif\n", ("foobot",)
    )
    assert rules.can_fetch("/example/page/")
    assert rules.can_fetch("/example/page/x.gif")
    assert not rules.can_fetch("/example/page/disallowed.gif")


def test_rfc9309_groups_for_the_same_agent_are_merged() -> None:
    # RFC 9309 section 2.2.1: two ExampleBot groups are one group.
    text = (
        "user-agent: ExampleBot\ndisallow: /foo\ndisallow: /bar\n\nuser-agent: ExampleBot\ndisallow: /baz\n"
    )
    rules = RobotsRules.parse(text, ("examplebot",))
    assert [rules.can_fetch(p) for p in ("/foo", "/bar", "/baz", "/qux")] == [False, False, False, True]


@pytest.mark.parametrize(
    ("pattern", "path", "matches"),
    [
        # RFC 9309 table 1: percent-encoded URI components.
        ("/foo/bar?baz=quz", "/foo/bar?baz=quz", True),
        ("/foo/bar?baz=https://foo.bar", "/foo/bar?baz=https%3A%2F%2Ffoo.bar", True),
        ("/foo/bar/\u30c4", "/foo/bar/%E3%83%84", True),
        ("/foo/bar/%E3%83%84", "/foo/bar/%E3%83%84", True),
        ("/foo/bar/%62%61%7A", "/foo/bar/baz", True),
        # The reverse directions, unencoded URL and lower-case escapes.
        ("/foo/bar/%E3%83%84", "/foo/bar/\u30c4", True),
        ("/foo/bar/baz", "/foo/bar/%62%61%7A", True),
        ("/caf%c3%a9", "/caf\u00e9", True),
        # RFC 9309 table 2: special characters percent-encoded are literal.
        ("/path/file-with-a-%2A.html", "/path/file-with-a-*.html", True),
        ("/path/file-with-a-%2A.html", "/path/file-with-a-x.html", False),
        ("/path/foo-%24", "/path/foo-$", True),
        ("/path/foo-%24", "/path/foo-", False),
        # An escaped slash in the path is a different path (RFC 3986 reserved character).
        ("/a%2Fb", "/a/b", False),
    ],
)
def test_rfc9309_percent_encoding(pattern: str, path: str, matches: bool) -> None:
    rules = RobotsRules.parse(f"User-agent: *\nDisallow: {pattern}\n")
    assert rules.can_fetch(path) is not matches


@pytest.mark.parametrize(
    ("rules_text", "path", "allowed"),
    [
        # Longest match wins, whatever the order in the file.
        ("Allow: /products/\nDisallow: /products/archived/", "/products/archived/item-1", False),
        ("Disallow: /products/archived/\nAllow: /products/", "/products/archived/item-1", False),
        ("Disallow: /products/\nAllow: /products/archived/", "/products/archived/item-1", True),
        ("Allow: /products/\nDisallow: /products/archived/", "/products/new", True),
        # Equal length: Allow wins, whatever the order.
        ("Disallow: /blog\nAllow: /blog", "/blog/post", True),
        ("Allow: /blog\nDisallow: /blog", "/blog/post", True),
        ("Disallow: /page\nAllow: /*.htm", "/page.htm", True),
        # * matches any sequence, also none; $ anchors the end.
        ("Disallow: /*.php$", "/index.php", False),
        ("Disallow: /*.php$", "/index.php?x=1", True),
        ("Disallow: /*.php$", "/index.phps", True),
        ("Disallow: /fish*", "/fish", False),
        ("Disallow: /fish*", "/fishheads/x", False),
        ("Disallow: /*/private/*/x", "/a/private/b/x", False),
        ("Disallow: /*/private/*/x", "/a/public/b/x", True),
        ("Disallow: /this/path/exactly$", "/this/path/exactly", False),
        ("Disallow: /this/path/exactly$", "/this/path/exactly/", True),
        ("Disallow: /", "/anything", False),
        ("Disallow: *", "/anything", False),
        # An empty Disallow disallows nothing; a $ in the middle is an ordinary character.
        ("Disallow:", "/anything", True),
        ("Disallow: /a$b", "/a$b/c", False),
        ("Disallow: /a$b", "/ab", True),
        # Paths are case-sensitive.
        ("Disallow: /Private", "/private", True),
        ("Disallow: /Private", "/Private", False),
        # The query is part of what rules match.
        ("Disallow: /*?sort=", "/list?sort=asc", False),
        ("Disallow: /*?sort=", "/list?page=2", True),
        ("Disallow: /search?", "/search", True),
        ("Disallow: /search?", "/search?q=1", False),
        # Comments end at the line end and are ignored everywhere.
        ("Disallow: /a # not /b\n# Disallow: /b", "/b", True),
        ("Disallow: /a # not /b\n# Disallow: /b", "/a", False),
        # A fragment is never matched.
        ("Disallow: /a#b", "/a", False),
    ],
)
def test_matching_rules(rules_text: str, path: str, allowed: bool) -> None:
    rules = RobotsRules.parse(f"User-agent: *\n{rules_text}\n")
    assert rules.can_fetch(path) is allowed


def test_robots_txt_itself_is_always_allowed() -> None:
    rules = RobotsRules.parse("User-agent: *\nDisallow: /\nDisallow: /robots.txt\n")
    assert rules.can_fetch("/robots.txt")
    assert rules.can_fetch("/robots.txt?v=2")
    assert rules.can_fetch("/robots%2Etxt")
    assert not rules.can_fetch("/robots.txt.bak")
    assert not rules.can_fetch("/dir/robots.txt")


@pytest.mark.parametrize(
    ("text", "agent", "path", "allowed"),
    [
        # Product tokens are case-insensitive on both sides.
        ("User-agent: googlebot\nDisallow: /x", "GOOGLEBOT", "/x", False),
        ("USER-AGENT: GoogleBot\nDISALLOW: /x", "googlebot", "/x", False),
        # A version suffix is not part of the token.
        ("User-agent: SEOLens/1.0\nDisallow: /x", "SEOLens", "/x", False),
        # A longer token is another crawler.
        ("User-agent: Googlebot-News\nDisallow: /x", "Googlebot", "/x", True),
        ("User-agent: Google\nDisallow: /x", "Googlebot", "/x", True),
        # Rules before any User-agent line belong to no group.
        ("Disallow: /x\nUser-agent: *\nDisallow: /y", "Googlebot", "/x", True),
        # No group at all: everything allowed.
        ("Sitemap: https://example.com/s.xml", "Googlebot", "/x", True),
    ],
)
def test_user_agent_matching(text: str, agent: str, path: str, allowed: bool) -> None:
    assert RobotsRules.parse(text, (agent, "*")).can_fetch(path) is allowed


PRECEDENCE_TEXT = {
    "seolens": "User-agent: SEOLens\nDisallow: /s\n",
    "googlebot": "User-agent: Googlebot\nDisallow: /g\n",
    "star": "User-agent: *\nDisallow: /all\n",
}


@pytest.mark.parametrize(
    ("present", "applied", "disallowed"),
    [
        (("seolens", "googlebot", "star"), "SEOLens", "/s"),
        (("googlebot", "star", "seolens"), "SEOLens", "/s"),
        (("googlebot", "star"), "Googlebot", "/g"),
        (("star", "googlebot"), "Googlebot", "/g"),
        (("star",), "*", "/all"),
        ((), None, None),
    ],
)
def test_agent_precedence_seolens_then_googlebot_then_star(
    present: tuple[str, ...], applied: str | None, disallowed: str | None
) -> None:
    rules = RobotsRules.parse("\n".join(PRECEDENCE_TEXT[name] for name in present))
    assert rules.applied_agent == applied
    for path in ("/s", "/g", "/all"):
        assert rules.can_fetch(path) is (path != disallowed)


def test_product_token_is_configurable() -> None:
    text = "User-agent: MyAuditBot\nDisallow: /mine\n\nUser-agent: *\nDisallow: /\n"
    rules = RobotsRules.parse(text, ("MyAuditBot", "*"))
    assert rules.applied_agent == "MyAuditBot"
    assert rules.can_fetch("/other")
    assert not rules.can_fetch("/mine")


@pytest.mark.parametrize("agent", ["SEO Lens", "SEOLens/1.0", "", "bot*"])
def test_invalid_configured_agent_is_rejected(agent: str) -> None:
    with pytest.raises(ValueError, match="product token"):
        RobotsRules.parse("", (agent,))


@pytest.mark.parametrize(
    "between",
    ["Foo: bar", "Sitemap: https://example.com/s.xml", "Noindex: /x", "Host: example.com", "just words"],
)
def test_unknown_line_between_user_agent_lines_keeps_one_group(between: str) -> None:
    text = f"User-agent: SEOLens\n{between}\nUser-agent: Googlebot\nDisallow: /private\n"
    for agent in ("SEOLens", "Googlebot"):
        rules = RobotsRules.parse(text, (agent,))
        assert rules.applied_agent == agent
        assert not rules.can_fetch("/private")


def test_unknown_line_inside_rules_does_not_end_the_group() -> None:
    text = "User-agent: *\nDisallow: /a\nClean-param: ref /\nDisallow: /b\n"
    rules = RobotsRules.parse(text)
    assert not rules.can_fetch("/a")
    assert not rules.can_fetch("/b")


def test_user_agent_after_a_rule_starts_a_new_group() -> None:
    text = "User-agent: a\nDisallow: /x\nUser-agent: b\nDisallow: /y\n"
    a = RobotsRules.parse(text, ("a",))
    assert (a.can_fetch("/x"), a.can_fetch("/y")) == (False, True)


def test_lenient_directive_spellings() -> None:
    text = "user agent: *\nDisallow /no-colon\ndissallow: /typo\nAllow:/no-space-ok\n"
    rules = RobotsRules.parse(text)
    assert not rules.can_fetch("/no-colon")
    assert not rules.can_fetch("/typo")


@pytest.mark.parametrize(
    ("group", "delay"),
    [
        ("Crawl-delay: 1.5", 1.5),
        ("Crawl-delay: 10", 10.0),
        ("Crawl-delay: 0", 0.0),
        ("Crawl-delay: -1", None),
        ("Crawl-delay: soon", None),
        ("Crawl-delay: nan", None),
        ("Crawl-delay: inf", None),
        ("Crawl-delay: 1e999", 86_400.0),
        ("Crawl-delay: 100000", 86_400.0),
        ("Crawl-delay: 10s", 10.0),
        ("Crawl-delay: .25", 0.25),
        ("Crawl-delay: 1e1", 10.0),
        ("Crawl-delay: 2 # seconds", 2.0),
        ("", None),
    ],
)
def test_crawl_delay_of_the_applied_group(group: str, delay: float | None) -> None:
    text = f"User-agent: Googlebot\n{group}\nDisallow: /g\n\nUser-agent: *\nCrawl-delay: 99\n"
    assert RobotsRules.parse(text).crawl_delay == delay


def test_crawl_delay_of_merged_groups_is_the_most_polite() -> None:
    text = (
        "User-agent: *\nCrawl-delay: 2\n\nUser-agent: *\nCrawl-delay: 7.5\n\nUser-agent: *\nCrawl-delay: 1\n"
    )
    assert RobotsRules.parse(text).crawl_delay == 7.5


def test_crawl_delay_of_other_groups_is_ignored() -> None:
    text = "User-agent: Bingbot\nCrawl-delay: 10\n\nUser-agent: *\nDisallow: /x\n"
    assert RobotsRules.parse(text).crawl_delay is None


def test_sitemaps_from_anywhere_in_order_without_duplicates() -> None:
    text = (
        "Sitemap: https://example.com/a.xml\nUser-agent: *\nSitemap: https://example.com/b.xml\n"
        "Disallow: /x\nsitemap: https://example.com/a.xml\nSitemap:\n"
    )
    rules = RobotsRules.parse(text)
    assert rules.sitemaps == ("https://example.com/a.xml", "https://example.com/b.xml")
    assert not rules.can_fetch("/x")


def _big_robots(rule_count: int) -> str:
    lines = ["User-agent: *"] + [f"Disallow: /section-{i:06d}/" for i in range(rule_count)]
    return "\n".join(lines) + "\n"


def test_first_500_kib_are_parsed() -> None:
    # Close to 500 KiB of rules; the last rule is still in force.
    text = _big_robots(18_800) + "Disallow: /last-rule\n"
    assert 490_000 < len(text.encode()) < DEFAULT_MAX_BYTES
    rules = RobotsRules.parse(text)
    assert not rules.truncated
    assert not rules.can_fetch("/last-rule")
    assert not rules.can_fetch("/section-000000/x")
    assert rules.can_fetch("/section/")


def test_content_beyond_the_limit_is_cut_at_a_line_boundary() -> None:
    head = _big_robots(18_800)
    # The limit falls right after "Disallow: /" of the last line: cut there, it would disallow everything.
    padding = "#" * (DEFAULT_MAX_BYTES - len(head.encode()) - len("Disallow: /") - 1) + "\n"
    text = head + padding + "Disallow: /secret-area\nDisallow: /after\n"
    assert len((head + padding + "Disallow: /").encode()) == DEFAULT_MAX_BYTES
    rules = RobotsRules.parse(text)
    assert rules.truncated
    assert rules.can_fetch("/x")
    assert rules.can_fetch("/secret-area")
    assert rules.can_fetch("/after")
    assert not rules.can_fetch("/section-018799/")


def test_max_bytes_is_a_parameter() -> None:
    rules = RobotsRules.parse(b"User-agent: *\nDisallow: /a\nDisallow: /b\n", max_bytes=27)
    assert (rules.can_fetch("/a"), rules.can_fetch("/b"), rules.truncated) == (False, True, True)


@pytest.mark.parametrize(
    "body",
    [
        b"\xef\xbb\xbfUser-agent: *\nDisallow: /x\n",  # UTF-8 BOM
        b"User-agent: *\rDisallow: /x\r",  # CR-only line ends
        b"User-agent: *\r\nDisallow: /x\r\n",  # CRLF
        b"User-agent: *\nDisallow: /\xff\xfe\nDisallow: /x\n",  # invalid UTF-8
        b"User-agent: *\n\x00\x00\nDisallow: /x\x00\nDisallow: /x\n",  # NULs
        "User-agent: *\nDisallow: /x\n".encode("utf-16"),  # UTF-16 with BOM
        "\ufeffUser-agent: *\nDisallow: /x\n",  # str with BOM
        "User-agent: *\nDisallow: /\ud800\nDisallow: /x\n",  # str with a lone surrogate
    ],
)
def test_awkward_encodings_parse(body: bytes | str) -> None:
    rules = RobotsRules.parse(body)
    assert rules.applied_agent == "*"
    assert not rules.can_fetch("/x")
    assert rules.can_fetch("/y")


def test_decode_robots_body_reports_truncation() -> None:
    assert decode_robots_body(b"a\nb\nc", 4) == ("a\nb\n", True)
    assert decode_robots_body(b"a\nb\n", 4) == ("a\nb\n", False)
    assert decode_robots_body(b"abcdef", 4) == ("", True)


@pytest.mark.parametrize(
    "target",
    ["", "relative", "//double/slash", "/a?b#c", "https://example.com/x", "/\ud800", "/%zz%", "/?"],
)
def test_can_fetch_accepts_odd_targets(target: str) -> None:
    rules = RobotsRules.parse("User-agent: *\nDisallow: /x\nDisallow: /*?\n")
    assert isinstance(rules.can_fetch(target), bool)
    assert rules.can_fetch("https://example.com/x") is False
