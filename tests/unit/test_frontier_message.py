"""A frontier message's counters from a hostile body: read bounded, so no back-off computed from them hangs."""

from __future__ import annotations

import json

import pytest

from seolens_core.crawl._worker import bfs_hold_s, budget_recheck_s
from seolens_core.frontier import FrontierMessage
from seolens_core.frontier._message import MAX_COUNT

BASE = {"v": 1, "crawl_id": "c1", "url": "http://shop.test/a", "key": "0123456789abcdef", "depth": 1}


@pytest.mark.parametrize("value", [10**30, 2**63, MAX_COUNT + 1])
def test_huge_counters_are_read_as_the_cap_and_their_back_offs_stay_cheap(value: int) -> None:
    body = {**BASE, "tries": value, "holds": value, "redrives": value, "bw": value}
    msg = FrontierMessage.from_json(json.dumps(body))
    assert (msg.tries, msg.holds, msg.redrives, msg.budget_waits) == (MAX_COUNT,) * 4
    # The back-offs computed from them (a sum over 10**30 holds never returned): answered, and at their caps.
    assert bfs_hold_s(msg.holds) is None  # its holds are used up: fetched now
    assert budget_recheck_s(msg.budget_waits) == 15.0


@pytest.mark.parametrize("value", [-1, True, 1.5, "3", None])
def test_counters_that_are_not_small_non_negative_integers_read_as_zero(value: object) -> None:
    msg = FrontierMessage.from_json(json.dumps({**BASE, "holds": value, "bw": value}))
    assert (msg.holds, msg.budget_waits) == (0, 0)


def test_the_budget_wait_survives_a_round_trip() -> None:
    msg = FrontierMessage.from_json(json.dumps({**BASE, "bw": 3}))
    assert msg.budget_waits == 3 and FrontierMessage.from_json(msg.to_json()) == msg
    assert "bw" not in json.loads(FrontierMessage.from_json(json.dumps(BASE)).to_json())


def test_the_https_probe_mark_survives_a_round_trip_and_only_true_sets_it() -> None:
    msg = FrontierMessage.from_json(json.dumps({**BASE, "probe": True}))
    assert msg.probe and FrontierMessage.from_json(msg.to_json()) == msg
    assert not FrontierMessage.from_json(json.dumps({**BASE, "probe": "yes"})).probe
    assert "probe" not in json.loads(FrontierMessage.from_json(json.dumps(BASE)).to_json())
