"""AwsClients: the configuration every AWS call of a container goes out with."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from infra.local.moto_server import EmbeddedMoto
from seolens_core.adapters._aws import USER_AGENT, AwsClients
from seolens_core.adapters._metering import CallMeter


def test_every_call_names_seolens_in_its_user_agent(
    moto_server: EmbeddedMoto, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto_server.endpoint_url)
    sent: list[str] = []

    def capture(request: Any, **_: Any) -> None:
        sent.append(
            request.headers["User-Agent"].decode()
            if isinstance(request.headers["User-Agent"], bytes)
            else request.headers["User-Agent"]
        )

    async def calls() -> None:
        clients = await AwsClients(CallMeter()).open()
        try:
            for client in (clients.dynamodb, clients.sqs):
                client.meta.events.register_last("before-send", capture)
            await clients.dynamodb.list_tables()
            await clients.sqs.list_queues()
        finally:
            await clients.close()

    asyncio.run(calls())
    assert USER_AGENT.startswith("seolens/")
    assert len(sent) == 2
    assert all(ua.split(" ")[0] == USER_AGENT for ua in sent), sent


_OPEN_AND_COUNT_MODEL_READS = """
import asyncio, os, sys
os.environ.update(AWS_ACCESS_KEY_ID="x", AWS_SECRET_ACCESS_KEY="x", AWS_DEFAULT_REGION="us-east-1")
from seolens_core.adapters import _aws
if sys.argv[1] == "preloaded":
    import infra.local.warm_models  # what the local runtime's fork server imports
reads = []
real = _aws._MODELS.file_loader.load_file
_aws._MODELS.file_loader.load_file = lambda path: reads.append(path) or real(path)
async def main():
    clients = await _aws.AwsClients().open()
    await clients.close()
asyncio.run(main())
print(len(reads))
"""


@pytest.mark.parametrize(("mode", "reads_expected"), [("cold", True), ("preloaded", False)])
def test_an_environment_forked_after_the_preload_opens_its_clients_without_reading_a_model(
    mode: str, reads_expected: bool
) -> None:
    """In a fresh interpreter: opening the clients reads model files, unless the preload ran first."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-c", _OPEN_AND_COUNT_MODEL_READS, mode],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
        timeout=120,
    )
    reads = int(out.stdout.split()[-1])
    assert (reads > 0) is reads_expected, reads
