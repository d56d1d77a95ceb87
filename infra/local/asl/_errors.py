"""One exception hierarchy for the ASL executor: definition problems and States runtime errors."""

from __future__ import annotations

from collections.abc import Sequence


class AslError(Exception):
    """Base class of every error raised by the local ASL executor."""


class DefinitionError(AslError):
    """The definition is not valid ASL, or uses something the local executor does not run."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = tuple(problems)
        super().__init__("invalid state machine definition:\n  " + "\n  ".join(self.problems))


class StatesError(AslError):
    """A named States error (`error`, `cause`), as Step Functions reports it.

    An `invoke` callable may raise it to fail a Task with a chosen error name
    (for example `Lambda.TooManyRequestsException`).
    """

    def __init__(self, error: str, cause: str | None = None) -> None:
        self.error = error
        self.cause = cause
        super().__init__(f"{error}: {cause}" if cause else error)


class PathSyntaxError(AslError):
    """A JSONPath or intrinsic function expression outside the supported subset."""


class PathNotFound(LookupError):
    """A path that does not resolve in the data it is applied to."""

    def __init__(self, path: str) -> None:
        self.path = path
        super().__init__(path)


RUNTIME = "States.Runtime"
TIMEOUT = "States.Timeout"
ALL = "States.ALL"
TASK_FAILED = "States.TaskFailed"
INTRINSIC_FAILURE = "States.IntrinsicFailure"
RESULT_PATH_MATCH_FAILURE = "States.ResultPathMatchFailure"
NO_CHOICE_MATCHED = "States.NoChoiceMatched"
DATA_LIMIT_EXCEEDED = "States.DataLimitExceeded"
"""A state's input or output, a task's payload or result over 256 KiB: terminal, `States.ALL` does not match it."""
