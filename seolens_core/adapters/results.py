"""ResultsStore: bulk results in S3 as JSON Lines parts, one object per worker batch.

S3 rather than DynamoDB for page rows: one PUT per batch of pages instead of one write per page, and the
report step streams the parts back in order; the reports people open are written beside them, through
`open_file` (a multipart upload in bounded parts, so no output is ever held whole in memory). A worker
batch's pages, pacing and links rows share one object (`put_batch`, under `parts/`); parts of one kind
(`put_part`: seed and sitemap rows, and every kind before batch parts) are read alongside.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterable, Mapping, Sequence
from contextlib import aclosing
from pathlib import Path
from typing import Any

from seolens_core.adapters._batch_part import (
    BATCH_KINDS,
    HEAD_BYTES,
    decode_head,
    encode_batch,
    sections,
)
from seolens_core.adapters._gather import read_ahead
from seolens_core.adapters._json import dump_lines, load_lines

# S3 multipart parts must be at least 5 MiB except the last one; 8 MiB keeps the part count of a 1M-page
# pages.jsonl (~2 GB) under the 10,000-part limit.
PART_SIZE = 8 * 1024 * 1024
MIN_PART_SIZE = 5 * 1024 * 1024
"""S3 refuses a multipart part under this size unless it is the last."""
DOWNLOAD_CHUNK = 1024 * 1024
READ_AHEAD = 8
"""Parts read at once by the readers that walk every part of a crawl (the report, the inlink map): one at a
time, a 20,000-page crawl's 2,000 parts took as many round trips in turn."""


class StreamingUpload:
    """Write an object in pieces: bytes are buffered up to `part_size`, then sent as one multipart part while
    the writer goes on (one part in flight: memory is two parts). An object smaller than one part is written
    with a single PutObject on `close()`. A failed part upload is raised by the next `write` or `close`."""

    def __init__(
        self, client: Any, bucket: str, key: str, content_type: str, part_size: int = PART_SIZE
    ) -> None:
        self._client = client
        self._bucket = bucket
        self.key = key
        self._content_type = content_type
        self._part_size = part_size
        self._buffer = bytearray()
        self._upload_id: str | None = None
        self._parts: list[dict[str, Any]] = []
        self._sending: asyncio.Task[None] | None = None
        self.size = 0

    async def write(self, data: bytes) -> None:
        self._buffer += data
        self.size += len(data)
        if len(self._buffer) >= self._part_size:
            await self._flush()

    async def copy(self, key: str, size: int) -> bool:
        """Append the object `key` (of `size` bytes, in the same bucket) as the next part, copied by S3 without
        passing through here. Only with nothing buffered (a copied part takes no bytes with it) and from
        `MIN_PART_SIZE` up; False: nothing was done, the caller writes the bytes instead."""
        if self._buffer or size < MIN_PART_SIZE:
            return False
        await self._start()
        await self._sent()
        number = len(self._parts) + 1
        resp = await self._client.upload_part_copy(
            Bucket=self._bucket,
            Key=self.key,
            UploadId=self._upload_id,
            PartNumber=number,
            CopySource={"Bucket": self._bucket, "Key": key},
        )
        self._parts.append({"ETag": resp["CopyPartResult"]["ETag"], "PartNumber": number})
        self.size += size
        return True

    async def _start(self) -> None:
        if self._upload_id is not None:
            return
        creating = asyncio.ensure_future(
            self._client.create_multipart_upload(
                Bucket=self._bucket, Key=self.key, ContentType=self._content_type
            )
        )
        try:
            resp = await asyncio.shield(creating)
        except asyncio.CancelledError:  # cancelled meanwhile: learn the upload's id, so that `abort` ends it
            with contextlib.suppress(Exception):
                self._upload_id = (await creating)["UploadId"]
            raise
        self._upload_id = resp["UploadId"]

    async def _flush(self) -> None:
        await self._start()
        await self._sent()
        body, self._buffer = bytes(self._buffer), bytearray()
        self._sending = asyncio.ensure_future(self._send(len(self._parts) + 1, body))

    async def _send(self, number: int, body: bytes) -> None:
        resp = await self._client.upload_part(
            Bucket=self._bucket, Key=self.key, UploadId=self._upload_id, PartNumber=number, Body=body
        )
        self._parts.append({"ETag": resp["ETag"], "PartNumber": number})

    async def _sent(self) -> None:
        """Wait for the part in flight (raising its error)."""
        sending, self._sending = self._sending, None
        if sending is not None:
            await sending

    async def close(self) -> str:
        if self._upload_id is None:
            await self._client.put_object(
                Bucket=self._bucket, Key=self.key, Body=bytes(self._buffer), ContentType=self._content_type
            )
            self._buffer = bytearray()
            return self.key
        if self._buffer:
            await self._flush()
        await self._sent()
        await self._client.complete_multipart_upload(
            Bucket=self._bucket,
            Key=self.key,
            UploadId=self._upload_id,
            MultipartUpload={"Parts": self._parts},
        )
        return self.key

    async def abort(self) -> None:
        sending, self._sending = self._sending, None
        if sending is not None:
            sending.cancel()
            await asyncio.gather(sending, return_exceptions=True)
        if self._upload_id is not None:
            await self._client.abort_multipart_upload(
                Bucket=self._bucket, Key=self.key, UploadId=self._upload_id
            )
            self._upload_id = None
        self._buffer = bytearray()


def kind_prefix(crawl_id: str, kind: str) -> str:
    return f"crawls/{crawl_id}/{kind}/"


def batch_prefix(crawl_id: str) -> str:
    """Where a crawl's batch parts are (it sorts after `links/`: a key cursor over both reads them in turn)."""
    return kind_prefix(crawl_id, "parts")


def _part_name(key: str) -> str:
    return key.rsplit("/", 1)[-1]


class ResultsStore:
    def __init__(self, client: Any, bucket: str) -> None:
        self._client = client
        self._bucket = bucket

    async def put_part(
        self, crawl_id: str, kind: str, part_id: str, rows: Iterable[dict[str, Any]]
    ) -> str | None:
        body = dump_lines(rows)
        if not body:
            return None
        key = f"{kind_prefix(crawl_id, kind)}{part_id}.jsonl"
        await self._client.put_object(
            Bucket=self._bucket, Key=key, Body=body, ContentType="application/x-ndjson"
        )
        return key

    async def part_keys(self, crawl_id: str, kind: str) -> list[str]:
        keys: list[str] = []
        kwargs: dict[str, Any] = {"Bucket": self._bucket, "Prefix": kind_prefix(crawl_id, kind)}
        while True:
            resp = await self._client.list_objects_v2(**kwargs)
            keys.extend(o["Key"] for o in resp.get("Contents", []))
            if not resp.get("IsTruncated"):
                return sorted(keys)
            kwargs["ContinuationToken"] = resp["NextContinuationToken"]

    async def put_batch(
        self, crawl_id: str, part_id: str, sections: Mapping[str, Iterable[dict[str, Any]]]
    ) -> str | None:
        """One worker batch's rows of every kind in `BATCH_KINDS`, as one object (None: no rows at all)."""
        body = encode_batch(sections)
        if body is None:
            return None
        key = f"{batch_prefix(crawl_id)}{part_id}.jsonl"
        await self._client.put_object(
            Bucket=self._bucket, Key=key, Body=body, ContentType="application/x-ndjson"
        )
        return key

    async def rows(self, crawl_id: str, kind: str) -> AsyncIterator[dict[str, Any]]:
        """Every row of every part of `kind`, streamed part by part (`READ_AHEAD` parts read at once), in part
        order (time, then name); for a batch kind, batch parts and parts of that kind alike. The listings are
        read one page of 1,000 keys at a time, so neither the key lists nor the rows are held."""
        async for _, row in self.rows_of(crawl_id, (kind,)):
            yield row

    async def rows_of(
        self, crawl_id: str, kinds: Sequence[str], batch_parts: bool = True
    ) -> AsyncIterator[tuple[str, dict[str, Any]]]:
        """(kind, row) for every row of the `kinds`, as `rows` does for one: a batch part is read once for
        all of them (within a part, kind by kind in the order given). `batch_parts=False`: the parts of one
        kind only (a reader that has the batch parts' rows from elsewhere)."""
        prefixes = {kind_prefix(crawl_id, kind): kind for kind in kinds}
        batch = batch_prefix(crawl_id)
        if batch_parts and any(kind in BATCH_KINDS for kind in kinds):
            prefixes[batch] = ""

        async def read(key: str) -> dict[str, list[Any]]:
            kind = prefixes[key[: key.rfind("/") + 1]]
            if kind:
                return {kind: load_lines(await self.get_file(key))}
            return await self.batch_sections(key, [k for k in kinds if k in BATCH_KINDS])

        async with aclosing(read_ahead(self._merged_keys(list(prefixes)), read, READ_AHEAD)) as parts:
            async for _, found in parts:
                for kind, rows in found.items():
                    for row in rows:
                        yield kind, row

    async def batch_rows(self, key: str, kind: str) -> list[Any]:
        """The rows of `kind` in a batch part."""
        return (await self.batch_sections(key, (kind,)))[kind]

    async def batch_sections(self, key: str, kinds: Sequence[str]) -> dict[str, list[Any]]:
        """The rows of each of `kinds` in a batch part: for the small kinds, the head of the object (one ranged
        GET, a second one for what goes beyond it); with links, the whole object."""
        whole = "links" in kinds
        data = await (self.get_file(key) if whole else self.get_range(key, 0, HEAD_BYTES))
        head = decode_head(data)
        end = max((stop for kind, (_, stop) in head.items() if kind in kinds), default=0)
        if not whole and end > len(data) == HEAD_BYTES:
            data += await self.get_range(key, len(data), end - len(data))
        return {kind: load_lines(body) for kind, body in sections(data, kinds, head).items()}

    async def _merged_keys(self, prefixes: Sequence[str]) -> AsyncIterator[str]:
        """The keys under every prefix, merged in part-name order, listing each 1,000 keys at a time."""
        pending: list[list[str]] = [[] for _ in prefixes]
        after: list[str | None] = [None] * len(prefixes)
        done = [False] * len(prefixes)
        while True:
            for i, prefix in enumerate(prefixes):
                if not pending[i] and not done[i]:
                    pending[i] = await self.list_keys(prefix, start_after=after[i], limit=1000)
                    done[i] = not pending[i]
                    after[i] = pending[i][-1] if pending[i] else after[i]
            heads = [(_part_name(keys[0]), i) for i, keys in enumerate(pending) if keys]
            if not heads:
                return
            _, i = min(heads)
            yield pending[i].pop(0)

    async def put_file(self, crawl_id: str, name: str, body: bytes, content_type: str) -> str:
        key = f"crawls/{crawl_id}/report/{name}"
        await self._client.put_object(Bucket=self._bucket, Key=key, Body=body, ContentType=content_type)
        return key

    def open_file(
        self, crawl_id: str, name: str, content_type: str, part_size: int = PART_SIZE
    ) -> StreamingUpload:
        """A report file written in bounded pieces (`write`, then `close`; `abort` on failure)."""
        key = f"crawls/{crawl_id}/report/{name}"
        return StreamingUpload(self._client, self._bucket, key, content_type, part_size)

    def open_object(self, key: str, content_type: str, part_size: int = PART_SIZE) -> StreamingUpload:
        """Any object written in bounded pieces (the report step's work files)."""
        return StreamingUpload(self._client, self._bucket, key, content_type, part_size)

    async def get_file(self, key: str) -> bytes:
        resp = await self._client.get_object(Bucket=self._bucket, Key=key)
        async with resp["Body"] as stream:
            data: bytes = await stream.read()
        return data

    async def download(self, key: str, target: Path, chunk_size: int = DOWNLOAD_CHUNK) -> int:
        """Copy an object to a local file, `chunk_size` bytes at a time (a 1M-page links.jsonl is gigabytes);
        returns its size. The file appears whole or not at all: written beside `target`, then renamed."""
        partial = target.with_name(f".{target.name}.partial")
        size = 0
        try:
            resp = await self._client.get_object(Bucket=self._bucket, Key=key)
            with partial.open("wb") as out:
                async with resp["Body"] as stream:
                    async for chunk in stream.iter_chunks(chunk_size):
                        out.write(chunk)
                        size += len(chunk)
            partial.replace(target)
        finally:
            partial.unlink(missing_ok=True)
        return size

    async def get_range(self, key: str, start: int, length: int) -> bytes:
        """Bytes `start` .. `start + length - 1` of an object (fewer at its end; `start` must be inside it)."""
        resp = await self._client.get_object(
            Bucket=self._bucket, Key=key, Range=f"bytes={start}-{start + length - 1}"
        )
        async with resp["Body"] as stream:
            data: bytes = await stream.read()
        return data

    async def size(self, key: str) -> int:
        """The object's size in bytes."""
        resp = await self._client.head_object(Bucket=self._bucket, Key=key)
        return int(resp["ContentLength"])

    async def delete_keys(self, keys: Iterable[str]) -> None:
        """Delete objects, 1,000 per request (missing keys are not an error)."""
        batch: list[dict[str, str]] = []
        for key in keys:
            batch.append({"Key": key})
            if len(batch) == 1000:
                await self._client.delete_objects(
                    Bucket=self._bucket, Delete={"Objects": batch, "Quiet": True}
                )
                batch = []
        if batch:
            await self._client.delete_objects(Bucket=self._bucket, Delete={"Objects": batch, "Quiet": True})

    async def list_keys(
        self, prefix: str, start_after: str | None = None, limit: int | None = None
    ) -> list[str]:
        """Keys under `prefix` in key order, after `start_after`; at most `limit` (one listing page per 1,000)."""
        keys: list[str] = []
        kwargs: dict[str, Any] = {"Bucket": self._bucket, "Prefix": prefix}
        if start_after:
            kwargs["StartAfter"] = start_after
        while limit is None or len(keys) < limit:
            if limit is not None:
                kwargs["MaxKeys"] = min(1000, limit - len(keys))
            resp = await self._client.list_objects_v2(**kwargs)
            keys.extend(o["Key"] for o in resp.get("Contents", []))
            if not resp.get("IsTruncated"):
                break
            kwargs["ContinuationToken"] = resp["NextContinuationToken"]
        return keys

    async def put_object(self, key: str, body: bytes, content_type: str = "application/json") -> None:
        await self._client.put_object(Bucket=self._bucket, Key=key, Body=body, ContentType=content_type)

    async def get_object(self, key: str) -> bytes | None:
        """The object's bytes, or None when no object has that key."""
        try:
            return await self.get_file(key)
        except self._client.exceptions.NoSuchKey:
            return None

    async def report_keys(self, crawl_id: str) -> list[str]:
        return await self.part_keys(crawl_id, "report")

    async def presign(self, key: str, expires_s: int = 900) -> str:
        url: str = await self._client.generate_presigned_url(
            "get_object", Params={"Bucket": self._bucket, "Key": key}, ExpiresIn=expires_s
        )
        return url
