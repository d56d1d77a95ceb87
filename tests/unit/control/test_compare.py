"""compare_crawls: new and fixed findings, status changes, appeared and vanished URLs."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from seolens_core.control import compare_crawls


def page(url: str, status: int | None = 200, outcome: str = "fetched") -> dict[str, Any]:
    return {"url": url, "status": status, "outcome": outcome, "depth": 1}


def finding(code: str, url: str, related: str | None = None) -> dict[str, Any]:
    row = {"code": code, "severity": "warning", "url": url, "detail": f"{code} on {url}"}
    if related is not None:
        row["related_url"] = related
    return row


A, B, C, D = (f"https://shop.example/{p}" for p in ("a", "b", "c", "d"))


def test_new_fixed_unverified_and_status_changes() -> None:
    before_pages = [page(A), page(B), page(C, 404, "fetched"), page(D)]
    after_pages = [page(A, 500, "error"), page(B), page(C), page("https://shop.example/e")]
    before = [
        finding("TITLE_MISSING", A),
        finding("BROKEN_LINK", B, C),
        finding("THIN_CONTENT", D),
        finding("DUP", ""),
    ]
    after = [
        finding("TITLE_MISSING", A),
        finding("HTTP_5XX", A),
        finding("BROKEN_LINK", B, "https://shop.example/x"),
    ]
    out = compare_crawls(before_pages, before, after_pages, after)
    assert [(f["code"], f["url"]) for f in out["new_findings"]] == [("BROKEN_LINK", B), ("HTTP_5XX", A)]
    # B's old broken link to C is fixed (B was crawled again); D's finding is unverified (D not crawled again);
    # a site-wide finding without URL that is gone counts as fixed.
    assert sorted((f["code"], f["url"]) for f in out["fixed_findings"]) == [("BROKEN_LINK", B), ("DUP", "")]
    assert [(f["code"], f["url"]) for f in out["unverified_findings"]] == [("THIN_CONTENT", D)]
    assert out["status_changes"] == [
        {
            "url": A,
            "before": {"status": 200, "outcome": "fetched"},
            "after": {"status": 500, "outcome": "error"},
        },
        {
            "url": C,
            "before": {"status": 404, "outcome": "fetched"},
            "after": {"status": 200, "outcome": "fetched"},
        },
    ]
    assert out["new_urls"] == ["https://shop.example/e"]
    assert out["gone_urls"] == [D]
    assert out["summary"] == {
        "new_findings": 2,
        "fixed_findings": 2,
        "unverified_findings": 1,
        "status_changes": 2,
        "new_urls": 1,
        "gone_urls": 1,
        "findings_before": 4,
        "findings_after": 3,
    }
    assert out["new_findings_by_code"] == {"BROKEN_LINK": 1, "HTTP_5XX": 1}


def test_first_audit_has_everything_new() -> None:
    out = compare_crawls([], [], [page(A)], [finding("TITLE_MISSING", A)])
    assert out["summary"]["new_findings"] == 1 and out["summary"]["fixed_findings"] == 0
    assert out["new_urls"] == [A] and out["status_changes"] == []


def test_duplicate_rows_count_once() -> None:
    rows = [finding("TITLE_MISSING", A)] * 3
    out = compare_crawls([page(A)], [], [page(A)], rows)
    assert len(out["new_findings"]) == 1


_urls = st.sampled_from([A, B, C, D])
_findings = st.lists(st.builds(finding, st.sampled_from(["X", "Y", "Z"]), _urls), max_size=12)
_pages = st.lists(st.builds(page, _urls, st.sampled_from([200, 301, 404, None])), max_size=6)


@given(_pages, _findings, _pages, _findings)
def test_properties(
    bp: list[dict[str, Any]], bf: list[dict[str, Any]], ap: list[dict[str, Any]], af: list[dict[str, Any]]
) -> None:
    out = compare_crawls(bp, bf, ap, af)
    s = out["summary"]
    # Every finding of the current crawl is either new or was already there.
    assert (
        s["findings_after"] - s["new_findings"]
        == s["findings_before"] - s["fixed_findings"] - s["unverified_findings"]
    )
    same = compare_crawls(ap, af, ap, af)
    assert (
        same["summary"]["new_findings"]
        == same["summary"]["fixed_findings"]
        == same["summary"]["status_changes"]
        == 0
    )
    back = compare_crawls(ap, af, bp, bf)
    assert back["summary"]["status_changes"] == s["status_changes"]
