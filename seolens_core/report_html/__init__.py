"""The self-contained `report.html` renderer (pure: dicts in, bytes out; no I/O, no network at view time)."""

from __future__ import annotations

from seolens_core.report_html._render import render_report_html, ttfb_histogram

__all__ = ["render_report_html", "ttfb_histogram"]
