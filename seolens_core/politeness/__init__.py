"""Per-host politeness: the AIMD controller, Retry-After, pauses, and slot reservation with leases.

Pure functions over an immutable `HostPoliteness`; stores (in memory, DynamoDB) only load, apply, save.
"""

from __future__ import annotations

from ._coalesce import RELEASE_WINDOW_S, RESERVE_GATHER_S, BatchHostPacing, CoalescingPacing
from ._controller import (
    DEFAULT_SETTINGS,
    backoff,
    close_window,
    judge,
    observe,
    p95,
    react,
    recover,
    set_floor,
)
from ._errors import CorruptState, PacingConflict, PacingContention, PolitenessError
from ._memory import InMemoryHostPacing
from ._observation import ERROR_STATUSES, RATE_LIMIT_STATUSES, Observation, parse_retry_after
from ._port import HostPacing, acquire
from ._reservation import (
    SAME_SLOT_S,
    UNSPACED_SLACK_S,
    DeferReason,
    Deferred,
    Granted,
    Reservation,
    SlotRequest,
    release,
    release_group,
    reserve,
    reserve_group,
    slide,
    spacing_s,
    start_slack_s,
)
from ._settings import AimdSettings
from ._state import BlockReason, HostPoliteness, Verdict, Window, WindowReport

__all__ = [
    "DEFAULT_SETTINGS",
    "ERROR_STATUSES",
    "RATE_LIMIT_STATUSES",
    "RELEASE_WINDOW_S",
    "RESERVE_GATHER_S",
    "SAME_SLOT_S",
    "UNSPACED_SLACK_S",
    "AimdSettings",
    "BatchHostPacing",
    "BlockReason",
    "CoalescingPacing",
    "CorruptState",
    "DeferReason",
    "Deferred",
    "Granted",
    "HostPacing",
    "HostPoliteness",
    "InMemoryHostPacing",
    "Observation",
    "PacingConflict",
    "PacingContention",
    "PolitenessError",
    "Reservation",
    "SlotRequest",
    "Verdict",
    "Window",
    "WindowReport",
    "acquire",
    "backoff",
    "close_window",
    "judge",
    "observe",
    "p95",
    "parse_retry_after",
    "react",
    "recover",
    "release",
    "release_group",
    "reserve",
    "reserve_group",
    "set_floor",
    "slide",
    "spacing_s",
    "start_slack_s",
]
