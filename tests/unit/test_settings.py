"""Configuration that cannot be enforced fails when the crawl is configured, with a message naming the field."""

from __future__ import annotations

import re
from typing import Any

import pytest
from pydantic import ValidationError

from seolens_core.settings import CrawlSettings

BASE: dict[str, Any] = {"start_urls": ["https://example.com/"]}


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"start_urls": ["ftp://example.com/"]}, "start URL must be http(s)"),
        ({"user_agent": "bad agent!"}, "product token"),
        ({"politeness": {"initial_concurrency": 9, "max_concurrency": 8}}, "initial_concurrency"),
        ({"politeness": {"block_base_s": 700, "block_cap_s": 600}}, "block_base_s"),
        ({"politeness": {"max_crawl_delay_s": 0}}, "max_crawl_delay_s"),
        ({"robots_retry_base_s": 0}, "robots_retry_base_s"),
        ({"max_pages": 0}, "max_pages"),
        ({"unknown_option": 1}, "unknown_option"),
    ],
)
def test_unenforceable_settings_fail_fast(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(message)):
        CrawlSettings.model_validate({**BASE, **changes})


def test_secrets_are_masked_in_the_public_view_and_stored_apart() -> None:
    settings = CrawlSettings.model_validate(
        {**BASE, "cookie": "sid=s3cr3t", "extra_headers": {"X-Token": "t0k"}}
    )
    public = str(settings.public_view())
    assert "s3cr3t" not in public and "t0k" not in public
    stored = settings.to_storage()
    assert "s3cr3t" not in stored and "t0k" not in stored  # sealed apart (CrawlStore), never in the settings
    restored = CrawlSettings.from_storage(stored)
    assert restored.secret_headers() == {}
    secrets = settings.secrets_json()
    assert secrets is not None
    assert restored.with_secrets(secrets).secret_headers() == {"X-Token": "t0k", "Cookie": "sid=s3cr3t"}
    assert restored.with_secrets(secrets) == settings
    assert CrawlSettings.model_validate(BASE).secrets_json() is None
