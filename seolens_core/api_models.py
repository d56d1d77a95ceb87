"""Parser models of the HTTP API: what a request may contain and what each answer looks like.

Requests are strict (`extra="forbid"`, no type coercion), so a typo or a wrong type is a 422 that names the
field, never a silently ignored option. `allow_hosts` is deliberately absent: through the API a crawl may only
target public hosts (SSRF), so loopback, private, link-local and reserved address literals and `localhost`
names are refused here, before anything is written.
"""

from __future__ import annotations

import ipaddress
from typing import Annotated, Any
from urllib.parse import urlsplit

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    StrictFloat,
    StrictInt,
    StrictStr,
    StringConstraints,
    field_validator,
    model_validator,
)

from seolens_core.fetch._guard import METADATA_ADDRESSES, is_public
from seolens_core.settings import CrawlSettings, check_headers
from seolens_core.urls import NormalizedURL, normalize

API_MAX_START_URLS = 100
_LOCAL_SUFFIXES = (".localhost", ".local", ".internal", ".localdomain")


class ApiDefaults(BaseModel):
    """Deployment defaults (template parameters MaxPages, MaxDepth, UserAgent), parsed once from the env."""

    model_config = ConfigDict(frozen=True)

    max_pages: int = 10_000
    max_depth: int = 10
    user_agent: str = "SEOLens"

    @classmethod
    def from_env(cls, env: dict[str, str]) -> ApiDefaults:
        values: dict[str, Any] = {}
        for field, var in (
            ("max_pages", "MAX_PAGES"),
            ("max_depth", "MAX_DEPTH"),
            ("user_agent", "USER_AGENT"),
        ):
            if env.get(var):
                values[field] = env[var]
        return cls.model_validate(values)


def check_public_http_url(url: str) -> str:
    """An absolute http(s) URL whose host, as the crawler itself reads it (`normalize`: the WHATWG IPv4
    parser, percent-decoding, IDNA mapping), is a public name or a public address literal: `0x7f.1`,
    `%31%32%37.0.0.1`, full-width digits and `169.254.169.254.` are the loopback and metadata addresses."""
    if len(url) > 2048:
        raise ValueError("start URL longer than 2048 characters")
    try:
        parts = urlsplit(url)
        host = parts.hostname
        parts.port  # noqa: B018 (raises on an invalid port)
    except ValueError as exc:
        raise ValueError(f"start URL is not a valid URL: {url!r} ({exc})") from None
    if parts.scheme.lower() not in ("http", "https"):
        raise ValueError(f"start URL must be http(s): {url!r}")
    if not host:
        raise ValueError(f"start URL has no host: {url!r}")
    if parts.username is not None or parts.password is not None:
        raise ValueError(f"start URL must not carry credentials: {url!r}")
    normalized = normalize(url)
    if not isinstance(normalized, NormalizedURL):
        raise ValueError(f"start URL cannot be crawled: {url!r} ({normalized.reason.value})")
    host = normalized.host.strip("[]")
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        name = host.rstrip(".")
        if name == "localhost" or name.endswith(_LOCAL_SUFFIXES) or "." not in name:
            raise ValueError(f"start URL host is not a public host name: {host!r}") from None
        return url
    if not is_public(address) or address in METADATA_ADDRESSES:
        raise ValueError(f"start URL host is not a public address: {host!r}")
    return url


class CrawlOptions(BaseModel):
    """Optional crawl behaviour; politeness and fetch limits stay at the product defaults through the API."""

    model_config = ConfigDict(extra="forbid")

    max_seconds: StrictInt | StrictFloat | None = Field(None, gt=0, le=7 * 24 * 3600)
    max_query_params: StrictInt = Field(2, ge=0, le=100)
    ignore_sorting_facets: StrictBool = True
    respect_nofollow: StrictBool = True
    check_external_links: StrictBool = True
    thin_content_words: StrictInt = Field(200, ge=0, le=100_000)
    extra_headers: dict[StrictStr, StrictStr] = Field(default_factory=dict, max_length=20)
    cookie: StrictStr | None = Field(None, max_length=8192)
    metadata: dict[StrictStr, Annotated[str, StringConstraints(strict=True, max_length=1024)]] = Field(
        default_factory=dict, max_length=32
    )

    @model_validator(mode="after")
    def _sendable_headers(self) -> CrawlOptions:
        check_headers(self.extra_headers, self.cookie)  # 422 here, before anything is written
        return self


class StartCrawlRequest(BaseModel):
    """Body of `POST /crawls`."""

    model_config = ConfigDict(extra="forbid")

    start_urls: list[StrictStr] = Field(min_length=1, max_length=API_MAX_START_URLS)
    max_pages: StrictInt | None = Field(
        None, ge=1, le=10_000_000, description="Page budget; deployment default"
    )
    max_depth: StrictInt | None = Field(
        None, ge=0, le=1000, description="Link depth limit; deployment default"
    )
    include_subdomains: StrictBool = False
    user_agent: StrictStr | None = Field(None, min_length=1, max_length=200)
    options: CrawlOptions = Field(default_factory=lambda: CrawlOptions.model_validate({}))

    @model_validator(mode="before")
    @classmethod
    def _no_allow_hosts(cls, data: Any) -> Any:
        if isinstance(data, dict) and "allow_hosts" in data:
            raise ValueError(
                "allow_hosts is not accepted through the API: crawls may only target public hosts"
            )
        return data

    @field_validator("start_urls")
    @classmethod
    def _public_http(cls, urls: list[str]) -> list[str]:
        return [check_public_http_url(u) for u in urls]

    def to_settings(self, defaults: ApiDefaults) -> CrawlSettings:
        o = self.options
        return CrawlSettings.model_validate(
            {
                "start_urls": tuple(self.start_urls),
                "max_pages": self.max_pages if self.max_pages is not None else defaults.max_pages,
                "max_depth": self.max_depth if self.max_depth is not None else defaults.max_depth,
                "include_subdomains": self.include_subdomains,
                "user_agent": self.user_agent or defaults.user_agent,
                "max_seconds": o.max_seconds,
                "max_query_params": o.max_query_params,
                "ignore_sorting_facets": o.ignore_sorting_facets,
                "respect_nofollow": o.respect_nofollow,
                "check_external_links": o.check_external_links,
                "thin_content_words": o.thin_content_words,
                "extra_headers": o.extra_headers,
                "cookie": o.cookie,
                "start_metadata": o.metadata,
                "trust_start_hosts": False,
            }
        )


class CrawlStarted(BaseModel):
    crawl_id: str
    status: str
    site: str
    status_url: str


class Progress(BaseModel):
    fetched: int
    max_pages: int | None
    pages_fraction: float | None
    elapsed_s: float
    max_seconds: float | None


class FrontierState(BaseModel):
    """The operator switch that pauses every crawl at once."""

    paused: bool


class CrawlSummary(BaseModel):
    crawl_id: str
    status: str
    site: str
    created_at: str
    finished_at: str | None
    counters: dict[str, int]


class CrawlView(CrawlSummary):
    """`GET /crawls/{id}`: settings with secrets masked, counters, progress, cost (null until metered)."""

    error: str | None
    settings: dict[str, Any]
    progress: Progress
    cost: dict[str, Any] | None = None
    frontier_paused: bool


class CrawlList(BaseModel):
    """The caller's own crawls, newest first; `next_cursor` asks for the next page (null: no more)."""

    crawls: list[CrawlSummary]
    next_cursor: str | None = None


class ReportFile(BaseModel):
    name: str
    url: str


class ReportLinks(BaseModel):
    crawl_id: str
    status: str
    expires_in_s: int
    files: list[ReportFile]


class ErrorBody(BaseModel):
    error: str
    message: str
    details: list[dict[str, Any]] | None = None
