"""The inlink map/reduce on the template's ResultsBucket in moto, through the real ResultsStore adapter."""

from __future__ import annotations

import json
import random
import uuid
from typing import Any

from infra.local.runtime import LocalCloud
from seolens_core.bootstrap import container
from seolens_core.crawl._inlinks import InlinkCounter, is_done, start_cursor
from seolens_core.crawl._report import count_inlinks


def test_counts_on_s3_equal_count_inlinks_and_resume_from_the_checkpoint(control_cloud: LocalCloud) -> None:
    del control_cloud
    app = container()
    results = app.results
    crawl_id = f"inl-{uuid.uuid4().hex[:8]}"
    rng = random.Random(3)
    urls = [f"https://ex.test/p{i}" for i in range(60)]
    all_rows: list[dict[str, Any]] = []
    for part in range(25):  # 25 worker parts of 4 pages; page p7 delivered twice (parts 1 and 20)
        pages = [urls[(part * 4 + i) % 60] for i in range(4)] + (["https://ex.test/p7"] if part == 20 else [])
        rows = [
            {
                "crawl_id": crawl_id,
                "source": src,
                "target": rng.choice(urls),
                "internal": rng.random() < 0.9,
                # anchor text from the page, written unescaped: line separators must not cut a row
                "anchor": rng.choice(["", "Home", "a\u2028b", "c\u0085d\u2029"]),
            }
            for src in pages
            for _ in range(rng.randint(0, 8))
        ]
        all_rows += rows
        if part % 2:  # a worker batch's part, its links after its pages; the others: link-only parts
            page_rows = [{"url": u, "status": 200} for u in pages]
            app.run(results.put_batch(crawl_id, f"{part:013d}-abc", {"pages": page_rows, "links": rows}))
        else:
            app.run(results.put_part(crawl_id, "links", f"{part:013d}-abc", rows))

    counter = InlinkCounter(results, edge_budget=40, shards_per_step=2)
    invocations = 0
    cursor = None
    while not is_done(
        cursor
    ):  # one step per invocation, resumed from the S3 checkpoint like the Orphans loop
        invocations += 1
        loaded = app.run(counter.load(crawl_id)) or start_cursor(5)
        cursor = app.run(counter.run(crawl_id, loaded, budget_s=0))
        assert invocations < 100
    expected = {u: n for u, n in count_inlinks(all_rows).items() if n}
    assert app.run(counter.counts(crawl_id, 5, urls)) == expected

    keys = app.run(results.list_keys(f"crawls/{crawl_id}/inlinks/"))
    counts_keys = [k for k in keys if "/counts/" in k]
    assert counts_keys == [f"crawls/{crawl_id}/inlinks/counts/{s:04d}.json" for s in range(5)]
    stored: dict[str, int] = {}
    for key in counts_keys:
        stored.update(json.loads(app.run(results.get_file(key))))
    assert stored == expected  # the objects in the bucket, not only the counter's answer
    map_steps = {k.rsplit("/", 1)[1] for k in keys if "/map/" in k}
    assert len(map_steps) == invocations - 1 - 3  # the end-of-map step and 3 reduce steps write no map object
    assert app.run(results.get_object(f"crawls/{crawl_id}/inlinks/missing.json")) is None
    assert app.run(results.list_keys(f"crawls/{crawl_id}/links/", start_after=None, limit=7))[-1].endswith(
        "0000000000012-abc.jsonl"
    )
    assert len(app.run(results.list_keys(f"crawls/{crawl_id}/parts/"))) == 12


def test_an_upload_copies_large_objects_server_side_and_writes_the_rest(control_cloud: LocalCloud) -> None:
    """`StreamingUpload.copy` on the embedded S3, which refuses a part under 5 MiB that is not the last: the
    objects it may copy are copied, the others written, and the result is every object's bytes in order."""
    del control_cloud
    app = container()
    results = app.results
    base = f"copytest/{uuid.uuid4().hex[:8]}/"
    mib = 1024 * 1024
    sizes = [6 * mib, 1 * mib, 6 * mib, 2 * mib, 7 * mib, 5 * mib]
    bodies = [bytes([65 + i]) * size for i, size in enumerate(sizes)]
    for i, body in enumerate(bodies):
        app.run(results.put_object(f"{base}{i}", body, "application/octet-stream"))

    async def assemble() -> list[bool]:
        out = results.open_object(f"{base}all", "application/octet-stream")
        copied = []
        for i, body in enumerate(bodies):
            done = await out.copy(f"{base}{i}", len(body))
            if not done:
                await out.write(body)
            copied.append(done)
        assert out.size == sum(sizes)
        await out.close()
        return copied

    # 0 copied; 1 buffered, so 2 and 3 are written (9 MiB: a part is sent, the buffer empties); 4 copied;
    # 5 at the minimum, copied as the last part.
    assert app.run(assemble()) == [True, False, False, False, True, True]
    assert app.run(results.get_file(f"{base}all")) == b"".join(bodies)
