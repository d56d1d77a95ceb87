"""Patch 26: an item is measured once as it is built, with upstream's attributes and size limit."""

from __future__ import annotations

from typing import Any

import pytest

from infra.local import moto_patches
from seolens_core.adapters.urls import UrlStore
from seolens_core.frontier import FrontierMessage
from seolens_core.urls import url_key_hex

_URL = "http://127.0.0.1:8000/p/1.html"
_MESSAGE = FrontierMessage(crawl_id="c1", url=_URL, key=url_key_hex(_URL), depth=3, sitemap=True)
URL_ITEM = UrlStore(client=None, table="urls")._item(_MESSAGE, "127.0.0.1:8000", 1.8e9, done_outcome=None)
"""A queued URL's item as the crawler's claim writes it."""

SHAPES: list[dict[str, Any]] = [
    URL_ITEM,
    {
        "k": {"S": "h"},
        "leases": {"M": {"a": {"N": "1.5"}, "b": {"M": {"c": {"L": [{"S": "x"}, {"N": "2"}]}}}}},
    },
    {"k": {"S": "é✓"}, "blob": {"B": b"\x00\x01\xff"}, "ss": {"SS": ["b", "a"]}, "ns": {"NS": ["2", "1"]}},
    {"k": {"S": "n"}, "nothing": {"NULL": True}, "flag": {"BOOL": False}, "empty": {"L": []}},
    {},
]


@pytest.fixture
def item_class() -> Any:
    from moto.dynamodb.models.dynamo_type import Item

    moto_patches.apply()
    return Item


def _upstream(item_class: Any, attrs: dict[str, Any]) -> Any:
    item = item_class.__new__(item_class)
    moto_patches.UPSTREAM["item_init"](item, None, None, attrs)
    return item


def _outcome(build: Any) -> Any:
    try:
        item = build()
    except Exception as exc:  # the error itself is what is compared
        return type(exc)
    return type(item.attrs), list(item.attrs.items()), item.to_json()


@pytest.mark.parametrize("attrs", SHAPES)
def test_items_are_built_as_upstream_builds_them(item_class: Any, attrs: dict[str, Any]) -> None:
    from moto.dynamodb.models.dynamo_type import LimitedSizeDict

    patched = _outcome(lambda: item_class(None, None, attrs))
    assert patched == _outcome(lambda: _upstream(item_class, attrs))
    assert patched[0] is LimitedSizeDict


def _sized(total: int) -> dict[str, Any]:
    """Three attributes whose keys and values add up to `total` bytes."""
    head = {"a": {"S": "x" * 100}, "b": {"N": "12345"}}
    used = sum(len(k) + len(next(iter(v.values()))) for k, v in head.items())
    return {**head, "c": {"S": "y" * (total - used - 1)}}


@pytest.mark.parametrize("total", [moto_patches.ITEM_SIZE_LIMIT, moto_patches.ITEM_SIZE_LIMIT + 1])
def test_the_size_limit_is_upstreams_to_the_byte(item_class: Any, total: int) -> None:
    from moto.dynamodb.exceptions import ItemSizeTooLarge

    attrs = _sized(total)
    upstream, patched = (
        _outcome(lambda: _upstream(item_class, attrs)),
        _outcome(lambda: item_class(None, None, attrs)),
    )
    assert patched == upstream
    assert (patched is ItemSizeTooLarge) == (total > moto_patches.ITEM_SIZE_LIMIT)


def test_the_first_failure_is_upstreams(item_class: Any) -> None:
    """Too large at the second attribute, malformed at the third: upstream raises the size error first; the
    other way round, the malformed value's error."""
    from moto.dynamodb.exceptions import ItemSizeTooLarge

    big = {"S": "z" * moto_patches.ITEM_SIZE_LIMIT}
    malformed = {"N": None}
    for attrs, expected in (
        ({"a": {"S": "a"}, "big": big, "bad": malformed}, ItemSizeTooLarge),
        ({"a": {"S": "a"}, "bad": malformed, "big": big}, None),
    ):
        upstream = _outcome(lambda attrs=attrs: _upstream(item_class, attrs))
        assert _outcome(lambda attrs=attrs: item_class(None, None, attrs)) == upstream
        assert expected is None or upstream is expected


def test_each_attribute_is_measured_once(item_class: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from moto.dynamodb.models.dynamo_type import DynamoType

    measured: list[Any] = []
    size = DynamoType.size

    def counting(self: Any) -> int:
        measured.append(self)
        return size(self)

    monkeypatch.setattr(DynamoType, "size", counting)
    item_class(None, None, URL_ITEM)
    assert len(measured) == len(URL_ITEM)
    measured.clear()
    _upstream(item_class, URL_ITEM)
    assert len(measured) == len(URL_ITEM) * (len(URL_ITEM) + 1) // 2  # what the patch saves
