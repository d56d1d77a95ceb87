"""Interleaved A/B of the throughput benchmark: this tree against another revision, one run after the other.

Run: python benchmarks/bench_pairs.py --against REV [--pairs 2] [--pages 20000] [--max-seconds 2400]

This machine's speed drifts by tens of percent within an hour (it is shared), so a figure only compares with
one taken next to it. Each pair runs `bench_throughput.py --skip-scrapy` from this tree and from a temporary git
worktree of REV (first on PYTHONPATH, so its `seolens` runs its own code), the first of the pair alternating;
then prints every run (pages/s, our CPU and the emulator's a page, AWS calls a page, seconds before the first and
after the last request) and the ratio of the medians. The worktree is removed afterwards.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Run:
    tree: str
    pages_per_s: float
    own_ms: float
    emulator_ms: float
    calls: float
    before_s: float
    after_s: float

    @classmethod
    def read(cls, tree: str, figures: Path) -> Run:
        ours = next(r for r in json.loads(figures.read_text(encoding="utf-8")) if r["name"] == "seolens")
        pages = max(int(ours["pages"]), 1)
        calls = ours.get("extra", {}).get("aws_calls", {})
        return cls(
            tree=tree,
            pages_per_s=float(ours["pages_per_s"]),
            own_ms=(ours["cpu_s"] - ours["emulator_cpu_s"]) * 1000 / pages,
            emulator_ms=ours["emulator_cpu_s"] * 1000 / pages,
            calls=sum(calls.values()) / pages,
            before_s=float(ours.get("before_first_s", 0.0)),
            after_s=float(ours.get("after_last_s", 0.0)),
        )

    def line(self) -> str:
        return (
            f"{self.tree:>10}  {self.pages_per_s:7.1f} pages/s  own CPU {self.own_ms:5.2f} ms/page  "
            f"emulator {self.emulator_ms:5.2f} ms/page  {self.calls:4.2f} calls/page  "
            f"{self.before_s:4.1f} s before, {self.after_s:4.1f} s after"
        )


def _bench(tree: Path, args: argparse.Namespace, figures: Path) -> None:
    cmd = [
        sys.executable,
        str(tree / "benchmarks" / "bench_throughput.py"),
        "--pages",
        str(args.pages),
        "--skip-scrapy",
        "--max-seconds",
        str(args.max_seconds),
        "--json",
        str(figures),
    ]
    env = {**os.environ, "PYTHONPATH": str(tree)}
    subprocess.run(cmd, cwd=tree, env=env, check=True, stdout=subprocess.DEVNULL)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--against", required=True, help="the revision to compare with (anything git names)")
    parser.add_argument("--pairs", type=int, default=2)
    parser.add_argument("--pages", type=int, default=20_000)
    parser.add_argument("--max-seconds", type=float, default=2400.0)
    args = parser.parse_args()
    if args.pairs < 1:
        raise SystemExit("--pairs must be at least 1")

    scratch = Path(tempfile.mkdtemp(prefix="seolens-pairs-"))
    other = scratch / "tree"
    subprocess.run(
        ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(other), args.against], check=True
    )
    label = args.against[:10]
    runs: list[Run] = []
    try:
        for pair in range(args.pairs):
            order = [("this", ROOT), (label, other)]
            for name, tree in order if pair % 2 == 0 else reversed(order):
                figures = scratch / f"{pair}-{name}.json"
                _bench(tree, args, figures)
                runs.append(Run.read(name, figures))
                print(runs[-1].line(), flush=True)
    finally:
        subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(other)], check=False)

    def median(name: str, field: str) -> float:
        return statistics.median(getattr(r, field) for r in runs if r.tree == name)

    print(f"medians, this tree / {label}:")
    for field, what in (
        ("pages_per_s", "pages/s"),
        ("own_ms", "own CPU a page"),
        ("emulator_ms", "emulator CPU a page"),
        ("calls", "AWS calls a page"),
    ):
        ours, theirs = median("this", field), median(label, field)
        print(f"  {what:20} {ours:8.2f} / {theirs:8.2f} = {ours / theirs if theirs else float('nan'):.3f}")


if __name__ == "__main__":
    main()
