"""Imported by the fork server (`process_host.PRELOAD`): the AWS service models parsed once, before any
execution environment is forked from it (each inherits them)."""

from seolens_core.adapters._aws import preload_models

preload_models()
