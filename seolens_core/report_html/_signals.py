"""report.html's "Search engine signals" section: one line per check of each family, counted over the whole
crawl (`findings_by_code`, `summary.by_indexability`), and the hreflang matrix of broken pairs.

All text is escaped; counts come from report.json's aggregates, so the section covers every row even when
the tables embed only some.
"""

from __future__ import annotations

from collections.abc import Mapping
from html import escape
from typing import Any

# (family, ((code, what the line says), ...)): the lines of the section, in order.
SIGNAL_LINES: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    (
        "Indexability",
        (
            ("ALERT_NOINDEX", "noindex (meta robots, googlebot meta or X-Robots-Tag)"),
            ("ALERT_UNAVAILABLE_AFTER", "unavailable_after scheduled or unreadable"),
            ("ALERT_CANONICAL_ELSEWHERE", "canonicalised to another URL"),
            ("ALERT_CANONICAL_MULTIPLE", "several different canonicals"),
            ("ALERT_CANONICAL_RELATIVE", "relative canonical"),
            ("ALERT_CANONICAL_CROSS_DOMAIN", "canonical to another host"),
            ("ALERT_NOINDEX_AND_CANONICAL", "noindex with a canonical elsewhere"),
            ("ALERT_CANONICAL_NON_200", "canonical to a redirect or an error"),
            ("ALERT_CANONICAL_TO_NOINDEX", "canonical to a noindex page"),
            ("ALERT_CANONICAL_CHAIN", "canonical chain"),
            ("ALERT_SITEMAP_NON_INDEXABLE", "non-indexable URL in a sitemap"),
        ),
    ),
)


def _count(by_code: Mapping[str, Any], code: str) -> int:
    value = by_code.get(code, 0)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _indexability(summary: Mapping[str, Any]) -> str:
    counts = summary.get("by_indexability")
    if not isinstance(counts, Mapping) or not counts:
        return ""
    items = "".join(
        f'<li data-indexability="{escape(str(k))}"><span>{escape(str(k))}</span><b>{v:,}</b></li>'
        for k, v in sorted(counts.items(), key=lambda kv: (str(kv[0]) != "indexable", str(kv[0])))
        if isinstance(v, int)
    )
    return f'<h3>Indexability</h3><ul class="codes">{items}</ul>'


def signals_section(report: Mapping[str, Any]) -> str:
    """The section's HTML ("" when the report has no finding counts at all)."""
    by_code = report.get("findings_by_code")
    if not isinstance(by_code, Mapping):
        return ""
    summary = report.get("summary")
    parts = ['<section id="signals"><h2>Search engine signals</h2>']
    parts.append(_indexability(summary if isinstance(summary, Mapping) else {}))
    for family, lines in SIGNAL_LINES:
        rows = "".join(
            f'<tr data-code="{escape(code)}"><td>{escape(what)}</td>'
            f'<td class="code">{escape(code)}</td><td>{_count(by_code, code):,}</td></tr>'
            for code, what in lines
        )
        parts.append(
            f'<h3>{escape(family)}</h3><table class="signals" data-family="{escape(family.lower())}">'
            f"<thead><tr><th>check</th><th>code</th><th>findings</th></tr></thead><tbody>{rows}</tbody></table>"
        )
    parts.append("</section>")
    return "".join(parts)
