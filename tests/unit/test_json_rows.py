"""The JSON of stored rows, journals and inlink files (`seolens_core.adapters._json`)."""

from __future__ import annotations

import json
from typing import Any
from unittest import mock

from hypothesis import given, settings
from hypothesis import strategies as st

from seolens_core.adapters import _json
from seolens_core.adapters._json import dump_lines, dumps, lines_where, load_lines, loads


def test_rows_round_trip_as_compact_utf8() -> None:
    row = {"url": "https://exemple.fr/été", "status": 200, "ttfb_ms": 12.5, "h1": ["a", "b"], "none": None}
    assert dumps(row) == json.dumps(row, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    assert loads(dumps(row)) == row


def test_values_orjson_refuses_are_written_by_the_standard_library() -> None:
    assert loads(dumps({"n": 2**70})) == {"n": 2**70}
    assert dumps({1: "a"}) == b'{"1":"a"}'


def test_parts_written_before_are_still_read() -> None:
    """The standard library wrote NaN for a float that was not a number (not JSON: orjson refuses it)."""
    old = json.dumps({"ttfb_ms": float("nan"), "url": "u"}, separators=(",", ":"), ensure_ascii=False)
    row = loads(old.encode())
    assert row["url"] == "u" and row["ttfb_ms"] != row["ttfb_ms"]


def test_a_row_holding_line_separators_stays_one_row() -> None:
    """U+2028, U+2029 and U+0085 are written unescaped; str.splitlines() would cut the row there (the inlink
    map read link parts that way: a link whose text held one failed the report)."""
    rows = [{"text": "a\u2028b\u2029c\u0085d"}, {"text": "second"}]
    body = dump_lines(rows)
    assert body.count(b"\n") == 2
    assert load_lines(body) == rows
    assert load_lines(body + b"\n\n") == rows


_text = st.text(
    alphabet=st.sampled_from(["a", '"', "\\", ":", ",", "\n", "\u2028", "é", "\x01", "{", "}"]), max_size=6
)


@settings(max_examples=300, deadline=None)
@given(
    rows=st.lists(
        st.fixed_dictionaries(
            {"source": _text, "target": _text},
            optional={"anchor": _text, "nested": st.dictionaries(_text, _text)},
        ),
        max_size=8,
    ),
    wanted=st.lists(_text, max_size=3),
    stdlib=st.booleans(),
    find_at_most=st.sampled_from([0, 32]),
)
def test_lines_where_finds_exactly_the_rows_whose_member_is_wanted(
    rows: list[dict[str, Any]], wanted: list[str], stdlib: bool, find_at_most: int
) -> None:
    """Flat rows (`key` once a row), whatever their strings hold (quotes, backslashes, `"target":"` inside
    another member), as either writer writes them."""
    if stdlib:
        body = b"".join(
            json.dumps(r, separators=(",", ":"), ensure_ascii=False).encode() + b"\n" for r in rows
        )
    else:
        body = dump_lines(rows)
    values = {dumps(v)[1:-1] for v in wanted}
    with mock.patch.object(_json, "_FIND_AT_MOST", find_at_most):  # one search per value, or one scan
        found = [loads(line) for line in lines_where(body, "target", values)]
        assert found == [r for r in rows if r["target"] in wanted]
        assert [loads(line) for line in lines_where(body.rstrip(b"\n"), "target", values)] == found
