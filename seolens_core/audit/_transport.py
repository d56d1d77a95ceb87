"""Security and transport: how a URL is served (http on an https site, mixed content, the http to https
redirect) and how it redirects (permanent or temporary, by HTTP status or by meta refresh).

Pure functions of the page facts and the fetch; HSTS is judged per host by the site rules (`_site.py`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from seolens_core.audit._catalogue import FindingCode
from seolens_core.html import PageFacts, parse_refresh

if TYPE_CHECKING:
    from seolens_core.audit._page import FetchFacts

F = FindingCode
PERMANENT_STATUSES = frozenset({301, 308})
TEMPORARY_STATUSES = frozenset({302, 303, 307})


def redirect_type(status: int | None, facts: PageFacts | None = None) -> str | None:
    """ "permanent" (301, 308), "temporary" (302, 303, 307), "meta refresh" (an instant one on a 2xx page:
    Google reads it as permanent), "meta refresh (delayed)" (read as temporary), or None."""
    if status in PERMANENT_STATUSES:
        return "permanent"
    if status in TEMPORARY_STATUSES:
        return "temporary"
    if facts is None or status is None or not 200 <= status < 300 or not facts.is_html:
        return None
    refresh = parse_refresh(facts.meta_refresh)
    if refresh is None or refresh.url is None:
        return None
    return "meta refresh" if refresh.delay_s == 0 else "meta refresh (delayed)"


def _scheme(url: str) -> str:
    return url.split(":", 1)[0].lower()


def transport_signals(
    facts: PageFacts, fetch: FetchFacts, https_site: bool
) -> Iterator[tuple[str, str, str | None]]:
    """(code, detail, related URL) of how the page was served and how it redirects; `https_site`: the crawl's
    start URL is https, so its http:// URLs should all redirect there."""
    status = fetch.status
    ok = status is not None and 200 <= status < 300
    kind = redirect_type(status, facts)
    if kind == "temporary":
        yield F.REDIRECT_TEMPORARY, f"{status} (temporary) to {fetch.redirect_to}", fetch.redirect_to
    elif kind is not None and kind.startswith("meta refresh"):
        refresh = parse_refresh(facts.meta_refresh)
        assert refresh is not None
        code = F.META_REFRESH if kind == "meta refresh" else F.META_REFRESH_DELAYED
        yield code, f"after {refresh.delay_s:g} s to {refresh.url}", fetch.refresh_to
    if https_site and _scheme(facts.url) == "http" and status is not None:
        if ok:
            yield F.HTTP_PAGE_ON_HTTPS_SITE, "served over plain http on an https site", None
        to = fetch.redirect_to
        if not (300 <= status < 400 and to is not None and _scheme(to) == "https"):
            detail = f"status {status}" + (f", redirects to {to}" if to else "")
            yield F.HTTPS_REDIRECT_MISSING, detail, to
    if ok and facts.http_subresources and _scheme(facts.url) == "https":
        shown = ", ".join(facts.http_subresource_examples[:3])
        yield F.MIXED_CONTENT, f"{facts.http_subresources} http:// subresources: {shown}", None


def hsts_ok(value: str | None) -> bool:
    """A Strict-Transport-Security value that protects: a positive max-age."""
    for part in (value or "").split(";"):
        name, _, number = part.strip().partition("=")
        if name.strip().lower() == "max-age":
            try:
                return int(number.strip().strip('"')) > 0
            except ValueError:
                return False
    return False
