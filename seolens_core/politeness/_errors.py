"""One exception hierarchy for politeness; callers branch on these types, never on message text."""

from __future__ import annotations


class PolitenessError(Exception):
    """Base of every politeness error."""


class CorruptState(PolitenessError):
    """A stored host state could not be read back."""


class PacingConflict(PolitenessError):
    """Another worker updated the host state first (a failed conditional write); re-read and retry."""


class PacingContention(PolitenessError):
    """The optimistic update kept losing to other workers; requeue the message and try later."""
