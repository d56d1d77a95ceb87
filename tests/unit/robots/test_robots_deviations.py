"""Where protego 0.7 deviates from RFC 9309, and proof that RobotsRules does not.

Each test first probes raw protego (the deviation exists, so the workaround is needed) and then checks
RobotsRules. If a protego upgrade fixes a deviation, the probe fails: drop that workaround and its probe.
"""

from __future__ import annotations

from protego import Protego

from seolens_core.robots import RobotsRules


def _protego(text: str, path: str, agent: str = "Googlebot") -> bool:
    return Protego.parse(text).can_fetch(f"https://example.com{path}", agent)


def _ours(text: str, path: str, agent: str = "Googlebot") -> bool:
    return RobotsRules.parse(text, (agent, "*")).can_fetch(path)


def test_deviation_unknown_line_splits_user_agent_group() -> None:
    # RFC 9309 2.2.4: other records MUST NOT interfere with the group; both agents share the Disallow.
    text = "User-agent: SEOLens\nUnknown-record: x\nUser-agent: Googlebot\nDisallow: /private\n"
    assert _protego(text, "/private", "SEOLens") is True
    assert _ours(text, "/private", "SEOLens") is False


def test_deviation_index_html_allows_its_directory() -> None:
    # protego adds "Allow: /dir/$" for "Allow: /dir/index.html"; RFC 9309 has no such rule.
    text = "User-agent: *\nDisallow: /dir/\nAllow: /dir/index.html\n"
    assert _protego(text, "/dir/") is True
    assert _ours(text, "/dir/") is False
    assert _ours(text, "/dir/index.html") is True


def test_deviation_end_anchor_also_matches_literal_dollar() -> None:
    # protego also adds "/a%24" for "/a$": a trailing "$" only anchors the end (RFC 9309 2.2.3).
    text = "User-agent: *\nDisallow: /a$\n"
    assert _protego(text, "/a$b") is False
    assert _ours(text, "/a$b") is True
    assert _ours(text, "/a") is False


def test_deviation_end_anchor_allow_leaks_to_literal_dollar() -> None:
    text = "User-agent: *\nDisallow: /a\nAllow: /a$\n"
    assert _protego(text, "/a$x") is True
    assert _ours(text, "/a$x") is False
    assert _ours(text, "/a") is True


def test_deviation_user_agent_with_version_is_not_matched() -> None:
    # The product token of "Googlebot/2.1" is "Googlebot" (RFC 9309 2.2.1: match the product token).
    text = "User-agent: Googlebot/2.1\nDisallow: /x\n"
    assert _protego(text, "/x") is True
    assert _ours(text, "/x") is False


def test_deviation_shorter_user_agent_token_matches_longer_crawler() -> None:
    # "User-agent: Google" names another product than Googlebot; * applies to Googlebot here.
    text = "User-agent: Google\nDisallow: /x\n\nUser-agent: *\nAllow: /\n"
    assert _protego(text, "/x") is False
    assert _ours(text, "/x") is True
    assert RobotsRules.parse(text).applied_agent == "*"


def test_deviation_byte_order_mark_hides_first_line() -> None:
    text = "\ufeffUser-agent: *\nDisallow: /x\n"
    assert _protego(text, "/x") is True
    assert _ours(text, "/x") is False


def test_deviation_query_slash_and_escaped_slash_differ() -> None:
    # RFC 9309 table 1: "/foo/bar?baz=https://foo.bar" matches "/foo/bar?baz=https%3A%2F%2Ffoo.bar".
    text = "User-agent: *\nDisallow: /foo/bar?baz=https://foo.bar\n"
    assert _protego(text, "/foo/bar?baz=https%3A%2F%2Ffoo.bar") is True
    assert _ours(text, "/foo/bar?baz=https%3A%2F%2Ffoo.bar") is False


def test_deviation_line_breaks_other_than_cr_lf() -> None:
    # RFC 9309 2.2: lines end with CR, LF or CRLF; protego's splitlines also breaks at FF, NEL, U+2028...
    text = "User-agent: *\nDisallow: /a\x0cb\n"
    assert _protego(text, "/abc") is False
    assert _ours(text, "/abc") is True


def test_deviation_merged_groups_crawl_delay_last_wins() -> None:
    # All groups of an agent are one group; of their Crawl-delays we keep the most polite, not the last.
    text = "User-agent: *\nCrawl-delay: 10\n\nUser-agent: *\nCrawl-delay: 2\n"
    assert Protego.parse(text).crawl_delay("Googlebot") == 2.0
    assert RobotsRules.parse(text).crawl_delay == 10.0
