"""Collector settings of a warm container and of the embedded emulator (both measured in their docstrings)."""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator

import pytest

from infra.local.moto_server import EMULATOR_GC_THRESHOLDS, _tune_gc
from seolens_core.bootstrap import GC_THRESHOLDS, tune_gc


@pytest.fixture
def default_collector() -> Iterator[None]:
    before = gc.get_threshold()
    gc.set_threshold(700, 10, 10)
    try:
        yield
    finally:
        gc.set_threshold(*before)


@pytest.mark.parametrize("tune, thresholds", [(tune_gc, GC_THRESHOLDS), (_tune_gc, EMULATOR_GC_THRESHOLDS)])
def test_collections_run_less_often_and_start_up_objects_are_frozen(
    default_collector: None, tune: Callable[[], None], thresholds: tuple[int, int, int]
) -> None:
    gc.unfreeze()
    tune()
    assert gc.get_threshold() == thresholds
    assert thresholds[0] >= 10_000  # a young collection per 10,000+ allocations, not per 700
    assert gc.get_freeze_count() > 0  # what start-up built is out of the collector's sight
