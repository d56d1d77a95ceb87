"""Report outputs written in bounded pieces: ResultsStore.open_file (S3 multipart) on the template's bucket."""

from __future__ import annotations

import tracemalloc
import uuid
from pathlib import Path

import boto3
import pytest
from botocore.exceptions import ClientError

from infra.local.runtime import LocalCloud
from seolens_core.bootstrap import container

MIB = 1024 * 1024


def _head(cloud: LocalCloud, key: str) -> dict[str, object]:
    app = container()
    s3 = boto3.client("s3", endpoint_url=cloud.endpoint_url, region_name="us-east-1")
    return dict(s3.head_object(Bucket=app.resources.results_bucket, Key=key))


def test_a_large_output_is_uploaded_in_parts_and_reads_back_whole(control_cloud: LocalCloud) -> None:
    app = container()
    crawl_id = f"mp-{uuid.uuid4().hex[:8]}"
    out = app.results.open_file(crawl_id, "links.jsonl", "application/x-ndjson", part_size=5 * MIB)
    lines = [f'{{"n":{i},"pad":"{"x" * 90}"}}\n'.encode() for i in range(110_000)]  # ~11 MiB
    for start in range(0, len(lines), 5_000):
        app.run(out.write(b"".join(lines[start : start + 5_000])))
    key = app.run(out.close())
    assert key == f"crawls/{crawl_id}/report/links.jsonl"
    body = app.run(app.results.get_file(key))
    assert body == b"".join(lines)
    head = _head(control_cloud, key)
    assert str(head["ETag"]).strip('"').endswith("-3")  # S3's own record: a multipart object of 3 parts
    assert head["ContentType"] == "application/x-ndjson"


def test_a_small_output_is_one_put_and_an_aborted_one_leaves_nothing(control_cloud: LocalCloud) -> None:
    app = container()
    crawl_id = f"mp-{uuid.uuid4().hex[:8]}"
    small = app.results.open_file(crawl_id, "findings.csv", "text/csv")
    app.run(small.write(b"code,severity\n"))
    key = app.run(small.close())
    assert app.run(app.results.get_file(key)) == b"code,severity\n"
    assert "-" not in str(_head(control_cloud, key)["ETag"])  # a plain PutObject

    empty = app.results.open_file(crawl_id, "empty.jsonl", "application/x-ndjson")
    assert app.run(app.results.get_file(app.run(empty.close()))) == b""  # an empty output still exists

    aborted = app.results.open_file(crawl_id, "pages.jsonl", "application/x-ndjson", part_size=5 * MIB)
    app.run(aborted.write(b"x" * (5 * MIB + 1)))  # one part sent
    app.run(aborted.abort())
    assert app.run(app.results.get_object(f"crawls/{crawl_id}/report/pages.jsonl")) is None


def test_a_download_streams_to_its_file_and_a_failed_one_leaves_no_file(
    control_cloud: LocalCloud, tmp_path: Path
) -> None:
    app = container()
    key = f"crawls/dl-{uuid.uuid4().hex[:8]}/report/links.jsonl"
    body = bytes(range(256)) * (24 * MIB // 256)
    s3 = boto3.client("s3", endpoint_url=control_cloud.endpoint_url, region_name="us-east-1")
    s3.put_object(Bucket=app.resources.results_bucket, Key=key, Body=body)
    target = tmp_path / "links.jsonl"
    tracemalloc.start()
    try:
        size = app.run(app.results.download(key, target, chunk_size=MIB))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert size == len(body) and target.read_bytes() == body
    assert peak < 8 * MIB  # the whole object read at once peaks at 24 MiB and more
    assert [p.name for p in tmp_path.iterdir()] == ["links.jsonl"]  # no partial file left beside it

    missing = tmp_path / "gone.jsonl"
    with pytest.raises(ClientError):
        app.run(app.results.download(key + ".missing", missing))
    assert [p.name for p in tmp_path.iterdir()] == ["links.jsonl"]
