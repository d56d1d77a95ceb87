"""Scheduled audits: start one crawl per configured site; the previous crawl of each site is named in the
answer so the report step can compare the two (see compare_crawls)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from seolens_core.api_models import ApiDefaults
from seolens_core.control._service import CrawlControl
from seolens_core.settings import CrawlSettings


@dataclass(frozen=True, slots=True)
class AuditConfig:
    sites: tuple[str, ...]
    defaults: ApiDefaults
    owner: str | None = None
    """SCHEDULED_AUDIT_OWNER: the API caller who lists and controls the scheduled audits (None: nobody)."""

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> AuditConfig:
        """SCHEDULED_SITES: the comma-separated ScheduledSites parameter; blanks and repeats dropped."""
        seen: dict[str, None] = {}
        for raw in env.get("SCHEDULED_SITES", "").split(","):
            if raw.strip():
                seen.setdefault(raw.strip(), None)
        return cls(tuple(seen), ApiDefaults.from_env(dict(env)), env.get("SCHEDULED_AUDIT_OWNER") or None)


async def start_audits(control: CrawlControl, config: AuditConfig) -> dict[str, Any]:
    """Start every site's crawl; a bad site or a refused start is reported and does not stop the others."""
    started: list[dict[str, Any]] = []
    failed: list[dict[str, str]] = []
    d = config.defaults
    for site in config.sites:
        try:
            settings = CrawlSettings.model_validate(
                {
                    "start_urls": (site,),
                    "max_pages": d.max_pages,
                    "max_depth": d.max_depth,
                    "user_agent": d.user_agent,
                    "trust_start_hosts": False,  # as through the API: no private targets by configuration
                }
            )
        except ValidationError as exc:
            failed.append({"site": site, "error": "; ".join(e["msg"] for e in exc.errors())})
            continue
        try:
            record = await control.start(settings, owner=config.owner)
        except Exception as exc:  # one site's failure must not stop the others
            failed.append({"site": site, "error": f"{type(exc).__name__}: {exc}"})
            continue
        previous = await control.crawls.previous_of_site(record.site, record.created_at)
        started.append(
            {
                "site": record.site,
                "start_url": site,
                "crawl_id": record.crawl_id,
                "previous_crawl_id": previous.crawl_id if previous else None,
            }
        )
    return {"started": started, "failed": failed}
