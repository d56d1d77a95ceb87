"""Properties: no input makes the parser or the matcher raise, and matching is order-independent."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from seolens_core.robots import RobotsRules, compact_robots_text, decode_robots_body

_FRAGMENTS = [
    b"User-agent: ",
    b"user-agent:",
    b"Disallow: ",
    b"Allow:",
    b"Crawl-delay: ",
    b"Sitemap: ",
    b"*",
    b"$",
    b"/",
    b"%",
    b"%2F",
    b"%zz",
    b"?",
    b"#",
    b"\n",
    b"\r",
    b"\r\n",
    b"\x00",
    b"\xef\xbb\xbf",
    b"\xff\xfe",
    b"\xc3",
    b"SEOLens",
    b"Googlebot",
    b"1e999",
    b"-1",
    b"0.5",
]

robots_bytes = st.one_of(
    st.binary(max_size=400),
    st.lists(st.sampled_from(_FRAGMENTS) | st.binary(max_size=4), max_size=60).map(b"".join),
)


@settings(max_examples=300, deadline=None)
@given(body=robots_bytes, path=st.text(max_size=30), max_bytes=st.sampled_from([0, 7, 64, 512_000]))
def test_parse_and_match_never_raise(body: bytes, path: str, max_bytes: int) -> None:
    rules = RobotsRules.parse(body, max_bytes=max_bytes)
    assert isinstance(rules.can_fetch(path), bool)
    assert isinstance(rules.can_fetch("/" + path), bool)
    assert rules.crawl_delay is None or rules.crawl_delay >= 0


@settings(max_examples=150, deadline=None)
@given(text=st.text(max_size=200), path=st.text(max_size=30))
def test_parse_never_raises_on_str(text: str, path: str) -> None:
    assert isinstance(RobotsRules.parse(text).can_fetch(path), bool)


_RULE_LINES = [
    f"{kind}: {pattern}"
    for kind in ("Allow", "Disallow")
    for pattern in ("/", "/a", "/a/", "/a/b", "/a*", "/*.gif$", "/a$", "/*b", "/a/b/c", "/%61")
]
_PATHS = ["/", "/a", "/a/", "/a/b", "/a/b/c", "/x.gif", "/ab", "/b", "/a/x.gif"]


@settings(max_examples=150, deadline=None)
@given(lines=st.lists(st.sampled_from(_RULE_LINES), max_size=12, unique=True), seed=st.integers(0, 2**32))
def test_rule_order_does_not_matter(lines: list[str], seed: int) -> None:
    shuffled = list(lines)
    random.Random(seed).shuffle(shuffled)
    first = RobotsRules.parse("User-agent: *\n" + "\n".join(lines))
    second = RobotsRules.parse("User-agent: *\n" + "\n".join(shuffled))
    assert [first.can_fetch(p) for p in _PATHS] == [second.can_fetch(p) for p in _PATHS]


_PATHS = ["/", "/a", "/a/b", "/private/x", "/x?y=1", "/%2F", "/$", "/robots.txt", "/\x00", "/SEOLens"]


@settings(max_examples=400, deadline=None)
@given(body=robots_bytes, agent=st.sampled_from(["SEOLens", "Googlebot", "Other", "*"]))
def test_the_compact_form_gives_every_agent_the_same_rules(body: bytes, agent: str) -> None:
    """What storage keeps of a big robots.txt (`compact_robots_text`) is, for any agent, the same file."""
    text, _ = decode_robots_body(body)
    original = RobotsRules.parse(text, (agent, "*") if agent != "*" else ("*",))
    compact = RobotsRules.parse(compact_robots_text(text), (agent, "*") if agent != "*" else ("*",))
    assert compact.applied_agent == original.applied_agent
    assert compact.crawl_delay == original.crawl_delay
    assert compact.sitemaps == original.sitemaps
    assert [compact.can_fetch(p) for p in _PATHS] == [original.can_fetch(p) for p in _PATHS]


def test_compact_form_keeps_groups_apart_and_drops_only_noise() -> None:
    text = (
        "# shop\rUser-agent: SEOLens\rUser-agent: other\rSitemap: /m.xml\rAllow: /a\r"
        "User-agent: nobody\r"  # joins the next one: a group ends at its first rule, not at a blank line
        "User-agent: *\rDisallow: /x\rUser-agent: late\r\r"
        "Disallow /lenient\rdisallow: /b # why\rcrawl-delay: 2\rnot a record\r\x00\xff"
        "\rSitemap: https://shop.test/s.xml\rUser-agent: tail\r"  # a group with no rule at all
    )
    assert compact_robots_text(text) == (
        "User-agent: other\nUser-agent: seolens\nAllow: /a\n"
        "User-agent: *\nUser-agent: nobody\nDisallow: /x\n"
        "User-agent: late\nDisallow: /lenient\nDisallow: /b\nCrawl-delay: 2\n"
        "User-agent: tail\nDisallow:\n"
        "Sitemap: /m.xml\nSitemap: https://shop.test/s.xml\n"
    )
