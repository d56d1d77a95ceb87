"""Nesting guard: caps element depth before parsing, because tree building is quadratic in depth.

The HTML tree builder scans the stack of open elements for block start tags (`<div>` checks for a `<p>`
in button scope), so 100,000 nested `<div>`s take lexbor about 15 s. Browsers cap parser depth
(Blink: 512). We do the same on the source text: a light tag scanner simulates the stack of open
elements (end tags pop only what they match; unmatched ones are ignored, as the parser does), and tags
opened deeper than `max_depth` are dropped with their matching end tag, so deep content is kept but
flattened. Tags that carry facts (a, h1, h2, template, ...) are never dropped; raw-text elements and
comments are skipped whole. The simulation over-estimates depth (it does not apply implied end tags
beyond a bounded search), which only errs towards flattening.
"""

from __future__ import annotations

import re

# Below this many '<' even the worst case (every tag an unclosed block) parses in a few tens of ms.
CHEAP_TAG_COUNT = 5_000
DEPTH_CAP = 256
# How far down the simulated stack an end tag looks for its start tag (bounds the work per tag).
_END_TAG_SEARCH = 16

# Void elements and elements whose end tag is usually omitted (the parser closes them when a sibling
# opens) never deepen the stack.
_NO_DEPTH_TAGS = frozenset(
    [
        "area",
        "base",
        "br",
        "col",
        "embed",
        "hr",
        "img",
        "input",
        "link",
        "meta",
        "param",
        "source",
        "track",
        "wbr",
        "keygen",
        "p",
        "li",
        "dt",
        "dd",
        "tr",
        "td",
        "th",
        "option",
        "optgroup",
        "rb",
        "rt",
        "rp",
        "rtc",
        "tbody",
        "thead",
        "tfoot",
        "colgroup",
        "caption",
    ]
)
_KEEP = frozenset({"html", "head", "body", "a", "h1", "h2", "template", "svg", "math", "select"})
_FOREIGN = frozenset({"svg", "math"})
_RAW_TEXT = ("script", "style", "textarea", "title", "xmp", "noscript", "noembed", "noframes", "iframe")
_RAW_TEXT_END = {name: re.compile(rf"</{name}\s*>", re.IGNORECASE) for name in _RAW_TEXT}
_TAG = re.compile(r"<(?:(!--)|(/?)([a-zA-Z][^\s/>]*))")


def _dropped_spans(text: str, max_depth: int) -> list[tuple[int, int]]:
    """Source spans of the start and end tags that the depth cap removes, in order."""
    stack: list[tuple[str, bool]] = []
    open_count: dict[str, int] = {}
    drops: list[tuple[int, int]] = []
    foreign = 0
    pos = 0
    search = _TAG.search
    while (match := search(text, pos)) is not None:
        if match.group(1):
            end = text.find("-->", match.end())
            pos = len(text) if end < 0 else end + 3
            continue
        tag_end = text.find(">", match.end())
        if tag_end < 0:
            break
        pos = tag_end + 1
        name = match.group(3).lower()
        if name in _NO_DEPTH_TAGS:
            continue
        if not match.group(2):
            raw_end = _RAW_TEXT_END.get(name)
            if raw_end is not None:
                found = raw_end.search(text, pos)
                pos = len(text) if found is None else found.end()
                continue
            if foreign and text[tag_end - 1] == "/":
                continue  # self-closing inside svg/math
            keep = len(stack) < max_depth or name in _KEEP
            stack.append((name, keep))
            open_count[name] = open_count.get(name, 0) + 1
            foreign += name in _FOREIGN
            if not keep:
                drops.append((match.start(), pos))
            continue
        if not open_count.get(name):
            continue
        for index in range(len(stack) - 1, max(-1, len(stack) - 1 - _END_TAG_SEARCH), -1):
            if stack[index][0] == name:
                if not stack[index][1]:
                    drops.append((match.start(), pos))
                for popped, _ in stack[index:]:
                    open_count[popped] -= 1
                    foreign -= popped in _FOREIGN
                del stack[index:]
                break
    return drops


def flatten_deep_nesting(text: str, max_depth: int = DEPTH_CAP) -> str:
    """Replace start/end tag pairs nested deeper than `max_depth` by a space (their content stays).

    The space keeps words apart where a dropped block element separated them.
    """
    drops = _dropped_spans(text, max_depth)
    if not drops:
        return text
    parts: list[str] = []
    last = 0
    for start, end in drops:
        parts.append(text[last:start])
        parts.append(" ")
        last = end
    parts.append(text[last:])
    return "".join(parts)


def guard_depth(text: str) -> str:
    """Return `text` unchanged unless it could nest deeper than DEPTH_CAP; then flatten it."""
    if text.count("<") < CHEAP_TAG_COUNT:
        return text
    return flatten_deep_nesting(text)
