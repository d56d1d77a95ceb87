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
        ),
    ),
    (
        "hreflang",
        (
            ("ALERT_HREFLANG_INVALID_CODE", "invalid language or region code"),
            ("ALERT_HREFLANG_NO_SELF", "no self-reference"),
            ("ALERT_HREFLANG_NO_X_DEFAULT", "no x-default"),
            ("ALERT_HREFLANG_NO_RETURN", "alternate without return link"),
            ("ALERT_HREFLANG_TO_NON_200", "alternate redirects or errors"),
            ("ALERT_HREFLANG_TO_NON_CANONICAL", "alternate is not canonical"),
        ),
    ),
    (
        "Structured data",
        (
            ("ALERT_JSONLD_INVALID", "JSON-LD that does not parse"),
            ("ALERT_JSONLD_NO_CONTEXT", "JSON-LD item without @context"),
            ("ALERT_JSONLD_NO_TYPE", "JSON-LD item without @type"),
        ),
    ),
    (
        "Security and transport",
        (
            ("ALERT_HTTP_PAGE_ON_HTTPS_SITE", "http page on an https site"),
            ("ALERT_HTTPS_REDIRECT_MISSING", "http URL not redirected to https"),
            ("ALERT_MIXED_CONTENT", "https page with http subresources"),
            ("ALERT_HSTS_MISSING", "https host without HSTS"),
            ("ALERT_REDIRECT_TEMPORARY", "temporary redirect (302, 303, 307)"),
            ("ALERT_META_REFRESH", "instant meta refresh"),
            ("ALERT_META_REFRESH_DELAYED", "delayed meta refresh"),
        ),
    ),
    (
        "Sitemap quality",
        (
            (
                "ALERT_SITEMAP_NON_INDEXABLE",
                "non-indexable URL listed (redirect, 4xx/5xx, noindex, canonicalised)",
            ),
            ("ALERT_SITEMAP_LASTMOD_FUTURE", "lastmod in the future"),
            ("ALERT_SITEMAP_LASTMOD_UNIFORM", "the same lastmod on every entry"),
            ("ALERT_SITEMAP_LASTMOD_INVALID", "lastmod not in W3C Datetime format"),
            ("ALERT_SITEMAP_OTHER_HOSTS", "URLs on other hosts than the sitemap's"),
            ("ALERT_SITEMAP_URLS_OUTSIDE_SCOPE", "URLs outside the crawl"),
            ("ALERT_SITEMAP_TOO_MANY_URLS", "over 50,000 URLs"),
            ("ALERT_SITEMAP_TOO_LARGE", "over 50 MB"),
        ),
    ),
)
MATRIX_ROWS = 60
MATRIX_COLUMNS = 24
_PAIR_LABELS = {
    "ALERT_HREFLANG_NO_RETURN": "no return",
    "ALERT_HREFLANG_TO_NON_200": "non-200",
    "ALERT_HREFLANG_TO_NON_CANONICAL": "non-canonical",
}


def _count(by_code: Mapping[str, Any], code: str) -> int:
    value = by_code.get(code, 0)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _counts(summary: Mapping[str, Any], key: str, title: str, first: str = "") -> str:
    """A list of `summary[key]`'s counts (`first` leads), e.g. indexability by reason."""
    counts = summary.get(key)
    if not isinstance(counts, Mapping) or not counts:
        return ""
    attr = escape(key.removeprefix("by_").replace("_", "-"))
    items = "".join(
        f'<li data-{attr}="{escape(str(k))}"><span>{escape(str(k))}</span><b>{v:,}</b></li>'
        for k, v in sorted(counts.items(), key=lambda kv: (str(kv[0]) != first, str(kv[0])))
        if isinstance(v, int)
    )
    return f'<h3>{escape(title)}</h3><ul class="codes">{items}</ul>'


def _matrix(matrix: Any) -> str:
    """Broken hreflang pairs as a matrix: a row per page, a column per hreflang value, the problem in the cell
    (the alternate URL as its tooltip); at most `MATRIX_ROWS` x `MATRIX_COLUMNS`."""
    if not isinstance(matrix, Mapping) or not isinstance(matrix.get("pairs"), list) or not matrix["pairs"]:
        return ""
    cells: dict[str, dict[str, tuple[str, str]]] = {}
    langs: dict[str, None] = {}
    for pair in matrix["pairs"]:
        if not isinstance(pair, list) or len(pair) != 4:
            continue
        url, lang, href, code = (str(v) for v in pair)
        if url not in cells and len(cells) >= MATRIX_ROWS:
            continue
        if lang not in langs and len(langs) >= MATRIX_COLUMNS:
            continue
        langs.setdefault(lang)
        cells.setdefault(url, {})[lang] = (_PAIR_LABELS.get(code, code), href)
    head = "".join(f"<th>{escape(lang)}</th>" for lang in langs)
    body = "".join(
        f'<tr><th scope="row" class="url">{escape(url)}</th>'
        + "".join(
            f'<td title="{escape(row[lang][1])}" data-problem="{escape(row[lang][0])}">{escape(row[lang][0])}</td>'
            if lang in row
            else "<td></td>"
            for lang in langs
        )
        + "</tr>"
        for url, row in cells.items()
    )
    total = matrix.get("broken_pairs")
    note = f"{total:,} broken pairs" if isinstance(total, int) else ""
    return (
        f'<h4>Broken hreflang pairs</h4><p class="shown">{escape(note)}; all of them are in findings.csv.</p>'
        f'<div class="table-wrap"><table class="hreflang-matrix"><thead><tr><th>page</th>{head}</tr></thead>'
        f"<tbody>{body}</tbody></table></div>"
    )


def signals_section(report: Mapping[str, Any]) -> str:
    """The section's HTML ("" when the report has no finding counts at all)."""
    by_code = report.get("findings_by_code")
    if not isinstance(by_code, Mapping):
        return ""
    summary = report.get("summary")
    parts = ['<section id="signals"><h2>Search engine signals</h2>']
    summary = summary if isinstance(summary, Mapping) else {}
    parts.append(
        _counts(summary, "by_indexability", "Indexable and non-indexable URLs, by reason", first="indexable")
    )
    parts.append(
        _counts(summary, "by_redirect_type", "Redirects by type (301/308 permanent, 302/303/307 temporary)")
    )
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
        if family == "hreflang":
            parts.append(_matrix(report.get("hreflang_matrix")))
        if family == "Sitemap quality":
            parts.append(_counts(summary, "sitemap_non_indexable", "Non-indexable sitemap URLs by reason"))
    parts.append("</section>")
    return "".join(parts)
