"""The frontier's vocabulary: the message that carries one discovered URL through SQS."""

from seolens_core.frontier._message import FrontierMessage, MessageError

__all__ = ["FrontierMessage", "MessageError"]
