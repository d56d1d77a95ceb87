"""Crawl control: the service behind the HTTP API and the scheduled audits."""

from seolens_core.adapters.crawls import CrawlNotFound, StatusConflict
from seolens_core.control._audits import AuditConfig, start_audits
from seolens_core.control._compare import compare_crawls
from seolens_core.control._service import (
    CANCELLABLE,
    PAUSABLE,
    REPORT_LINK_EXPIRY_S,
    RESUMABLE,
    CrawlControl,
    ReportLink,
    ReportNotReady,
    progress_view,
    site_of,
)
from seolens_core.control._starter import (
    ExecutionStarter,
    ExecutionStartFailed,
    FakeStarter,
    StepFunctionsStarter,
)
from seolens_core.control._wiring import STARTER_KEY, control_of

__all__ = [
    "CANCELLABLE",
    "PAUSABLE",
    "REPORT_LINK_EXPIRY_S",
    "RESUMABLE",
    "STARTER_KEY",
    "AuditConfig",
    "CrawlControl",
    "CrawlNotFound",
    "ExecutionStartFailed",
    "ExecutionStarter",
    "FakeStarter",
    "ReportLink",
    "ReportNotReady",
    "StatusConflict",
    "StepFunctionsStarter",
    "compare_crawls",
    "control_of",
    "progress_view",
    "site_of",
    "start_audits",
]
