"""Powertools Logger and Metrics shared by every handler (service name from POWERTOOLS_SERVICE_NAME)."""

from aws_lambda_powertools import Logger, Metrics, Tracer

logger = Logger(service="seolens")
metrics = Metrics(namespace="SEOLens", service="seolens")
tracer = Tracer(service="seolens")
