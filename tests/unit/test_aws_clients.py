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
