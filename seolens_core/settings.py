"""Crawl settings: parsed once at the edge (CLI, API, config file) into one typed, validated object.

Every default is the product default from the crawler guide; components receive plain values from here.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from seolens_core.robots import DEFAULT_ROBOTS_SETTINGS, validate_settings

DEFAULT_USER_AGENT_TOKEN = "SEOLens"
MAX_SECRET_BYTES = 4000
"""The configured headers and cookie together (names and values, UTF-8): they are sealed with KMS, whose
plaintext limit is 4 KB, and sent with every request of the crawl."""
_TOKEN = re.compile(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+")
"""An HTTP field name (RFC 9110 section 5.1: a token)."""
_FIELD_VALUE = re.compile(r"[\t\x20-\x7e\x80-\U0010ffff]*")
"""A field value without control characters (CR, LF, NUL...): RFC 9110 section 5.5, tab allowed."""
REFUSED_HEADERS = frozenset(
    {
        "host",  # the fetcher sets it to the URL's host (a different one would misroute every request)
        "user-agent",  # `user_agent` is the crawl's identity, the robots.txt token matches it
        "content-length",
        "transfer-encoding",
        "connection",  # hop-by-hop (RFC 9110 section 7.6.1) and framing: the client's own
        "keep-alive",
        "proxy-connection",
        "proxy-authorization",
        "proxy-authenticate",
        "te",
        "trailer",
        "upgrade",
        "cookie",  # `cookie` is its own setting
        "accept-encoding",  # the fetcher decodes what it asks for, nothing else
    }
)


def check_headers(headers: dict[str, str], cookie: str | None) -> None:
    """Headers a crawl may send to the audited site: token names, no control characters, none the client
    owns (`REFUSED_HEADERS`), at most `MAX_SECRET_BYTES` with the cookie. ValueError names the header."""
    for name, value in headers.items():
        if not _TOKEN.fullmatch(name):
            raise ValueError(f"header name {name!r} is not an HTTP token")
        if name.lower() == "cookie":
            raise ValueError("header 'Cookie' cannot be set: give it as the cookie (--cookie)")
        if name.lower() in REFUSED_HEADERS:
            raise ValueError(f"header {name!r} cannot be set: the crawler sets it itself")
        if not _FIELD_VALUE.fullmatch(value) or value != value.strip():
            raise ValueError(f"header {name!r} has control characters or surrounding spaces in its value")
    if cookie is not None and (not _FIELD_VALUE.fullmatch(cookie) or not cookie.strip()):
        raise ValueError("cookie has control characters or is blank")
    size = sum(len(k.encode()) + len(v.encode()) for k, v in headers.items()) + len((cookie or "").encode())
    if size > MAX_SECRET_BYTES:
        raise ValueError(f"headers and cookie take {size} bytes, more than {MAX_SECRET_BYTES}")


class FetchSettings(BaseModel):
    """How pages are fetched: timeouts, size cap and identity."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    connect_timeout_s: float = Field(10.0, gt=0, le=60)
    read_timeout_s: float = Field(20.0, gt=0, le=120)
    total_timeout_s: float = Field(30.0, gt=0, le=300)
    max_body_bytes: int = Field(5 * 1024 * 1024, ge=1024, le=50 * 1024 * 1024)
    http2: bool = True
    max_redirect_hops: int = Field(10, ge=0, le=20)


class PolitenessSettings(BaseModel):
    """AIMD defaults from the guide (section 2); `aimd=False` is `--no-aimd`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    aimd: bool = True
    initial_delay_ms: int = Field(250, ge=0, le=60_000)
    initial_concurrency: int = Field(2, ge=1, le=64)
    max_concurrency: int = Field(8, ge=1, le=256)
    window: int = Field(50, ge=5, le=10_000)
    error_threshold: float = Field(0.08, gt=0, lt=1)
    latency_factor: float = Field(1.5, gt=1)
    healthy_p95_ms: float = Field(500.0, gt=0)
    max_delay_ms: int = Field(10_000, ge=100)
    recovery_step_ms: int = Field(25, ge=1)
    retry_after_cap_s: float = Field(3600.0, gt=0)
    max_crawl_delay_s: float = Field(30.0, gt=0)
    force_crawl_delay_cap: bool = False
    max_local_wait_s: float = Field(2.0, ge=0, le=30)
    backoff_factor: float = Field(2.0, gt=1, le=10)
    min_backoff_step_ms: int = Field(250, ge=0, le=10_000)
    baseline_alpha: float = Field(0.2, gt=0, le=1)
    block_base_s: float = Field(5.0, gt=0)
    block_cap_s: float = Field(600.0, gt=0)
    quiet_reset_s: float = Field(120.0, gt=0)
    incident_cooldown_s: float = Field(1.0, ge=0)


class CrawlSettings(BaseModel):
    """Everything one crawl needs; stored with the crawl so every worker applies the same rules."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    start_urls: tuple[str, ...] = Field(min_length=1, max_length=100)
    max_pages: int | None = Field(10_000, ge=1, le=10_000_000)
    max_depth: int = Field(10, ge=0, le=1000)
    max_seconds: float | None = Field(None, gt=0)
    user_agent: str = Field(DEFAULT_USER_AGENT_TOKEN, min_length=1, max_length=200)
    include_subdomains: bool = False
    allow_hosts: tuple[str, ...] = ()
    # Start hosts may resolve to private/loopback addresses (the CLI's local audits); the HTTP API turns it off.
    trust_start_hosts: bool = True
    max_query_params: int = Field(2, ge=0, le=100)
    ignore_sorting_facets: bool = True
    respect_nofollow: bool = True
    check_external_links: bool = True
    thin_content_words: int = Field(200, ge=0)
    progress_poll_s: int = Field(10, ge=1, le=300)
    # Breadth-first gate: URLs deeper than the shallowest pending depth + this slack wait (None: off).
    bfs_slack: int | None = Field(1, ge=0, le=100)
    robots_retry_base_s: float = Field(60.0, gt=0, le=3600)
    # A dead-lettered URL goes back to the frontier this many times (delay: retry_s, then x2 each time, at most
    # 15 min) before it is finished as `dead_letter` (see seolens_core/crawl/_dead_letters.py).
    dead_letter_redrives: int = Field(2, ge=0, le=10)
    dead_letter_retry_s: float = Field(60.0, ge=0, le=900)
    fetch: FetchSettings = FetchSettings()
    politeness: PolitenessSettings = PolitenessSettings()
    # Per-URL metadata (URL Frontier's string map) given to the start URLs; it travels in their frontier
    # messages and lands in their rows. Outlinks do not inherit it.
    start_metadata: dict[str, str] = Field(default_factory=dict, max_length=32)
    # Secrets: sent to the crawled site only, never logged or written to results.
    extra_headers: dict[str, SecretStr] = Field(default_factory=dict)
    cookie: SecretStr | None = None

    @field_validator("user_agent")
    @classmethod
    def _product_token(cls, value: str) -> str:
        token = value.split("/", 1)[0].strip()
        if not token or not all(c.isalnum() or c in "-_" for c in token):
            raise ValueError("user agent must start with a product token of letters, digits, '-' or '_'")
        if not _FIELD_VALUE.fullmatch(value):
            raise ValueError("user agent has control characters (it is sent as the User-Agent header)")
        return value

    @field_validator("start_urls")
    @classmethod
    def _http_only(cls, urls: tuple[str, ...]) -> tuple[str, ...]:
        for url in urls:
            if not url.lower().startswith(("http://", "https://")):
                raise ValueError(f"start URL must be http(s): {url!r}")
        return urls

    @model_validator(mode="after")
    def _consistent(self) -> CrawlSettings:
        check_headers(
            {k: v.get_secret_value() for k, v in self.extra_headers.items()},
            self.cookie.get_secret_value() if self.cookie is not None else None,
        )
        p = self.politeness
        if p.initial_concurrency > p.max_concurrency:
            raise ValueError("politeness.initial_concurrency must not exceed politeness.max_concurrency")
        if p.block_base_s > p.block_cap_s:
            raise ValueError("politeness.block_base_s must not exceed politeness.block_cap_s")
        # Fail at start, with the robots engine's own message, for robots settings it cannot enforce safely.
        validate_settings(
            replace(
                DEFAULT_ROBOTS_SETTINGS,
                max_crawl_delay_s=p.max_crawl_delay_s,
                force_crawl_delay_cap=p.force_crawl_delay_cap,
                retry_base_s=self.robots_retry_base_s,
            )
        )
        return self

    @property
    def product_token(self) -> str:
        """The robots.txt product token (`SEOLens` of `SEOLens/1.0 (+url)`)."""
        return self.user_agent.split("/", 1)[0].strip()

    @property
    def user_agent_header(self) -> str:
        if "/" in self.user_agent:
            return self.user_agent
        return f"{self.user_agent}/0.1 (+https://github.com/seolens/seolens)"

    def secret_headers(self) -> dict[str, str]:
        """Headers to send (cookie included), revealed only at the moment of the request."""
        headers = {k: v.get_secret_value() for k, v in self.extra_headers.items()}
        if self.cookie is not None:
            headers["Cookie"] = self.cookie.get_secret_value()
        return headers

    def to_storage(self) -> str:
        """JSON for the crawls table, without the secrets (`secrets_json`: sealed apart, see CrawlStore)."""
        data = self.model_dump(mode="json")
        data["extra_headers"], data["cookie"] = {}, None
        return json.dumps(data, separators=(",", ":"), sort_keys=True)

    def secrets_json(self) -> str | None:
        """The secrets alone, as JSON (None when there are none)."""
        if not self.extra_headers and self.cookie is None:
            return None
        headers = {k: v.get_secret_value() for k, v in self.extra_headers.items()}
        cookie = self.cookie.get_secret_value() if self.cookie else None
        return json.dumps({"extra_headers": headers, "cookie": cookie}, separators=(",", ":"))

    def without_secrets(self) -> CrawlSettings:
        return self.model_copy(update={"extra_headers": {}, "cookie": None})

    def with_secrets(self, secrets_json: str) -> CrawlSettings:
        """These settings with the secrets `secrets_json` returned (validated as any settings are)."""
        data = json.loads(secrets_json)
        return CrawlSettings.model_validate(
            {**self.model_dump(), "extra_headers": data["extra_headers"], "cookie": data["cookie"]}
        )

    def public_view(self) -> dict[str, Any]:
        """Settings as shown in reports and API answers: secrets masked."""
        data = self.model_dump(mode="json")
        data["extra_headers"] = dict.fromkeys(self.extra_headers, "***")
        data["cookie"] = "***" if self.cookie else None
        return data

    @classmethod
    def from_storage(cls, raw: str) -> CrawlSettings:
        return cls.model_validate_json(raw)
