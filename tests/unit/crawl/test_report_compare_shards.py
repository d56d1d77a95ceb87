"""The comparison with the previous crawl runs per URL shard: merging the parts gives the whole's answer."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from seolens_core.control._compare import compare_crawls, merge_comparisons
from seolens_core.crawl._inlinks import shard_of

URLS = [f"https://shop.example/{c}" for c in "abcdefgh"] + [""]
CODES = ["ALERT_A", "ALERT_B", "ALERT_C"]

pages = st.lists(
    st.fixed_dictionaries(
        {
            "url": st.sampled_from(URLS[:-1]),
            "status": st.sampled_from([200, 301, 404, None]),
            "outcome": st.sampled_from(["fetched", "error"]),
        }
    ),
    max_size=12,
)
findings = st.lists(
    st.fixed_dictionaries(
        {
            "code": st.sampled_from(CODES),
            "url": st.sampled_from(URLS),
            "related_url": st.sampled_from([None, "", URLS[0], URLS[3]]),
            "detail": st.sampled_from(["x", "y"]),
        }
    ),
    max_size=12,
)


def _split(rows: list[dict[str, Any]], shards: int) -> list[list[dict[str, Any]]]:
    parts: list[list[dict[str, Any]]] = [[] for _ in range(shards)]
    for row in rows:
        parts[shard_of(str(row.get("url", "")), shards)].append(row)
    return parts


@settings(max_examples=200, deadline=None)
@given(pages, findings, pages, findings, st.integers(1, 5))
def test_merged_shard_comparisons_equal_the_whole(
    prev_pages: list[dict[str, Any]],
    prev_findings: list[dict[str, Any]],
    cur_pages: list[dict[str, Any]],
    cur_findings: list[dict[str, Any]],
    shards: int,
) -> None:
    whole = compare_crawls(prev_pages, prev_findings, cur_pages, cur_findings)
    parts = [
        compare_crawls(*lists)
        for lists in zip(
            _split(prev_pages, shards),
            _split(prev_findings, shards),
            _split(cur_pages, shards),
            _split(cur_findings, shards),
            strict=True,
        )
    ]
    assert merge_comparisons(parts) == whole


def test_an_empty_comparison_merges_to_the_empty_answer() -> None:
    assert merge_comparisons([compare_crawls([], [], [], [])]) == compare_crawls([], [], [], [])
    assert merge_comparisons([]) == compare_crawls([], [], [], [])
