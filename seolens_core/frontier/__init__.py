"""The frontier's vocabulary: the message that carries one discovered URL through SQS."""

from seolens_core.frontier._message import SITEMAP_QUEUE_COUNTER, FrontierMessage, MessageError

__all__ = ["SITEMAP_QUEUE_COUNTER", "FrontierMessage", "MessageError"]
