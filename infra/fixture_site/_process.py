"""The fixture server in a process of its own, for timing proofs.

An in-process server shares the GIL and the garbage collector with the crawler under test: a pause of the
test process (a full GC on a big heap takes over half a second) holds requests that already arrived and
logs them together when it ends, so two requests half a second apart on the wire look 20 ms apart. Here
arrival times are taken by a process the crawler cannot stall; `time.monotonic()` is one clock system-wide.
"""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO

from infra.fixture_site import _server
from infra.fixture_site._server import FixtureServer, LogQueries, RequestRecord, SiteSpec

SiteBuilder = Callable[[], SiteSpec]
"""Builds a site in the server process: a module-level function or a functools.partial of one (picklable)."""

_CHILD = "import sys; from infra.fixture_site._process import _serve; sys.exit(_serve())"


class ProcessFixtureServer(LogQueries):
    """`FixtureServer` with the same queries, serving from a child process; the log is read back from the
    JSON-lines file the child appends each finished request to (requests still in flight are not listed)."""

    def __init__(self, builders: Sequence[SiteBuilder]) -> None:
        self._builders = list(builders)
        self._dir: tempfile.TemporaryDirectory[str] | None = None
        self._log_path: Path | None = None
        self._stderr_path = Path("/dev/null")
        self._addresses: dict[str, tuple[str, int]] = {}
        self._process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        """Start the child (`_serve` in a new interpreter, sites pickled on its stdin) and wait
        for its addresses."""
        if self._process is not None:
            raise RuntimeError("fixture server already started")
        self._dir = tempfile.TemporaryDirectory(prefix="fixture-log-")
        self._log_path = Path(self._dir.name) / "requests.jsonl"
        self._stderr_path = Path(self._dir.name) / "stderr.txt"
        with self._stderr_path.open("wb") as stderr:  # connection noise at shutdown stays out of test output
            process = subprocess.Popen(
                [sys.executable, "-c", _CHILD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr
            )
        self._process = process
        stdin, stdout = _pipes(process)
        try:
            stdin.write(pickle.dumps((self._builders, str(self._log_path), sorted(_server._ORIGINS_USED))))
            stdin.flush()
            answer = json.loads(stdout.readline() or b'{"error": "the fixture server process exited"}')
        except BaseException:
            self.stop()
            raise
        if "error" in answer:
            self.stop()
            detail = self._stderr_path.read_text(errors="replace")[-2000:]
            raise RuntimeError(f"fixture server process: {answer['error']}\n{detail}")
        self._addresses = {name: (str(ip), int(port)) for name, (ip, port) in answer["sites"].items()}
        _server._ORIGINS_USED.update(self._addresses.values())

    def stop(self) -> None:
        """Ask the child to stop (closing its stdin) and wait until its log is complete."""
        process, self._process = self._process, None
        if process is None:
            return
        stdin, _ = _pipes(process)
        try:
            stdin.close()
            process.wait(timeout=15)
        except (OSError, subprocess.TimeoutExpired):
            process.kill()
            process.wait()

    def close(self) -> None:
        if self._dir is not None:
            self._dir.cleanup()
            self._dir = None

    def host_port(self, site: str) -> tuple[str, int]:
        try:
            return self._addresses[site]
        except KeyError:
            raise RuntimeError(f"site {site!r} is not being served (call start())") from None

    def log(self, site: str | None = None) -> list[RequestRecord]:
        """Finished requests (of one site, or all), in arrival order."""
        if self._log_path is None or not self._log_path.exists():
            return []
        records = []
        with self._log_path.open(encoding="utf-8") as fh:
            for line in fh:
                if not line.endswith("\n"):
                    break  # the child is still writing this one
                raw = json.loads(line)
                if site is not None and raw["site"] != site:
                    continue
                headers = tuple((str(k), str(v)) for k, v in raw.pop("headers").items())
                raw["client"] = tuple(raw["client"])
                records.append(RequestRecord(**raw, headers=headers))
        return sorted(records, key=lambda r: r.start)


def _pipes(process: subprocess.Popen[bytes]) -> tuple[IO[bytes], IO[bytes]]:
    if process.stdin is None or process.stdout is None:
        raise RuntimeError("fixture server process without pipes")
    return process.stdin, process.stdout


def _serve() -> int:
    """The child: read the sites from stdin, serve them, print their addresses, stop when stdin closes."""
    try:
        builders, log_path, used = pickle.load(sys.stdin.buffer)
        _server._ORIGINS_USED.update((str(ip), int(port)) for ip, port in used)
        server = FixtureServer([build() for build in builders], log_path=log_path)
        server.start()
    except Exception as exc:  # report, do not leave the parent waiting
        print(json.dumps({"error": f"{type(exc).__name__}: {exc}"}), flush=True)
        return 1
    try:
        print(json.dumps({"sites": {name: server.host_port(name) for name in server.sites}}), flush=True)
        sys.stdin.buffer.read()  # until the parent closes the pipe (or dies)
    finally:
        server.stop()
    return 0
