"""SecretSealer: a crawl's secrets (`--cookie`, `--header`) encrypted with KMS, bound to the crawl's id.

The crawls table is read by every function and the API; the secrets in it are a KMS ciphertext that only the
roles allowed `kms:Decrypt` on the key (the fetch worker and the seeder) can open, and only for the crawl
they were sealed for (the crawl id is the encryption context, so a ciphertext copied to another crawl does
not open). Plain symmetric Encrypt/Decrypt: a cookie and a few headers fit KMS's 4 KB plaintext limit.
"""

from __future__ import annotations

from typing import Any

MAX_SECRET_BYTES = 4096
"""KMS Encrypt's plaintext limit."""


class SecretSealer:
    """Seals and opens secrets with one KMS key; the client is aiobotocore's (or anything with its calls)."""

    def __init__(self, client: Any, key_id: str) -> None:
        self._client = client
        self._key_id = key_id

    async def seal(self, crawl_id: str, plaintext: bytes) -> bytes:
        if len(plaintext) > MAX_SECRET_BYTES:
            raise ValueError(f"secrets take {len(plaintext)} bytes, more than {MAX_SECRET_BYTES}")
        resp = await self._client.encrypt(
            KeyId=self._key_id, Plaintext=plaintext, EncryptionContext={"crawl_id": crawl_id}
        )
        return bytes(resp["CiphertextBlob"])

    async def open(self, crawl_id: str, sealed: bytes) -> bytes:
        resp = await self._client.decrypt(
            KeyId=self._key_id, CiphertextBlob=sealed, EncryptionContext={"crawl_id": crawl_id}
        )
        return bytes(resp["Plaintext"])
