"""`python -m infra.fixture_site --demo`: prints its base URL, serves the shop, stops cleanly on Ctrl-C."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[3]


def test_demo_entry_point_serves_until_interrupted(tmp_path: Path) -> None:
    log = tmp_path / "demo.jsonl"
    proc = subprocess.Popen(
        [sys.executable, "-m", "infra.fixture_site", "--demo", "--log", str(log)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        base = proc.stdout.readline().strip()
        assert base.startswith("http://127.0.0.1:")
        with httpx.Client(trust_env=False, timeout=5.0) as client:
            robots = client.get(base + "/robots.txt")
        assert f"Sitemap: {base}/sitemap.xml" in robots.text
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err
    assert "served 1 requests" in err
    assert json.loads(log.read_text())["path"] == "/robots.txt"


def test_entry_point_refuses_to_run_without_demo() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "infra.fixture_site"], cwd=ROOT, capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 2 and "--demo" in done.stderr
