"""A worker batch's rows of every kind in one object: the head names each section's bytes."""

from __future__ import annotations

import pytest

from seolens_core.adapters._batch_part import (
    HEAD_BYTES,
    MalformedPart,
    decode_head,
    encode_batch,
    sections,
)
from seolens_core.adapters._json import load_lines


def test_each_kind_reads_back_its_own_rows_small_sections_first() -> None:
    pages = [{"url": "https://a.test/", "title": "line\u2028separator"}]
    links = [{"source": "https://a.test/", "target": f"https://a.test/{i}"} for i in range(50)]
    pacing = [{"origin": "https://a.test", "t": 1.5}]
    body = encode_batch({"links": links, "pages": pages, "pacing": pacing})
    assert body is not None
    got = sections(body, ["pages", "pacing", "links"])
    assert [load_lines(got[k]) for k in ("pages", "pacing", "links")] == [pages, pacing, links]
    ranges = decode_head(body)
    assert ranges["pages"][1] <= ranges["pacing"][0] < ranges["links"][0]  # links last
    assert ranges["links"][1] == len(body)


def test_a_kind_without_rows_has_no_section() -> None:
    body = encode_batch({"pages": [{"url": "u"}], "links": []})
    assert body is not None and set(decode_head(body)) == {"pages"}
    assert sections(body, ["links"])["links"] == b""
    assert encode_batch({"pages": [], "links": []}) is None


def test_unknown_kinds_and_broken_heads_are_refused() -> None:
    with pytest.raises(ValueError, match="seed"):
        encode_batch({"seed": [{"x": 1}]})
    for broken in (b"no newline at all", b"[1, 2]\n{}\n", b'{"sections": {"pages": [0]}}\n'):
        with pytest.raises(MalformedPart):
            decode_head(broken)
    body = encode_batch({"pages": [{"url": "u" * HEAD_BYTES}]})
    assert body is not None
    with pytest.raises(MalformedPart, match="beyond"):
        sections(body[:HEAD_BYTES], ["pages"])["pages"]  # the section goes on after the bytes given
