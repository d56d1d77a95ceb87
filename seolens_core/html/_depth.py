"""Nesting guard: caps element depth before parsing, because tree building is quadratic in depth.

The HTML tree builder scans the stack of open elements for block start tags (`<div>` checks for a `<p>`
in button scope), so 100,000 nested `<div>`s take lexbor about 15 s. Browsers cap parser depth
(Blink: 512). We do the same on the source text: tags opened beyond `max_depth` are dropped together
with their matching end tag, so deep content is kept but flattened. Tags that carry facts (a, h1, h2,
template, ...) are never dropped, and raw-text elements and comments are passed through untouched.
"""

from __future__ import annotations

import re

# Below this many '<' the worst case (every tag a nested block) parses in well under 50 ms.
CHEAP_TAG_COUNT = 5_000
# Estimated depth above which the text is rewritten, and the depth it is rewritten to.
DEPTH_TRIGGER = 512
DEPTH_CAP = 256
# How far down the open-element stack an end tag looks for its start tag (bounds the work per tag).
_END_TAG_SEARCH = 64

# Void elements and elements whose end tag is usually omitted do not raise the depth estimate.
_NO_DEPTH = (
    "area|base|br|col|embed|hr|img|input|link|meta|param|source|track|wbr|keygen|"
    "p|li|dt|dd|tr|td|th|option|optgroup|rb|rt|rp|rtc|tbody|thead|tfoot|colgroup|caption"
)
_START_OR_END = re.compile(rf"<(/?)(?!(?:{_NO_DEPTH})\b)[a-z]", re.IGNORECASE)
_NO_DEPTH_TAGS = frozenset(_NO_DEPTH.split("|"))
_KEEP = frozenset({"html", "head", "body", "a", "h1", "h2", "template", "svg", "math", "select"})
_TOKEN = re.compile(
    r"<!--.*?(?:-->|\Z)"
    r"|<(script|style|textarea|title|xmp|noscript|noembed|noframes|iframe|plaintext)\b[^>]*>.*?(?:</\1\s*>|\Z)"
    r"|<(/?)([a-z][^\s/>]*)[^>]*>",
    re.IGNORECASE | re.DOTALL,
)


def estimated_depth(text: str) -> int:
    """Upper-bound-ish nesting depth from start/end tag counts (ignores voids and optional end tags)."""
    depth = peak = 0
    for mark in _START_OR_END.findall(text):
        if mark:
            depth = depth - 1 if depth else 0
        else:
            depth += 1
            peak = max(peak, depth)
    return peak


def flatten_deep_nesting(text: str, max_depth: int = DEPTH_CAP) -> str:
    """Drop start/end tag pairs nested deeper than `max_depth` (content stays)."""
    stack: list[tuple[str, bool]] = []

    def replace(match: re.Match[str]) -> str:
        whole = match.group(0)
        name = match.group(3)
        if name is None:
            return whole
        name = name.lower()
        if name in _NO_DEPTH_TAGS:
            return whole
        if not match.group(2):
            keep = len(stack) < max_depth or name in _KEEP
            stack.append((name, keep))
            return whole if keep else ""
        for index in range(len(stack) - 1, max(-1, len(stack) - 1 - _END_TAG_SEARCH), -1):
            if stack[index][0] == name:
                kept = stack[index][1]
                del stack[index:]
                return whole if kept else ""
        return whole

    return _TOKEN.sub(replace, text)


def guard_depth(text: str) -> str:
    """Return `text` unchanged unless it may nest deeper than DEPTH_TRIGGER; then flatten it."""
    if text.count("<") < CHEAP_TAG_COUNT or estimated_depth(text) <= DEPTH_TRIGGER:
        return text
    return flatten_deep_nesting(text)
