"""The crawl service layer: what each Lambda does, written against ports and adapters, not against Lambda."""

from seolens_core.crawl._commit import BatchCommit, Contribution
from seolens_core.crawl._dead_letters import DeadLetterDrain, DeadLetterServices
from seolens_core.crawl._links import CrawlScope, LinkPlan, RawHref, plan_links, plan_redirect
from seolens_core.crawl._ports import PacingPort, RobotsAnswer, RobotsPort, Ticket, Wait
from seolens_core.crawl._worker import BatchRun, PageWorker, WorkerServices

__all__ = [
    "BatchCommit",
    "BatchRun",
    "Contribution",
    "CrawlScope",
    "DeadLetterDrain",
    "DeadLetterServices",
    "LinkPlan",
    "PacingPort",
    "PageWorker",
    "RawHref",
    "RobotsAnswer",
    "RobotsPort",
    "Ticket",
    "Wait",
    "WorkerServices",
    "plan_links",
    "plan_redirect",
]
