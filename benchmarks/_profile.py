"""Where a crawl's CPU goes: py-spy samples of the crawler and the emulator, summed by activity.

py-spy (installed into `benchmarks/.venv-pyspy` on first use) samples the thread holding the GIL of every
process in the tree (`--gil --subprocesses`), so one sample is one tick of Python work in that process.
A sample counts for the innermost frame that names an activity (botocore called from our adapter counts as
AWS SDK); the emulator's samples count for the moto operation they serve.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import venv
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
PYSPY_VENV = HERE / ".venv-pyspy"
RATE_HZ = 100

ACTIVITIES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("URL normalization", ("seolens_core/urls/",)),
    ("HTML parse + link extraction", ("seolens_core/html/", "selectolax/")),
    ("robots", ("seolens_core/robots/", "protego")),
    ("sitemaps", ("seolens_core/sitemaps/",)),
    ("audit rules", ("seolens_core/audit/",)),
    ("politeness (pacing, AIMD)", ("seolens_core/politeness/",)),
    ("JSON + compression", ("seolens_core/adapters/_json.py", "json/", "zlib", "gzip.py")),
    ("AWS SDK (botocore, aiobotocore)", ("botocore/", "aiobotocore/", "aiohttp/", "boto3/", "urllib3/")),
    (
        "fetch (httpx, httpcore, h11, h2)",
        ("httpx/", "httpcore/", "h11/", "h2/", "hpack/", "ssl.py", "anyio/"),
    ),
    ("our AWS adapters", ("seolens_core/adapters/",)),
    ("crawl logic (worker, frontier)", ("seolens_core/", "functions/")),
    ("Powertools", ("aws_lambda_powertools/",)),
    ("logging", ("logging/",)),
    ("local runtime (ESM, Lambda host, executor)", ("infra/",)),
    ("event loop, threads, GC", ("asyncio/", "threading.py", "selectors.py", "concurrent/", "queue.py")),
)
PHASES: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "report after the crawl",
        (
            "seolens_core/crawl/_report.py",
            "seolens_core/crawl/_inlinks.py",
            "seolens_core/report_html/",
            "functions/report.py",
        ),
    ),
    ("fetch worker", ("functions/fetch_worker.py",)),
    ("seeding (robots, sitemaps)", ("functions/seed.py",)),
    ("progress checks, dead letters", ("functions/progress.py", "functions/dead_letter.py")),
    ("local event-source polling (the service's, in the cloud)", ("infra/local/esm.py",)),
    ("local Step Functions executor", ("infra/local/asl/",)),
    (
        "start-up: imports, template deployment",
        (
            "infra/local/deploy.py",
            "infra/local/template.py",
            "<frozen importlib",
            "samtranslator/",
            "infra/local/runtime.py",
        ),
    ),
)
SERVING = ("werkzeug/", "flask/", "gunicorn/", "moto/core/", "http/", "socketserver.py")


def ensure_pyspy() -> Path:
    """py-spy from PATH, else from the benchmark's own environment (created on first use)."""
    found = shutil.which("py-spy")
    if found:
        return Path(found)
    exe = PYSPY_VENV / "bin" / "py-spy"
    if not exe.exists():
        print("installing py-spy into benchmarks/.venv-pyspy ...", flush=True)
        venv.create(PYSPY_VENV, with_pip=True)
        subprocess.run([str(PYSPY_VENV / "bin" / "pip"), "install", "-q", "py-spy"], check=True)
    return exe


def profiled(cmd: Sequence[str], raw: Path) -> list[str]:
    """`cmd` run under py-spy, writing collapsed stacks with their process to `raw`."""
    return [
        str(ensure_pyspy()), "record", "--format", "raw", "--rate", str(RATE_HZ), "--gil",
        "--subprocesses", "--nonblocking", "-o", str(raw), "--", *cmd,
    ]  # fmt: skip


def _path(frame: str) -> str:
    return frame[frame.rfind("(") + 1 :] if frame.endswith(")") else frame


def _first(frames: Sequence[str], table: tuple[tuple[str, tuple[str, ...]], ...]) -> str | None:
    for frame in reversed(frames):
        path = _path(frame)
        for name, prefixes in table:
            if path.startswith(prefixes):
                return name
    return None


_DISPATCH = {
    "call_action",
    "include_consumed_capacity",
    "dispatch",
    "key_dispatch",
    "ambiguous_dispatch",
    "bucket_response",
    "key_response",
}


def _moto_operation(frames: Sequence[str]) -> str:
    """The moto response method a sample serves (`dynamodb.update_item`), past the dispatching frames."""
    named: list[str] = []
    for frame in frames:
        path = _path(frame)
        if path.startswith("moto/") and "/responses.py" in path and not path.startswith("moto/core/"):
            method = frame.split(" ", 1)[0].split(".<locals>", 1)[0].rsplit(".", 1)[-1]
            named.append(f"{path.split('/')[1]}.{method}")
            if method not in _DISPATCH and not method.startswith("_"):
                return named[-1]
    if named:
        return named[0]
    if any(_path(f).startswith(SERVING) for f in frames):
        return "HTTP serving (gunicorn, werkzeug, request parsing)"
    return "other"


@dataclass
class Profile:
    crawler: Counter[str] = field(default_factory=Counter)
    phases: Counter[str] = field(default_factory=Counter)
    emulator: Counter[str] = field(default_factory=Counter)

    @classmethod
    def read(cls, raw: Path) -> Profile:
        out = cls()
        for line in raw.read_text(encoding="utf-8", errors="replace").splitlines():
            stack, _, count = line.rpartition(" ")
            if not count.isdigit():
                continue
            frames = stack.split(";")
            processes = [f for f in frames if f.startswith("process ")]
            code = [f for f in frames if not f.startswith("process ")]
            if any("moto_server.py --serve" in p for p in processes):
                out.emulator[_moto_operation(code)] += int(count)
            else:
                out.crawler[_first(code, ACTIVITIES) or "other"] += int(count)
                out.phases[_first(code, PHASES) or "other (stack not resolved)"] += int(count)
        return out

    def lines(self, crawler_ms: float, emulator_ms: float) -> list[str]:
        """The shares of samples, applied to each process's measured CPU per page (sampling inflates the
        time it sees: the shares are what it measures)."""
        out: list[str] = []
        for title, counts, ms, top in (
            ("crawler process by activity", self.crawler, crawler_ms, 16),
            ("crawler process by phase", self.phases, crawler_ms, 8),
            ("emulator process by operation", self.emulator, emulator_ms, 10),
        ):
            total = sum(counts.values()) or 1
            out.append(f"  {title} ({ms:.2f} ms/page measured, {total} samples):")
            for name, n in counts.most_common(top):
                out.append(f"    {ms * n / total:6.2f} ms/page {100 * n / total:5.1f}%  {name}")
        return out


if __name__ == "__main__":
    # python benchmarks/_profile.py RAW CRAWLER_MS EMULATOR_MS: summarise a kept py-spy file again.
    for text in Profile.read(Path(sys.argv[1])).lines(float(sys.argv[2]), float(sys.argv[3])):
        print(text)
