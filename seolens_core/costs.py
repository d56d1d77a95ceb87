"""What a crawl costs on AWS: API call counts -> billed units -> US dollars at stated list prices.

Pure: no I/O, no clock. The input is what `adapters._metering.GLOBAL_METER` records
(`"service.Operation" -> calls`, as in report.json `aws_calls`) plus what the meter cannot see
(Lambda invocations and GB-seconds, Step Functions state transitions, items per batch call).

Billed-unit rules (AWS pricing pages, us-east-1, Standard queues / on-demand tables):
- SQS: one request per call per started 64 KB of payload (`sqs_chunks_per_call`, default 1: our
  messages are well under 64 KB). A batch of 10 messages is one request.
- DynamoDB on-demand: one WRU per item write up to 1 KB (conditional writes that fail are billed too),
  one RRU per strongly consistent read up to 4 KB, half for an eventually consistent one (the meter counts
  BatchGetItem keys so, and a Query or Scan by the items it examined, see `answered_read_units`; a single
  GetItem is billed the full unit, an upper bound). Batch calls
  are billed per item, transactions twice per item; a PartiQL BatchExecuteStatement per statement, as
  writes (the crawler's are conditional INSERTs and UPDATEs of one item each). An item a PutItem, batch or
  transaction puts is counted per started KB (the meter sizes it from the request: batch journals are tens
  of KB); an update or delete per started KB of the item its answer returns (a busy host's pacing item),
  else of the item as the meter last saw it (where it knows the table), else one unit (a lower bound: AWS
  bills the stored item's size). `batch_items` carries
  these mean units per call for single-item writes too. Writes to global secondary indexes are billed as
  writes too (`index_write_units`: the meter counts them where it knows the tables' indexes).
- S3: PUT/COPY/POST/LIST at the PUT price, GET/HEAD/other reads at the GET price.
- Lambda: requests plus GB-seconds; Step Functions Standard: state transitions.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields

__all__ = [
    "LIST_PRICES",
    "BilledUnits",
    "Cost",
    "PriceList",
    "Usage",
    "billed_units",
    "cost_of",
]


@dataclass(frozen=True)
class PriceList:
    """USD list prices; the defaults are the public us-east-1 prices (checked 2026-11)."""

    sqs_per_million_requests: float = 0.40
    dynamodb_per_million_wru: float = 0.625
    dynamodb_per_million_rru: float = 0.125
    lambda_per_gb_second: float = 0.0000166667
    lambda_per_million_requests: float = 0.20
    sfn_per_thousand_transitions: float = 0.025
    s3_per_thousand_put: float = 0.005
    s3_per_thousand_get: float = 0.0004


LIST_PRICES = PriceList()

# Items per batch call when the caller does not know them: the API maximum (an upper bound).
_BATCH_MAX_ITEMS = {
    "BatchGetItem": 100.0,
    "BatchWriteItem": 25.0,
    "TransactWriteItems": 100.0,
    "TransactGetItems": 100.0,
    "BatchExecuteStatement": 25.0,
}
_DDB_WRITES = {"PutItem", "UpdateItem", "DeleteItem"}
_DDB_READS = {"GetItem"}
_DDB_PAGED_READS = {"Query", "Scan"}
_DDB_FREE = {
    "CreateTable",
    "DescribeTable",
    "ListTables",
    "UpdateTimeToLive",
    "DescribeTimeToLive",
    "TagResource",
}
_S3_PUT_CLASS = {
    "PutObject",
    "CopyObject",
    "PostObject",
    "ListObjects",
    "ListObjectsV2",
    "CreateMultipartUpload",
    "UploadPart",
    "CompleteMultipartUpload",
}
_S3_FREE = {"DeleteObject", "DeleteObjects"}


@dataclass(frozen=True)
class Usage:
    """What a crawl consumed. `calls` keys are "service.Operation"; `batch_items` maps a batch
    operation ("BatchWriteItem") to the mean items per call (unknown: the API maximum)."""

    calls: Mapping[str, int]
    batch_items: Mapping[str, float] = field(default_factory=dict)
    sqs_chunks_per_call: float = 1.0
    index_write_units: float = 0.0
    lambda_invocations: int = 0
    lambda_gb_seconds: float = 0.0
    sfn_transitions: int = 0


@dataclass(frozen=True)
class BilledUnits:
    sqs_requests: float = 0.0
    dynamodb_wru: float = 0.0
    dynamodb_index_wru: float = 0.0
    dynamodb_rru: float = 0.0
    s3_put_requests: float = 0.0
    s3_get_requests: float = 0.0
    lambda_requests: float = 0.0
    lambda_gb_seconds: float = 0.0
    sfn_transitions: float = 0.0
    unpriced: tuple[str, ...] = ()  # operations with no rule here (counted, not priced)

    def scaled(self, factor: float) -> BilledUnits:
        values = {f.name: getattr(self, f.name) * factor for f in fields(self) if f.name != "unpriced"}
        return BilledUnits(**values, unpriced=self.unpriced)


@dataclass(frozen=True)
class Cost:
    """USD per service."""

    sqs: float
    dynamodb: float
    lambda_: float
    step_functions: float
    s3: float

    @property
    def total(self) -> float:
        return self.sqs + self.dynamodb + self.lambda_ + self.step_functions + self.s3

    def as_dict(self) -> dict[str, float]:
        return {
            "sqs": self.sqs,
            "dynamodb": self.dynamodb,
            "lambda": self.lambda_,
            "step_functions": self.step_functions,
            "s3": self.s3,
            "total": self.total,
        }


def billed_units(usage: Usage) -> BilledUnits:
    sqs = wru = rru = s3_put = s3_get = 0.0
    unpriced: list[str] = []
    for key, count in usage.calls.items():
        service, _, op = key.partition(".")
        items = usage.batch_items.get(op, _BATCH_MAX_ITEMS.get(op, 1.0))
        if service == "sqs":
            if op in {"GetQueueUrl", "GetQueueAttributes", "ListQueues"} or op.startswith(
                ("Send", "Receive", "Delete", "ChangeMessage", "Purge")
            ):
                sqs += count * usage.sqs_chunks_per_call
            else:
                unpriced.append(key)
        elif service == "dynamodb":
            if op in _DDB_WRITES:
                wru += count * usage.batch_items.get(op, 1.0)
            elif op in _DDB_READS:
                rru += count
            elif op in _DDB_PAGED_READS:
                rru += count * usage.batch_items.get(op, 1.0)
            elif op == "BatchWriteItem":
                wru += count * items
            elif op == "BatchGetItem":
                rru += count * items
            elif op == "BatchExecuteStatement":  # PartiQL single-item writes (reads would be cheaper)
                wru += count * items
            elif op == "TransactWriteItems":
                wru += 2 * count * items
            elif op == "TransactGetItems":
                rru += 2 * count * items
            elif op not in _DDB_FREE:
                unpriced.append(key)
        elif service == "s3":
            if op in _S3_PUT_CLASS:
                s3_put += count
            elif op in _S3_FREE:
                pass
            else:
                s3_get += count
        elif service in {"lambda", "stepfunctions", "states"}:
            pass  # billed through lambda_invocations / sfn_transitions, not per API call here
        else:
            unpriced.append(key)
    return BilledUnits(
        sqs_requests=sqs,
        dynamodb_wru=wru,
        dynamodb_index_wru=usage.index_write_units,
        dynamodb_rru=rru,
        s3_put_requests=s3_put,
        s3_get_requests=s3_get,
        lambda_requests=float(usage.lambda_invocations),
        lambda_gb_seconds=usage.lambda_gb_seconds,
        sfn_transitions=float(usage.sfn_transitions),
        unpriced=tuple(sorted(unpriced)),
    )


def cost_of(units: BilledUnits, prices: PriceList = LIST_PRICES) -> Cost:
    return Cost(
        sqs=units.sqs_requests * prices.sqs_per_million_requests / 1e6,
        dynamodb=(
            (units.dynamodb_wru + units.dynamodb_index_wru) * prices.dynamodb_per_million_wru
            + units.dynamodb_rru * prices.dynamodb_per_million_rru
        )
        / 1e6,
        lambda_=units.lambda_requests * prices.lambda_per_million_requests / 1e6
        + units.lambda_gb_seconds * prices.lambda_per_gb_second,
        step_functions=units.sfn_transitions * prices.sfn_per_thousand_transitions / 1e3,
        s3=units.s3_put_requests * prices.s3_per_thousand_put / 1e3
        + units.s3_get_requests * prices.s3_per_thousand_get / 1e3,
    )
