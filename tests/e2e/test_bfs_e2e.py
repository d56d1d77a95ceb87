"""Issue 8: breadth-first order on an unordered queue. The local event source mapping is told to put half
the messages it receives back for 1-3 s (as a standard SQS queue gives no order); the depth gate must still
fetch level by level. Evidence: the fixture server's request log."""

from __future__ import annotations

from pathlib import Path

from benchmarks.bfs_order import crawl_order
from infra.local.runtime import LocalCloud


def test_strict_gate_gives_breadth_first_order_on_a_disordered_queue(
    local_cloud: LocalCloud, tmp_path: Path
) -> None:
    order = crawl_order(local_cloud, tmp_path, fanout=3, depth=4, bfs_slack=0, unordered=0.5, workers=4)
    assert order.pages == 1 + 3 + 9 + 27 + 81
    assert order.max_overtake == 0
    assert order.inversions == 0.0
