"""RFC 9309 robots.txt rules: groups are read here, paths are matched with protego's URL patterns.

protego (0.7) deviates from RFC 9309 in its group parser and rule set (see `tests/unit/robots/
test_deviations.py`), so this module reads the groups itself and keeps only protego's pattern
normalization (percent-encoding) and wildcard matcher, which follow the RFC.
"""

from __future__ import annotations

import codecs
import re
from collections.abc import Callable, Sequence

from protego._urlpattern import _URLPattern
from protego._utils import _KEPT, _SAFE, _quote, _quote_pattern

DEFAULT_AGENTS: tuple[str, ...] = ("SEOLens", "Googlebot", "*")
"""Agent precedence from the crawler guide: our own token, then what Googlebot sees, then `*`."""

DEFAULT_MAX_BYTES = 512_000
"""RFC 9309 section 2.5: parse at least the first 500 KiB."""

# Product tokens per RFC 9309 section 2.2.1 are letters, "_" and "-"; digits are accepted too
# because real crawlers use them ("MJ12bot") and the settings allow them.
_AGENT_TOKEN = re.compile(r"[A-Za-z0-9_-]+")
_LINE_BREAK = re.compile(r"\r\n|\r|\n")
_ESCAPED_SLASH = re.compile(r"%2[fF]")
# A target made only of characters that percent-encoding leaves alone needs no quoting.
_PLAIN_TARGET = re.compile(r"/[A-Za-z0-9_.~/=-]*").fullmatch
_BLANK = " \t\u00a0\ufffd"
"""What may stand for a space around a directive in a body that is not UTF-8: U+00A0, and U+FFFD."""
_DELAY = re.compile(r"(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")

MAX_CRAWL_DELAY_S = 86_400.0
"""Crawl-delay values above a day are read as a day (still far above any accepted maximum)."""

_USER_AGENT = "user-agent"
_ALLOW = "allow"
_DISALLOW = "disallow"
_CRAWL_DELAY = "crawl-delay"
_SITEMAP = "sitemap"

# Lenient spellings, as RFC 9309 section 2.2.4 permits for records ("clients MAY be lenient").
_FIELDS: dict[str, str] = {
    "user-agent": _USER_AGENT,
    "useragent": _USER_AGENT,
    "user agent": _USER_AGENT,
    "user_agent": _USER_AGENT,
    "allow": _ALLOW,
    "disallow": _DISALLOW,
    "dissallow": _DISALLOW,
    "dissalow": _DISALLOW,
    "disalow": _DISALLOW,
    "diasllow": _DISALLOW,
    "disallaw": _DISALLOW,
    "crawl-delay": _CRAWL_DELAY,
    "crawl delay": _CRAWL_DELAY,
    "crawldelay": _CRAWL_DELAY,
    "crawl_delay": _CRAWL_DELAY,
    "sitemap": _SITEMAP,
    "sitemaps": _SITEMAP,
    "site-map": _SITEMAP,
}

_Rule = tuple[Callable[[str], bool], bool]


def decode_robots_body(content: bytes | str, max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[str, bool]:
    """Decode a robots.txt body to text cut at a line boundary within `max_bytes`; True if it was cut.

    Never raises: a BOM is dropped, invalid UTF-8 becomes U+FFFD (which matches no real URL), except a lone
    0xA0 byte, Latin-1's no-break space, which becomes U+00A0 (whitespace around directives).
    """
    data = content.encode("utf-8", "surrogatepass") if isinstance(content, str) else bytes(content)
    truncated = len(data) > max_bytes
    if truncated:
        head = data[: max(max_bytes, 0)]
        cut = max(head.rfind(b"\n"), head.rfind(b"\r"))
        data = head[: cut + 1]
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16", "replace"), truncated
    return data.decode("utf-8-sig", _NBSP_OR_REPLACE), truncated


def _nbsp_or_replace(error: UnicodeError) -> tuple[str, int]:
    """A decoding error handler: an invalid byte 0xA0 is Latin-1's no-break space (whitespace to the parser,
    as the site meant it: `User-agent: *\xa0`), any other invalid byte U+FFFD, as "replace" makes it."""
    if not isinstance(error, UnicodeDecodeError):
        raise error
    bad = error.object[error.start : error.end]
    return "".join("\xa0" if byte == 0xA0 else "\ufffd" for byte in bad), error.end


_NBSP_OR_REPLACE = "seolens-robots-nbsp"
codecs.register_error(_NBSP_OR_REPLACE, _nbsp_or_replace)


def compact_robots_text(text: str) -> str:
    """The records of `text` that decide what any crawler may fetch, one per line: each group's agents, rules
    and Crawl-delay values, then the Sitemap lines. Parsed, it gives every agent the same rules as `text`
    (comments, unknown records and unreadable lines are what it drops), so a store that cannot hold a big
    robots.txt whole keeps this instead of a prefix, which could lose a Disallow."""
    groups, sitemaps = _read_groups(text)
    lines: list[str] = []
    for group in groups:
        if not group.tokens:
            continue  # no agent can match it
        lines += [f"User-agent: {token}" for token in sorted(group.tokens)]
        lines += [f"{'Allow' if allow else 'Disallow'}: {value}" for allow, value in group.rules]
        lines += [f"Crawl-delay: {delay}" for delay in group.delays]
        if not group.rules and not group.delays:
            lines.append("Disallow:")  # ends the group (it disallows nothing), as its next record did
    lines += [f"Sitemap: {sitemap}" for sitemap in sitemaps]
    return "".join(f"{line}\n" for line in lines)


def _directive(line: str) -> tuple[str, str] | None:
    """Split a comment-free, stripped line into (canonical field, value); None for unknown records."""
    name, colon, value = line.partition(":")
    if colon:
        field = _FIELDS.get(name.strip(_BLANK).lower())
        if field is not None:
            return field, _value(field, value)
    # Lenient "<field> <value>" form without a colon, e.g. "Disallow /private" or "User agent foo".
    words = line.split(None, 2)
    if len(words) >= 2:
        field = _FIELDS.get(f"{words[0]} {words[1]}".lower())
        if field is not None:
            return field, _value(field, words[2]) if len(words) == 3 else ""
    words = line.split(None, 1)
    field = _FIELDS.get(words[0].lower())
    if field is not None:
        return field, _value(field, words[1]) if len(words) == 2 else ""
    return None


def _value(field: str, raw: str) -> str:
    """A directive's value without the whitespace around it, U+00A0 included (str.strip), nor U+FFFD before
    it (no path or agent starts with one: it is a mangled space). A U+FFFD ending a path stays (it is data,
    `/caf\xe9`: cut, a Disallow would block all of /caf, an Allow would allow it); one ending a User-agent
    value goes, only the token before it counts."""
    value = raw.strip().lstrip(_BLANK)
    return value.rstrip(_BLANK) if field == _USER_AGENT else value


def _agent_token(value: str) -> str | None:
    """The lower-cased product token of a User-agent value (`Googlebot/2.1` -> `googlebot`), or None."""
    if value == "*" or (value.startswith("*") and (value[1].isspace() or value[1] in _BLANK)):
        return "*"
    match = _AGENT_TOKEN.match(value)
    return match.group().lower() if match else None


def _fold_query_slashes(target: str) -> str:
    """Make `%2F` and `/` equal inside the query, as RFC 9309 table 1 (`baz=https://foo.bar`) requires."""
    path, question, query = target.partition("?")
    if question and "%" in query:
        return f"{path}?{_ESCAPED_SLASH.sub('/', query)}"
    return target


def _normalize_target(path_query: str) -> str:
    """Percent-normalize `/path?query` exactly as protego normalizes patterns (RFC 9309 section 2.2.2)."""
    target = path_query.partition("#")[0]
    if _PLAIN_TARGET(target):
        return target
    if not target.startswith("/"):
        # Lenient: a full URL loses its scheme and authority.
        scheme_end = target.find("://")
        if scheme_end != -1:
            slash = target.find("/", scheme_end + 3)
            target = target[slash:] if slash != -1 else "/"
    target = _fold_query_slashes(target)
    try:
        quoted = _quote(target, _KEPT, _SAFE)
    except UnicodeEncodeError:
        quoted = _quote(target.encode("utf-8", "surrogatepass").decode("utf-8", "replace"), _KEPT, _SAFE)
    return quoted if quoted.startswith("/") else f"/{quoted}"


def _parse_delay(raw: str) -> float | None:
    """Seconds from a Crawl-delay value; lenient about a trailing unit ("10s"), capped at a day."""
    match = _DELAY.match(raw)
    if match is None:
        return None
    # An absurd value (1e999) still means "very slow": it is capped, not dropped, so it is refused later.
    return min(float(match.group()), MAX_CRAWL_DELAY_S)


class _Group:
    """One group of the file: its product tokens, rules in order and Crawl-delay values."""

    __slots__ = ("delays", "rules", "tokens")

    def __init__(self) -> None:
        self.tokens: set[str] = set()
        self.rules: list[tuple[bool, str]] = []
        self.delays: list[str] = []


class RobotsRules:
    """The rules of one robots.txt for one crawler: parse once, then `can_fetch` many times."""

    __slots__ = (
        "_applied_agent",
        "_crawl_delay",
        "_prefixes",
        "_rules",
        "_sitemaps",
        "_special",
        "_special_prefixes",
        "_truncated",
    )

    def __init__(
        self,
        applied_agent: str | None,
        rules: Sequence[tuple[bool, str]],
        crawl_delay: float | None,
        sitemaps: tuple[str, ...],
        truncated: bool,
    ) -> None:
        self._applied_agent = applied_agent
        self._crawl_delay = crawl_delay
        self._sitemaps = sitemaps
        self._truncated = truncated
        self._compile(rules)

    @classmethod
    def parse(
        cls,
        content: bytes | str,
        agents: Sequence[str] = DEFAULT_AGENTS,
        max_bytes: int = DEFAULT_MAX_BYTES,
    ) -> RobotsRules:
        """Parse a robots.txt body and pick the group of the first agent in `agents` that has one.

        Never raises on content; raises ValueError for an agent that is not a product token or `*`.
        """
        wanted = [_check_agent(agent) for agent in agents]
        text, truncated = decode_robots_body(content, max_bytes)
        groups, sitemaps = _read_groups(text)
        applied: str | None = None
        merged: list[_Group] = []
        for agent, token in zip(agents, wanted, strict=True):
            merged = [group for group in groups if token in group.tokens]
            if merged:
                applied = agent
                break
        rules = [rule for group in merged for rule in group.rules]
        delays = [d for group in merged for raw in group.delays if (d := _parse_delay(raw)) is not None]
        # Merged groups may each set a delay: the most polite one applies.
        return cls(applied, rules, max(delays) if delays else None, sitemaps, truncated)

    @property
    def applied_agent(self) -> str | None:
        """The agent (as given to `parse`) whose group applies; None when no group applies (allow all)."""
        return self._applied_agent

    @property
    def crawl_delay(self) -> float | None:
        """Crawl-delay of the applied group in seconds (fractions kept); None when absent or invalid."""
        return self._crawl_delay

    @property
    def sitemaps(self) -> tuple[str, ...]:
        """Sitemap URLs declared anywhere in the file, in order, without duplicates."""
        return self._sitemaps

    @property
    def truncated(self) -> bool:
        """True when the body was longer than `max_bytes` and its tail was ignored."""
        return self._truncated

    def can_fetch(self, path_query: str) -> bool:
        """True if `/path?query` may be fetched: the longest matching rule wins, Allow on a tie."""
        target = _normalize_target(path_query)
        if target.startswith("/robots.txt") and (len(target) == 11 or target.startswith("%3F", 11)):
            return True
        if target.startswith(self._prefixes):
            rules = self._rules
        elif target.startswith(self._special_prefixes):
            rules = self._special
        else:
            return True
        for match, allow in rules:
            if match(target):
                return allow
        return True

    def _compile(self, rules: Sequence[tuple[bool, str]]) -> None:
        """Sort rules longest pattern first, Allow first on equal length, and index plain prefixes."""
        compiled: dict[tuple[str, bool], _URLPattern] = {}
        for allow, value in rules:
            if not value:
                continue  # "Disallow:" with no path disallows nothing (RFC 9309 section 2.2.2).
            quoted = _quote_pattern(_fold_query_slashes(value))
            if quoted and (quoted, allow) not in compiled:
                compiled[(quoted, allow)] = _URLPattern(quoted)
        ordered = sorted(compiled.items(), key=lambda item: (len(item[0][0]), item[0][1]), reverse=True)
        self._rules: tuple[_Rule, ...] = tuple((pattern.match, allow) for (_, allow), pattern in ordered)
        # A plain pattern matches only as a prefix, so one startswith over all of them rules them out.
        self._prefixes: tuple[str, ...] = tuple(
            quoted for (quoted, _), pattern in ordered if not _is_special(pattern)
        )
        self._special: tuple[_Rule, ...] = tuple(
            (pattern.match, allow) for (_, allow), pattern in ordered if _is_special(pattern)
        )
        # The literal head of a wildcard or anchored pattern, before its first "*" or its final "$".
        self._special_prefixes: tuple[str, ...] = tuple(
            {quoted.rstrip("$").partition("*")[0] for (quoted, _), pattern in ordered if _is_special(pattern)}
        )


def _is_special(pattern: _URLPattern) -> bool:
    return pattern._contains_asterisk or pattern._contains_dollar


def _check_agent(agent: str) -> str:
    if agent == "*":
        return agent
    if not _AGENT_TOKEN.fullmatch(agent):
        raise ValueError(f"robots agent must be a product token ([A-Za-z0-9_-]+) or '*': {agent!r}")
    return agent.lower()


def _read_groups(text: str) -> tuple[list[_Group], tuple[str, ...]]:
    """Group the records per RFC 9309 section 2.1.

    A User-agent line joins the current group until a group member (Allow, Disallow, Crawl-delay)
    has been read; unknown records and Sitemap lines never end or split a group (section 2.2.4).
    """
    groups: list[_Group] = []
    sitemaps: dict[str, None] = {}
    current: _Group | None = None
    collecting_agents = False
    for raw_line in _LINE_BREAK.split(text):
        line = raw_line.partition("#")[0].strip()
        if not line:
            continue
        parsed = _directive(line)
        if parsed is None:
            continue
        field, value = parsed
        if field == _USER_AGENT:
            if current is None or not collecting_agents:
                current = _Group()
                groups.append(current)
                collecting_agents = True
            token = _agent_token(value)
            if token is not None:
                current.tokens.add(token)
        elif field == _SITEMAP:
            if value:
                sitemaps[value] = None
        elif current is not None:
            collecting_agents = False
            if field == _CRAWL_DELAY:
                current.delays.append(value)
            else:
                current.rules.append((field == _ALLOW, value))
    return groups, tuple(sitemaps)
