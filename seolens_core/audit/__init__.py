"""SEO audit: the finding catalogue, per-page and site-wide rules, and WAF challenge detection (pure)."""

from __future__ import annotations

from seolens_core.audit._catalogue import (
    CATALOGUE,
    Catalogue,
    Category,
    Finding,
    FindingCode,
    FindingConflictError,
    FindingDef,
    Severity,
    UnknownFindingError,
    make_finding,
)
from seolens_core.audit._hreflang import PAIR_CODES as HREFLANG_PAIR_CODES
from seolens_core.audit._hreflang import hreflang_problem, pair_lang
from seolens_core.audit._indexability import INDEXABLE, NON_INDEXABLE, expired, indexability
from seolens_core.audit._page import FetchFacts, audit_page
from seolens_core.audit._settings import WAF_BLOCK_STATUSES, AuditSettings
from seolens_core.audit._site import (
    DUPLICATE_KINDS,
    UNATTEMPTED_OUTCOMES,
    LinkRow,
    PageRow,
    SiteAudit,
    duplicate_findings,
    duplicate_groups,
    duplicate_values,
    site_findings,
)
from seolens_core.audit._sitemap_quality import SitemapQuality, lastmod_epoch, sitemap_quality
from seolens_core.audit._transport import hsts_ok, redirect_type
from seolens_core.audit._waf import WAF_SIGNATURES, SignatureKind, WafMatch, WafSignature, detect_waf

__all__ = [
    "CATALOGUE",
    "DUPLICATE_KINDS",
    "HREFLANG_PAIR_CODES",
    "INDEXABLE",
    "NON_INDEXABLE",
    "UNATTEMPTED_OUTCOMES",
    "WAF_BLOCK_STATUSES",
    "WAF_SIGNATURES",
    "AuditSettings",
    "Catalogue",
    "Category",
    "FetchFacts",
    "Finding",
    "FindingCode",
    "FindingConflictError",
    "FindingDef",
    "LinkRow",
    "PageRow",
    "Severity",
    "SignatureKind",
    "SiteAudit",
    "SitemapQuality",
    "UnknownFindingError",
    "WafMatch",
    "WafSignature",
    "audit_page",
    "detect_waf",
    "duplicate_findings",
    "duplicate_groups",
    "duplicate_values",
    "expired",
    "hreflang_problem",
    "hsts_ok",
    "indexability",
    "lastmod_epoch",
    "make_finding",
    "pair_lang",
    "redirect_type",
    "site_findings",
    "sitemap_quality",
]
