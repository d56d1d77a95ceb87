"""Meta refresh (`<meta http-equiv="refresh" content="0; url=/next">`, or a `Refresh` header): a redirect
the browser makes. Google treats an instant one like a permanent redirect and a delayed one like a temporary.

Parsed as the HTML standard's "shared declarative refresh steps" do, simplified: a non-negative delay, then
optionally `;` or `,`, `url=` and the URL, quoted or not.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_REFRESH = re.compile(
    r"""^\s*(\d+(?:\.\d*)?)\s*[;,]?\s*(?:url\s*=\s*)?(?:(["'])(.*?)\2|(\S.*?))?\s*$""",
    re.IGNORECASE | re.DOTALL,
)


@dataclass(frozen=True, slots=True)
class Refresh:
    """A refresh's delay in seconds and its target as written (None: the page reloads itself)."""

    delay_s: float
    url: str | None


def parse_refresh(content: str | None) -> Refresh | None:
    """The refresh a meta content / Refresh header asks for, or None when it is not one."""
    if not content:
        return None
    match = _REFRESH.match(content[:4096])
    if match is None:
        return None
    target = match.group(3) if match.group(3) is not None else match.group(4)
    return Refresh(float(match.group(1)), target.strip() or None if target else None)
