"""Batch parts in the template's ResultsBucket (moto), through the real ResultsStore: one object per worker
batch, read back per kind alongside parts of one kind, with the small kinds read from the object's head."""

from __future__ import annotations

import uuid

from infra.local.runtime import LocalCloud
from seolens_core.adapters._batch_part import HEAD_BYTES
from seolens_core.adapters._metering import GLOBAL_METER
from seolens_core.bootstrap import container


def _gets() -> int:
    return GLOBAL_METER.snapshot().get("s3.GetObject", 0)


def test_rows_of_a_kind_come_from_batch_and_single_kind_parts_in_part_order(
    control_cloud: LocalCloud,
) -> None:
    del control_cloud
    app = container()
    results = app.results
    crawl_id = f"parts-{uuid.uuid4().hex[:8]}"
    app.run(results.put_part(crawl_id, "pages", "0000000000001-a", [{"url": "u1"}]))  # an earlier version's
    app.run(
        results.put_batch(
            crawl_id,
            "0000000000002-b",
            {"pages": [{"url": "u2"}], "links": [{"source": "u2", "target": "u1"}], "pacing": [{"t": 2}]},
        )
    )
    app.run(results.put_part(crawl_id, "pages", "0000000000003-c", [{"url": "u3"}]))
    app.run(results.put_batch(crawl_id, "0000000000004-d", {"links": [{"source": "u4", "target": "u2"}]}))
    assert app.run(results.put_batch(crawl_id, "0000000000005-e", {"pages": [], "links": []})) is None

    async def read(kind: str) -> list[dict[str, object]]:
        return [row async for row in results.rows(crawl_id, kind)]

    assert app.run(read("pages")) == [{"url": "u1"}, {"url": "u2"}, {"url": "u3"}]
    assert app.run(read("links")) == [{"source": "u2", "target": "u1"}, {"source": "u4", "target": "u2"}]
    assert app.run(read("pacing")) == [{"t": 2}]
    assert app.run(read("sitemap")) == []  # not a batch kind: its own parts only
    assert len(app.run(results.list_keys(f"crawls/{crawl_id}/parts/"))) == 2


def test_pages_are_read_from_the_head_and_a_long_section_in_a_second_range(control_cloud: LocalCloud) -> None:
    del control_cloud
    app = container()
    results = app.results
    crawl_id = f"parts-{uuid.uuid4().hex[:8]}"
    links = [{"source": "u", "target": "t" * 1000, "n": i} for i in range(500)]  # 0.5 MB after the pages
    app.run(results.put_batch(crawl_id, "0000000000001-a", {"pages": [{"url": "u"}], "links": links}))
    long_pages = [{"url": f"p{i}", "body": "x" * 1000} for i in range(100)]  # beyond the head's 64 KB
    app.run(results.put_batch(crawl_id, "0000000000002-b", {"pages": long_pages, "links": links}))
    key_a, key_b = app.run(results.list_keys(f"crawls/{crawl_id}/parts/"))

    before = _gets()
    assert app.run(results.batch_rows(key_a, "pages")) == [{"url": "u"}]
    assert _gets() - before == 1
    before = _gets()
    assert app.run(results.batch_rows(key_b, "pages")) == long_pages
    assert _gets() - before == 2  # the head, then the rest of the section
    assert app.run(results.batch_rows(key_b, "links")) == links
    assert app.run(results.size(key_b)) > HEAD_BYTES


def test_pages_and_pacing_rows_come_from_one_read_of_each_part(control_cloud: LocalCloud) -> None:
    del control_cloud
    app = container()
    results = app.results
    crawl_id = f"parts-{uuid.uuid4().hex[:8]}"
    links = [{"source": "u", "target": "t"}]
    for i in range(1, 4):
        sections = {"pages": [{"url": f"u{i}"}], "links": links}
        if i != 2:
            sections["pacing"] = [{"origin": "o", "t": i}]
        app.run(results.put_batch(crawl_id, f"000000000000{i}-a", sections))
    app.run(results.put_part(crawl_id, "pacing", "0000000000002-z", [{"origin": "o", "t": 2}]))

    async def read() -> list[tuple[str, object]]:
        return [(kind, row) async for kind, row in results.rows_of(crawl_id, ("pages", "pacing"))]

    before = _gets()
    assert app.run(read()) == [
        ("pages", {"url": "u1"}),
        ("pacing", {"origin": "o", "t": 1}),
        ("pages", {"url": "u2"}),
        ("pacing", {"origin": "o", "t": 2}),  # the single-kind part, between its neighbours by name
        ("pages", {"url": "u3"}),
        ("pacing", {"origin": "o", "t": 3}),
    ]
    assert _gets() - before == 4  # three batch parts and the pacing part, each read once
