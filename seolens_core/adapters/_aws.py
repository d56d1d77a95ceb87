"""Resource names from the environment and aiobotocore clients built once per container.

Every client honours AWS_ENDPOINT_URL (botocore reads it), so LocalStack or a shared moto server need no code.
"""

from __future__ import annotations

import os
from contextlib import AsyncExitStack
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any

import botocore.session
from aiobotocore.config import AioConfig
from aiobotocore.session import get_session
from botocore.loaders import Loader

from seolens_core.adapters._metering import GLOBAL_METER, CallMeter


class ConfigurationError(RuntimeError):
    """A required resource name is missing from the function's environment."""


@dataclass(frozen=True, slots=True)
class Resources:
    """The names of the resources template.yaml created, as each function receives them."""

    crawls_table: str
    urls_table: str
    hosts_table: str
    frontier_queue_url: str
    dead_letter_queue_url: str
    results_bucket: str
    state_machine_arn: str | None = None
    secrets_key_id: str | None = None
    """The KMS key sealing crawls' secrets (`SecretSealer`)."""

    @classmethod
    def from_env(cls, env: os._Environ[str] | dict[str, str] | None = None) -> Resources:
        source = os.environ if env is None else env
        names = {
            "crawls_table": "CRAWLS_TABLE",
            "urls_table": "URLS_TABLE",
            "hosts_table": "HOSTS_TABLE",
            "frontier_queue_url": "FRONTIER_QUEUE_URL",
            "dead_letter_queue_url": "DEAD_LETTER_QUEUE_URL",
            "results_bucket": "RESULTS_BUCKET",
        }
        missing = [var for var in names.values() if not source.get(var)]
        if missing:
            raise ConfigurationError(f"missing environment variables: {', '.join(missing)}")
        values = {field: source[var] for field, var in names.items()}
        return cls(
            **values,
            state_machine_arn=source.get("STATE_MACHINE_ARN") or None,
            secrets_key_id=source.get("SECRETS_KEY_ID") or None,
        )


def _user_agent() -> str:
    """The User-Agent of every AWS call (a Lambda package is source, without the distribution's metadata)."""
    try:
        ours = version("seolens")
    except PackageNotFoundError:
        ours = "source"
    return f"seolens/{ours}"


USER_AGENT = _user_agent()

SERVICES = ("dynamodb", "sqs", "s3", "stepfunctions", "kms")

_MODELS = Loader()
"""Service models, parsed once per process: in the local runtime every emulated Lambda environment is a
thread of one process, and each cold start parsing its own copy (~0.1 s of CPU per environment, under the
GIL) stalled the other environments' paced requests. In Lambda (one environment per process) it is the
same as botocore's default loader."""


def preload_models() -> None:
    """Parse what opening the `SERVICES`' clients reads (models, endpoint rules, partitions) into the shared
    loader now. The local runtime's fork server calls it: every execution environment it forks inherits them
    parsed, where each parsed its own at its first invocation (~0.1 s of CPU)."""
    session = botocore.session.get_session()
    session.register_component("data_loader", _MODELS)
    for name in SERVICES:  # explicit credentials: no provider chain (no metadata service) is asked
        session.create_client(
            name, region_name="us-east-1", aws_access_key_id="preload", aws_secret_access_key="preload"
        )


class AwsClients:
    """Open aiobotocore clients (dynamodb, sqs, s3, stepfunctions, kms) bound to one event loop."""

    def __init__(self, meter: CallMeter = GLOBAL_METER) -> None:
        self._stack = AsyncExitStack()
        self._meter = meter
        self.dynamodb: Any = None
        self.sqs: Any = None
        self.s3: Any = None
        self.stepfunctions: Any = None
        self.kms: Any = None

    async def open(self) -> AwsClients:
        session = get_session()
        session.register_component("data_loader", _MODELS)
        config = AioConfig(
            max_pool_connections=64,
            retries={"max_attempts": 8, "mode": "adaptive"},
            connect_timeout=5,
            read_timeout=30,
            # Our requests are built by typed code, and the service validates them again: botocore's walk
            # over every parameter was ~2 ms of CPU a crawled page (a sixth of the worker's own).
            parameter_validation=False,
            # A fixed User-Agent: botocore rebuilds its default one (sanitising every component) twice per
            # request, ~0.15 ms of CPU a call; ours also names the crawler in CloudTrail.
            user_agent=USER_AGENT,
        )
        region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or "us-east-1"
        for name in SERVICES:
            client = await self._stack.enter_async_context(
                session.create_client(name, region_name=region, config=config)
            )
            setattr(self, name, self._meter.attach(client))
        return self

    async def close(self) -> None:
        await self._stack.aclose()
