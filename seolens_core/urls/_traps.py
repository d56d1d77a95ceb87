"""Spider-trap guards: cheap, pure checks on a normalized URL that cut off URL spaces which grow forever."""

from __future__ import annotations

import enum
import re
import time
from collections import Counter
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import unquote

from ._model import NormalizedURL

DEFAULT_PAGE_PARAMS: frozenset[str] = frozenset(
    {"page", "p", "pg", "paged", "pagenum", "page_num", "page_number", "pagenumber", "pageno"}
)
DEFAULT_YEAR_PARAMS: frozenset[str] = frozenset({"year", "yr", "y"})

_DATE_VALUE = re.compile(r"(\d{4})[-/.](\d{1,2})(?:[-/.]\d{1,2})?").fullmatch
_DATE_SEGMENT = re.compile(r"(\d{4})-(\d{1,2})(?:-\d{1,2})?").fullmatch
_MONTH = re.compile(r"0?[1-9]|1[0-2]").fullmatch
_YEAR = re.compile(r"\d{4}").fullmatch
_NUMBER = re.compile(r"\d{1,18}").fullmatch


class TrapReason(enum.StrEnum):
    """Which guard fired; `TrapVerdict.code` maps it to the audit finding code."""

    TOO_MANY_QUERY_PARAMS = "too_many_query_params"
    PATH_TOO_DEEP = "path_too_deep"
    REPEATED_SEGMENTS = "repeated_segments"
    PAGINATION = "pagination"
    CALENDAR = "calendar"


FINDING_CODES: dict[TrapReason, str] = {
    TrapReason.TOO_MANY_QUERY_PARAMS: "ALERT_TRAP_TOO_MANY_PARAMS",
    TrapReason.PATH_TOO_DEEP: "ALERT_TRAP_PATH_TOO_DEEP",
    TrapReason.REPEATED_SEGMENTS: "ALERT_TRAP_REPEATED_SEGMENTS",
    TrapReason.PAGINATION: "ALERT_TRAP_PAGINATION",
    TrapReason.CALENDAR: "ALERT_TRAP_CALENDAR",
}


@dataclass(frozen=True, slots=True)
class TrapVerdict:
    """A URL pruned as a likely trap: recorded with a finding, never enqueued."""

    reason: TrapReason
    detail: str

    @property
    def code(self) -> str:
        """The stable finding code, e.g. ALERT_TRAP_CALENDAR."""
        return FINDING_CODES[self.reason]


@dataclass(frozen=True, slots=True)
class TrapConfig:
    """Guard thresholds. `None` turns a guard off; the calendar guard is off until `reference_year` is set."""

    max_query_params: int | None = 2  # --max-query-params; more parameters is a trap, 0 = no query allowed
    max_path_segments: int | None = 32  # deeper paths are a trap
    sequence_repeats: int = 3  # a segment sequence this many times back to back is a trap (/a/b/a/b/a/b)
    max_segment_occurrences: int | None = 4  # one segment appearing more often than this anywhere is a trap
    max_page: int | None = 1000  # pagination numbers above this are a trap (?page=1001, /page/1001/)
    page_params: frozenset[str] = DEFAULT_PAGE_PARAMS
    reference_year: int | None = None  # the crawl's current year; None disables the calendar guard
    calendar_years_ahead: int = 2  # dates later than reference_year + this are a trap
    calendar_years_back: int = 30  # dates earlier than reference_year - this are a trap
    year_params: frozenset[str] = DEFAULT_YEAR_PARAMS  # parameters whose bare 4-digit value is a year

    def __post_init__(self) -> None:
        if self.sequence_repeats < 2:
            raise ValueError(f"sequence_repeats must be at least 2, got {self.sequence_repeats}")
        for name in ("max_query_params", "max_path_segments", "max_segment_occurrences", "max_page"):
            value = getattr(self, name)
            if value is not None and value < 0:
                raise ValueError(f"{name} must be >= 0 or None, got {value}")
        if self.calendar_years_ahead < 0 or self.calendar_years_back < 0:
            raise ValueError("calendar year bounds must be >= 0")
        object.__setattr__(self, "page_params", frozenset(p.lower() for p in self.page_params))
        object.__setattr__(self, "year_params", frozenset(p.lower() for p in self.year_params))

    @classmethod
    def at(cls, now: float, **overrides: Any) -> TrapConfig:
        """Defaults with the calendar guard anchored on the UTC year of `now` (epoch seconds)."""
        return replace(cls(**overrides), reference_year=time.gmtime(now).tm_year)


def check_traps(url: NormalizedURL, config: TrapConfig) -> TrapVerdict | None:
    """The first guard `url` trips, cheapest first, or None when it looks like a finite URL space."""
    params = [param.partition("=") for param in url.query.split("&")] if url.query else []
    if config.max_query_params is not None and len(params) > config.max_query_params:
        return TrapVerdict(
            TrapReason.TOO_MANY_QUERY_PARAMS,
            f"{len(params)} query parameters, more than the limit of {config.max_query_params}",
        )
    segments = [segment for segment in url.path.split("/") if segment]
    return (
        _check_path_shape(segments, config)
        or _check_pagination(segments, params, config)
        or _check_calendar(segments, params, config)
    )


def _check_path_shape(segments: list[str], config: TrapConfig) -> TrapVerdict | None:
    count = len(segments)
    if config.max_path_segments is not None and count > config.max_path_segments:
        return TrapVerdict(
            TrapReason.PATH_TOO_DEEP, f"{count} path segments, over the limit of {config.max_path_segments}"
        )
    if count < 2 or len(set(segments)) == count:
        return None
    if config.max_segment_occurrences is not None:
        segment, occurrences = Counter(segments).most_common(1)[0]
        if occurrences > config.max_segment_occurrences:
            return TrapVerdict(
                TrapReason.REPEATED_SEGMENTS,
                f"segment {segment[:40]!r} occurs {occurrences} times "
                f"(limit {config.max_segment_occurrences})",
            )
    repeats = config.sequence_repeats
    for period in range(1, count // repeats + 1):
        # `run` counts consecutive positions where the path equals itself shifted by `period`;
        # period * (repeats - 1) of them: a sequence of `period` segments occurs `repeats` times in a row.
        run = 0
        for index in range(count - period):
            if segments[index] == segments[index + period]:
                run += 1
                if run >= period * (repeats - 1):
                    start = index + 1 - run
                    sequence = "/".join(segments[start : start + period])
                    return TrapVerdict(
                        TrapReason.REPEATED_SEGMENTS,
                        f"segment sequence {sequence[:80]!r} repeats {repeats} times in a row",
                    )
            else:
                run = 0
    return None


def _check_pagination(
    segments: list[str], params: list[tuple[str, str, str]], config: TrapConfig
) -> TrapVerdict | None:
    if config.max_page is None:
        return None
    limit = config.max_page
    for key, _, value in params:
        if key.lower() in config.page_params and _is_over(value, limit):
            return TrapVerdict(TrapReason.PAGINATION, f"page parameter {key}={value[:20]} > {limit}")
    for index in range(len(segments) - 1):
        if segments[index].lower() == "page" and _is_over(segments[index + 1], limit):
            return TrapVerdict(TrapReason.PAGINATION, f"/page/{segments[index + 1][:20]}/ > {limit}")
    return None


def _is_over(value: str, limit: int) -> bool:
    """True when `value` is a decimal number above `limit`; numbers too long to parse count as above."""
    if not value.isascii() or not value.isdigit():
        return False
    return not _NUMBER(value) or int(value) > limit


def _check_calendar(
    segments: list[str], params: list[tuple[str, str, str]], config: TrapConfig
) -> TrapVerdict | None:
    if config.reference_year is None:
        return None
    earliest = config.reference_year - config.calendar_years_back
    latest = config.reference_year + config.calendar_years_ahead
    years: list[tuple[int, str]] = []
    for index, segment in enumerate(segments):
        match = _DATE_SEGMENT(segment)
        if match and _MONTH(match.group(2)):
            years.append((int(match.group(1)), f"/{segment}/"))
        elif _YEAR(segment) and index + 1 < len(segments) and _MONTH(segments[index + 1]):
            years.append((int(segment), f"/{segment}/{segments[index + 1]}/"))
    for key, _, raw_value in params:
        value = unquote(raw_value) if "%" in raw_value else raw_value
        match = _DATE_VALUE(value)
        if match and _MONTH(match.group(2)):
            years.append((int(match.group(1)), f"{key}={value}"))
        elif _YEAR(value) and key.lower() in config.year_params:
            years.append((int(value), f"{key}={value}"))
    for year, where in years:
        if not earliest <= year <= latest:
            return TrapVerdict(
                TrapReason.CALENDAR,
                f"date {where[:60]} outside the years {earliest}-{latest} around {config.reference_year}",
            )
    return None
