"""StreamingUpload sends a part while the writer goes on, one part in flight, parts completed in order."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from seolens_core.adapters.results import StreamingUpload


class FakeS3:
    """Multipart calls recorded; each part upload waits until the test lets it finish (`release`)."""

    def __init__(self, fail_part: int | None = None) -> None:
        self.calls: list[tuple[str, Any]] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self.release = asyncio.Event()
        self.fail_part = fail_part

    async def create_multipart_upload(self, **kw: Any) -> dict[str, str]:
        self.calls.append(("create", kw["Key"]))
        return {"UploadId": "u1"}

    async def upload_part(self, **kw: Any) -> dict[str, str]:
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await self.release.wait()
            if kw["PartNumber"] == self.fail_part:
                raise RuntimeError(f"part {kw['PartNumber']} lost")
            self.calls.append(("part", (kw["PartNumber"], kw["Body"])))
            return {"ETag": f"e{kw['PartNumber']}"}
        finally:
            self.in_flight -= 1

    async def complete_multipart_upload(self, **kw: Any) -> None:
        self.calls.append(("complete", kw["MultipartUpload"]["Parts"]))

    async def abort_multipart_upload(self, **kw: Any) -> None:
        self.calls.append(("abort", kw["UploadId"]))

    async def put_object(self, **kw: Any) -> None:
        self.calls.append(("put", kw["Body"]))


def test_the_writer_goes_on_while_a_part_is_sent_and_parts_complete_in_order() -> None:
    async def scenario() -> FakeS3:
        s3 = FakeS3()
        out = StreamingUpload(s3, "bucket", "k", "text/plain", part_size=4)
        await out.write(b"aaaa")  # part 1 starts; the write returns while it is still being sent
        await asyncio.sleep(0)
        assert s3.in_flight == 1 and not any(c[0] == "part" for c in s3.calls)
        await out.write(b"bb")  # buffered while part 1 is in flight
        writing = asyncio.ensure_future(out.write(b"bb"))  # a second full part waits for the first
        await asyncio.sleep(0)
        assert not writing.done() and s3.in_flight == 1
        s3.release.set()
        await writing
        await out.write(b"c")
        assert await out.close() == "k"
        return s3

    s3 = asyncio.run(scenario())
    assert s3.most_in_flight == 1
    assert s3.calls == [
        ("create", "k"),
        ("part", (1, b"aaaa")),
        ("part", (2, b"bbbb")),
        ("part", (3, b"c")),
        (
            "complete",
            [
                {"ETag": "e1", "PartNumber": 1},
                {"ETag": "e2", "PartNumber": 2},
                {"ETag": "e3", "PartNumber": 3},
            ],
        ),
    ]


def test_a_lost_part_is_raised_by_the_next_write_and_abort_cancels_the_one_in_flight() -> None:
    async def lost() -> FakeS3:
        s3 = FakeS3(fail_part=1)
        out = StreamingUpload(s3, "bucket", "k", "text/plain", part_size=4)
        await out.write(b"aaaa")
        s3.release.set()
        with pytest.raises(RuntimeError, match="part 1 lost"):
            await out.write(b"bbbb")
        await out.abort()
        return s3

    s3 = asyncio.run(lost())
    assert ("complete" not in [c[0] for c in s3.calls]) and s3.calls[-1] == ("abort", "u1")

    async def aborted() -> FakeS3:
        s3 = FakeS3()
        out = StreamingUpload(s3, "bucket", "k", "text/plain", part_size=4)
        await out.write(b"aaaa")  # in flight, never released
        await out.abort()
        assert s3.in_flight == 0
        return s3

    s3 = asyncio.run(aborted())
    assert s3.calls == [("create", "k"), ("abort", "u1")]


def test_a_small_object_is_one_put() -> None:
    async def scenario() -> FakeS3:
        s3 = FakeS3()
        out = StreamingUpload(s3, "bucket", "k", "text/plain", part_size=4)
        await out.write(b"abc")
        await out.close()
        return s3

    assert asyncio.run(scenario()).calls == [("put", b"abc")]
