"""A local executor for Amazon States Language definitions, calling Lambda handlers in-process.

Supports Task (Lambda ARN and `arn:aws:states:::lambda:invoke`), Choice, Wait, Pass, Succeed and
Fail states, JSONPath input/output processing, intrinsic functions, Retry and Catch. Map and
Parallel are refused when the executor is built.
"""

from __future__ import annotations

from ._definition import LAMBDA_INVOKE, substitute
from ._errors import AslError, DefinitionError, PathSyntaxError, StatesError
from ._executor import MAX_TRANSITIONS_EXCEEDED, AslExecutor, Execution, Invoke, OnTransition
from ._validate import validate_definition

__all__ = [
    "LAMBDA_INVOKE",
    "MAX_TRANSITIONS_EXCEEDED",
    "AslError",
    "AslExecutor",
    "DefinitionError",
    "Execution",
    "Invoke",
    "OnTransition",
    "PathSyntaxError",
    "StatesError",
    "substitute",
    "validate_definition",
]
