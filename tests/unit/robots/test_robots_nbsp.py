"""robots.txt bodies that are not UTF-8: a Latin-1 no-break space (0xA0) around a directive is whitespace, as
the site meant it. Before, it became U+FFFD: `User-agent: *\\xa0` dropped the site's only group (everything
allowed) and `Disallow:\\xa0/x` was ignored. A U+FFFD ending a path stays data (never less strict)."""

from __future__ import annotations

import pytest

from seolens_core.robots import RobotsRules

AGENTS = ("SEOLens", "*")


@pytest.mark.parametrize(
    ("body", "path"),
    [
        (b"User-agent: *\xa0\nDisallow: /\n", "/a"),
        (b"User-agent:\xa0*\nDisallow: /\n", "/a"),
        (b"User-agent: *\nDisallow:\xa0/x\n", "/x/1"),
        (b"User-agent: *\nDisallow:\xa0\xa0/x\xa0\n", "/x/1"),
        (b"User-agent: *\nDisallow\xa0/x\n", "/x/1"),
        (b"User-agent: *\nDisallow\xa0: /x\n", "/x/1"),
        (b"User-agent: SEOLens\xa0\nDisallow: /x\n", "/x"),
        ("User-agent: *\ufffd\nDisallow: /\n", "/a"),  # already decoded elsewhere
        ("User-agent: *\nDisallow:\ufffd/x\n", "/x/1"),
        (b"User-agent: *\xa0\rDisallow:\xa0/x\r", "/x"),  # CR-only too
    ],
)
def test_a_latin1_no_break_space_is_whitespace(body: bytes | str, path: str) -> None:
    rules = RobotsRules.parse(body, AGENTS)
    assert rules.applied_agent is not None
    assert not rules.can_fetch(path)


def test_a_replacement_character_ending_a_path_stays_data() -> None:
    rules = RobotsRules.parse(b"User-agent: *\nDisallow: /caf\xe9\nAllow: /x\xe9\nDisallow: /x\n", AGENTS)
    assert rules.can_fetch("/cafe") and rules.can_fetch("/")  # /caf\xe9 does not become /caf (or /)
    assert not rules.can_fetch("/x1")  # the Allow of /x\xe9 does not become an Allow of /x
