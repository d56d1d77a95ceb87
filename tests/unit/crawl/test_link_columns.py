"""A journal's link rows in columns: lossless for any rows, and far smaller once compressed."""

from __future__ import annotations

import zlib
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from seolens_core.adapters._json import dumps, loads
from seolens_core.crawl._link_columns import RELATIVE, decode_links, encode_links
from seolens_core.crawl._worker import _journals, replay_journals
from seolens_core.frontier import FrontierMessage

SITE = "http://shop.test:8080"

_values = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.text(max_size=12))
_urls = st.one_of(
    st.sampled_from(
        [f"{SITE}/", f"{SITE}/a?b=1", "https://other.test/x", "mailto:x@y.test", "/relative", ""]
    ),
    st.text(max_size=20),
)
_row = st.fixed_dictionaries(
    {"source": st.sampled_from([f"{SITE}/p/1", f"{SITE}/p/2", "https://other.test/", "not a url"])},
    optional={
        "target": _urls,
        "internal": st.booleans(),
        "anchor": _values,
        "depth": st.integers(0, 9),
        "redirect": st.just(True),
    },
)


def _by_source(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return sorted(rows, key=lambda r: r["source"])  # stable: each source's rows keep their order


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])  # a loaded CI machine draws slowly
@given(st.lists(_row, max_size=30))
def test_any_rows_come_back_equal_through_json(rows: list[dict[str, Any]]) -> None:
    back = decode_links(loads(dumps(encode_links(rows))))
    assert _by_source(back) == _by_source(rows)
    assert [list(r) for r in _by_source(back)] == [list(r) for r in _by_source(rows)]  # key order too


def test_rows_without_a_source_or_with_the_reserved_key_are_kept_as_they_are() -> None:
    odd = [{"target": f"{SITE}/x"}, {"source": f"{SITE}/", RELATIVE: "y"}]
    for rows in ([odd[0]], [odd[1]]):
        assert encode_links(rows) == {"rows": rows}
        assert decode_links(encode_links(rows)) == rows


def _batch_links(pages: int = 47, per_page: int = 40) -> list[dict[str, Any]]:
    """A batch's link rows as `plan_links` makes them: shared navigation and each page's own children."""
    rows = []
    for p in range(pages):
        source = f"{SITE}/p/{p}"
        for n in range(per_page):
            target = f"{SITE}/nav/{n}" if n < 30 else f"{SITE}/p/{p}/child-{n}"
            rows.append(
                {
                    "source": source,
                    "target": target,
                    "internal": True,
                    "nofollow": False,
                    "anchor": f"Link {n}",
                    "depth": 3,
                }
            )
    return rows


def test_a_batch_of_links_compresses_to_well_under_half() -> None:
    rows = _batch_links()
    as_rows = len(zlib.compress(dumps(rows), 6))
    in_columns = len(zlib.compress(dumps(encode_links(rows)), 6))
    assert in_columns < 0.5 * as_rows, (in_columns, as_rows)


def test_a_journal_holds_its_links_in_columns_and_is_replayed_as_rows() -> None:
    rows = _batch_links(3, 5)  # as the flush hands them over: without their crawl_id
    msg = FrontierMessage("c1", f"{SITE}/p/0", "0" * 16, 1)
    journals = _journals("j-1", [(msg, SITE, "fetched")], {"c1": []}, {"c1": rows}, [], {"c1": {}})
    body = journals["c1"].body()
    assert "links" not in body and body["link_columns"]["groups"]
    links: dict[str, list[dict[str, Any]]] = {}
    replay_journals(list(journals.values()), {}, links, [])
    assert links == {"c1": rows}


def test_a_journal_written_before_columns_is_replayed_from_its_rows() -> None:
    from seolens_core.adapters.urls import Journal

    old = Journal.build("c1", "j-0", {"pages": [], "links": [{"source": f"{SITE}/", "target": f"{SITE}/a"}]})
    links: dict[str, list[dict[str, Any]]] = {}
    replay_journals([old], {}, links, [])
    assert links == {"c1": [{"source": f"{SITE}/", "target": f"{SITE}/a"}]}
