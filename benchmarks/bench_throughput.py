"""Benchmark: `seolens crawl` (embedded emulator) versus Scrapy on a generated static site served by nginx.

Run: python benchmarks/bench_throughput.py [--pages 20000] [--rounds N] [--workers N] [--concurrency 32]
     [--skip-scrapy] [--profile]

- Generates the site (benchmarks/_site_gen.py: tree of depth 6, ~40 links a page, shared nav, robots.txt
  with a Disallow and a sitemap index) in a temporary directory.
- Serves it with nginx on 127.0.0.1 (installed with apt-get if missing), one worker process, with a JSON
  access log: the page counts below come from that log, not from either crawler.
- Crawls it with `seolens crawl` (robots obeyed, --no-aimd, the CLI's default worker count (four worker
  environments, each a child process; three on a two-core machine), politeness initial_delay_ms 0 and
  concurrency 32) and with Scrapy 2.x
  from benchmarks/.venv-scrapy (created and `pip install scrapy`-ed on first use; ROBOTSTXT_OBEY on,
  AutoThrottle off, CONCURRENT_REQUESTS 32).
- Samples the process tree from /proc every 0.25 s: CPU seconds (split into the moto emulator process and
  the rest = our code, its worker processes and its Python runtime) and peak RSS (sum over the tree).
- With --profile, samples the seolens run with py-spy (`_profile.py`) and prints where the CPU goes: the
  crawler by activity (fetch, parse, normalization, AWS SDK, JSON, ...) and by phase, the emulator by the
  AWS operation it serves. The sampler costs CPU too: take pages/s from a run without it.
- With --rounds N, crawls with both N times in ABBA order (Scrapy first in odd rounds, seolens first in
  even ones) on the same site and server, and prints each round's ratios and their medians: the machine's
  speed drifts by the hour, and one pair of runs says less than the spread between pairs.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _profile import Profile, profiled
from _site_gen import generate_site, write_sitemaps

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
SCRAPY_VENV = HERE / ".venv-scrapy"
TICK = os.sysconf("SC_CLK_TCK")
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")

NGINX_CONF = """
worker_processes 1;
daemon off;
pid {work}/nginx.pid;
error_log {work}/nginx-error.log warn;
events {{ worker_connections 1024; }}
http {{
  access_log off;
  log_format bench escape=json '{{"t":$msec,"uri":"$request_uri","status":$status,"ua":"$http_user_agent","bytes":$body_bytes_sent}}';
  client_body_temp_path {work}/tmp-body; proxy_temp_path {work}/tmp-proxy; fastcgi_temp_path {work}/tmp-fcgi;
  uwsgi_temp_path {work}/tmp-uwsgi; scgi_temp_path {work}/tmp-scgi;
  types {{ text/html html; application/xml xml; text/plain txt; }}
  default_type application/octet-stream;
  keepalive_requests 100000;
  server {{
    listen 127.0.0.1:{port};
    root {site};
    index index.html;
    access_log {work}/access.json bench;
  }}
}}
"""

SPIDER = """
import scrapy
from urllib.parse import urlsplit

class BenchSpider(scrapy.Spider):
    name = "bench"

    def __init__(self, start=None, **kw):
        super().__init__(**kw)
        self.start_urls = [start]
        self.allowed_domains = [urlsplit(start).hostname]

    def parse(self, response):
        yield {"url": response.url, "status": response.status, "title": response.css("title::text").get()}
        for href in response.css("a::attr(href)").getall():
            yield response.follow(href, callback=self.parse)
"""


@dataclass
class Sample:
    cpu_s: dict[int, float] = field(default_factory=dict)
    emulator_pids: set[int] = field(default_factory=set)
    profiler_pids: set[int] = field(default_factory=set)
    peak_rss_mb: float = 0.0
    peak_emulator_rss_mb: float = 0.0


def _proc_table() -> dict[int, tuple[int, float, float]]:
    """pid -> (ppid, cpu seconds, rss MB) for every process."""
    table: dict[int, tuple[int, float, float]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat", encoding="ascii", errors="replace") as fh:
                raw = fh.read()
        except OSError:
            continue
        rest = raw[raw.rfind(")") + 2 :].split()
        ppid, utime, stime, rss_pages = int(rest[1]), int(rest[11]), int(rest[12]), int(rest[21])
        table[int(entry)] = (ppid, (utime + stime) / TICK, rss_pages * PAGE_SIZE / 2**20)
    return table


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _sample_tree(root: int, stop: threading.Event, out: Sample) -> None:
    while not stop.is_set():
        table = _proc_table()
        tree = {root}
        grew = True
        while grew:
            grew = False
            for pid, (ppid, _, _) in table.items():
                if ppid in tree and pid not in tree:
                    tree.add(pid)
                    grew = True
        rss = emu_rss = 0.0
        for pid in tree:
            if pid not in table:
                continue
            _, cpu, mb = table[pid]
            out.cpu_s[pid] = cpu
            if pid not in out.emulator_pids and pid not in out.profiler_pids:
                command = _cmdline(pid)
                if "moto_server.py" in command:
                    out.emulator_pids.add(pid)
                elif "py-spy" in command:
                    out.profiler_pids.add(pid)
            if pid in out.profiler_pids:
                continue  # the sampler's memory and CPU are not the crawler's
            rss += mb
            if pid in out.emulator_pids:
                emu_rss += mb
        out.peak_rss_mb = max(out.peak_rss_mb, rss)
        out.peak_emulator_rss_mb = max(out.peak_emulator_rss_mb, emu_rss)
        stop.wait(0.25)


@dataclass
class RunResult:
    name: str
    wall_s: float
    cpu_s: float
    emulator_cpu_s: float
    peak_rss_mb: float
    emulator_rss_mb: float
    pages: int
    requests: Counter[str]
    extra: dict[str, object] = field(default_factory=dict)
    before_first_s: float = 0.0
    """From the process's start to its first request to the site (imports, set-up, robots)."""
    fetching_s: float = 0.0
    """From its first page request to its last one."""
    after_last_s: float = 0.0
    """From its last request to the process's exit (the report, for seolens)."""

    @property
    def pages_per_s(self) -> float:
        return self.pages / self.wall_s if self.wall_s else 0.0

    @property
    def own_cpu_s(self) -> float:
        return self.cpu_s - self.emulator_cpu_s


def _measure(
    name: str, cmd: list[str], log: Path, ua_marker: str, env: dict[str, str] | None = None
) -> RunResult:
    before_log = log.stat().st_size if log.exists() else 0
    before = os.times()
    t0 = time.perf_counter()
    started_at = time.time()
    output = log.with_name(f"{name}-output.log")  # kept: the crawler's logs explain a slow or stalled run
    with output.open("w", encoding="utf-8") as out:
        proc = subprocess.Popen(cmd, env=env, stdout=out, stderr=subprocess.STDOUT, text=True)
        sample = Sample()
        stop = threading.Event()
        sampler = threading.Thread(target=_sample_tree, args=(proc.pid, stop, sample), daemon=True)
        sampler.start()
        proc.wait()
    wall = time.perf_counter() - t0
    ended_at = time.time()
    stop.set()
    sampler.join()
    after = os.times()
    if proc.returncode != 0:
        print(output.read_text(encoding="utf-8", errors="replace")[-3000:], file=sys.stderr)
        raise SystemExit(f"{name} exited with {proc.returncode} (output: {output})")
    cpu = (after.children_user - before.children_user) + (after.children_system - before.children_system)
    cpu -= sum(sample.cpu_s.get(pid, 0.0) for pid in sample.profiler_pids)  # py-spy is not the crawler
    emu = sum(sample.cpu_s.get(pid, 0.0) for pid in sample.emulator_pids)
    requests: Counter[str] = Counter()
    pages = 0
    times: list[float] = []
    page_times: list[float] = []
    with log.open(encoding="utf-8") as fh:
        fh.seek(before_log)
        for line in fh:
            row = json.loads(line)
            if ua_marker not in row["ua"]:
                continue
            uri = row["uri"]
            kind = "page" if uri == "/" or uri.startswith("/p/") else uri.split("?")[0]
            requests[f"{kind} {row['status']}"] += 1
            times.append(float(row["t"]))
            if kind == "page" and row["status"] == 200:
                pages += 1
                page_times.append(float(row["t"]))
    result = RunResult(name, wall, cpu, emu, sample.peak_rss_mb, sample.peak_emulator_rss_mb, pages, requests)
    if times and page_times:
        result.before_first_s = max(min(times) - started_at, 0.0)
        result.fetching_s = max(page_times) - min(page_times)
        result.after_last_s = max(ended_at - max(times), 0.0)
    return result


def _ensure_nginx() -> str:
    found = shutil.which("nginx") or ("/usr/sbin/nginx" if Path("/usr/sbin/nginx").exists() else None)
    if found:
        return found
    print("installing nginx-light from Debian's packages ...", file=sys.stderr)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "install", "-y", "-q", "nginx-light"], check=True, env=env)
    return shutil.which("nginx") or "/usr/sbin/nginx"


def _ensure_scrapy() -> Path:
    scrapy = SCRAPY_VENV / "bin" / "scrapy"
    if not scrapy.exists():
        print("creating benchmarks/.venv-scrapy and installing scrapy ...", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(SCRAPY_VENV)], check=True)
        subprocess.run([str(SCRAPY_VENV / "bin" / "pip"), "install", "-q", "scrapy"], check=True)
    (SCRAPY_VENV / ".gitignore").write_text("*\n", encoding="utf-8")
    return scrapy


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _wait_port(port: int) -> None:
    for _ in range(100):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.05)
    raise SystemExit("nginx did not start")


def unpaced_config(work: Path, concurrency: int) -> Path:
    """A `seolens crawl --config` file without a delay between starts, `concurrency` at a time (and AIMD's
    ceiling at twice that); the crawl also takes `--no-aimd`."""
    config = work / "seolens.json"
    politeness = {
        "initial_delay_ms": 0,
        "initial_concurrency": concurrency,
        "max_concurrency": 2 * concurrency,
    }
    config.write_text(json.dumps({"politeness": politeness}), encoding="utf-8")
    return config


def _run_seolens(
    origin: str,
    host: str,
    pages: int,
    workers: int | None,
    concurrency: int,
    work: Path,
    log: Path,
    max_seconds: float,
    profile: Path | None = None,
) -> RunResult:
    config = unpaced_config(work, concurrency)
    out = work / "seolens-out"
    seolens = Path(sys.executable).with_name("seolens")
    cmd = [
        str(seolens) if seolens.exists() else "seolens",
        "crawl",
        origin + "/",
        "--allow-host",
        host,
        "--no-aimd",
        *(["--workers", str(workers)] if workers is not None else []),
        "--config",
        str(config),
        "--max-pages",
        str(pages + 100),
        "--out",
        str(out),
        "--user-agent",
        "SEOLensBench",
        "--max-seconds",
        str(max_seconds),
        "--quiet",
    ]
    result = _measure("seolens", profiled(cmd, profile) if profile else cmd, log, "SEOLensBench")
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    result.extra = {
        "aws_calls": report.get("aws_calls") or report.get("cost", {}).get("aws_calls", {}),
        "counters": report.get("counters", {}),
        "status": report.get("status"),
        "report_duration_s": report.get("duration_s"),
        "event_source_cpu_s": report.get("local_runtime", {}).get("event_source_cpu_s"),
        "cost_per_100k_pages_usd": report.get("cost", {}).get("cost_per_100k_pages_usd"),
    }
    return result


def _run_scrapy(origin: str, work: Path, log: Path, concurrency: int) -> RunResult:
    scrapy = _ensure_scrapy()
    spider = work / "bench_spider.py"
    spider.write_text(SPIDER, encoding="utf-8")
    cmd = [
        str(scrapy),
        "runspider",
        str(spider),
        "-a",
        f"start={origin}/",
        "-o",
        str(work / "scrapy.jsonl"),
        "-s",
        "ROBOTSTXT_OBEY=True",
        "-s",
        "AUTOTHROTTLE_ENABLED=False",
        "-s",
        f"CONCURRENT_REQUESTS={concurrency}",
        "-s",
        f"CONCURRENT_REQUESTS_PER_DOMAIN={concurrency}",
        "-s",
        "DOWNLOAD_DELAY=0",
        "-s",
        "LOG_LEVEL=WARNING",
        "-s",
        "USER_AGENT=ScrapyBench (+bench)",
        "-s",
        "TELNETCONSOLE_ENABLED=False",
    ]
    return _measure("scrapy", cmd, log, "ScrapyBench")


def _print(result: RunResult) -> None:
    per_page = result.cpu_s / max(result.pages, 1)
    own = result.own_cpu_s / max(result.pages, 1)
    print(
        f"{result.name:8s} pages {result.pages:6d}  wall {result.wall_s:7.1f} s  {result.pages_per_s:7.1f} pages/s  "
        f"CPU {result.cpu_s:7.1f} s ({per_page * 1000:.2f} ms/page; without emulator {own * 1000:.2f} ms/page)  "
        f"peak RSS {result.peak_rss_mb:.0f} MB (emulator {result.emulator_rss_mb:.0f} MB)"
    )
    print(f"         nginx log: {dict(sorted(result.requests.items()))}")
    if result.fetching_s:
        print(
            f"         wall: {result.before_first_s:.1f} s before the first request, {result.fetching_s:.1f} s from "
            f"the first page to the last ({result.pages / result.fetching_s:.1f} pages/s), "
            f"{result.after_last_s:.1f} s after the last request"
        )
    if result.emulator_cpu_s:
        print(
            f"         emulator CPU {result.emulator_cpu_s:.1f} s "
            f"({result.emulator_cpu_s / max(result.cpu_s, 1e-9):.0%} of the tree)"
        )
    event_source = result.extra.get("event_source_cpu_s")
    if isinstance(event_source, float | int):
        print(
            f"         of the own CPU, the local event source (receives, deletes, hand-offs: the Lambda "
            f"service's pollers in the cloud) {event_source:.1f} s, {event_source / max(result.pages, 1) * 1000:.2f} "
            f"ms/page; without it {(result.own_cpu_s - event_source) / max(result.pages, 1) * 1000:.2f} ms/page"
        )
    cost = result.extra.get("cost_per_100k_pages_usd")
    if isinstance(cost, float | int):
        print(f"         estimated AWS cost (report.json): ${cost:.4f} per 100,000 pages (target <= $0.25)")
    calls = result.extra.get("aws_calls")
    if isinstance(calls, dict) and calls:
        total = sum(calls.values())
        print(
            f"         AWS calls {total} ({total / max(result.pages, 1):.2f} per page): "
            + ", ".join(
                f"{k} {v / max(result.pages, 1):.2f}" for k, v in sorted(calls.items(), key=lambda kv: -kv[1])
            )
        )


def _ratios(ours: RunResult, theirs: RunResult) -> tuple[float, float, float | None]:
    """seolens / Scrapy in one round: pages/s, own CPU a page, and own CPU a page without the local event
    source (None when the report does not say)."""
    their_cpu = max(theirs.cpu_s / max(theirs.pages, 1), 1e-9)
    speed = ours.pages_per_s / max(theirs.pages_per_s, 1e-9)
    cpu = ours.own_cpu_s / max(ours.pages, 1) / their_cpu
    event_source = ours.extra.get("event_source_cpu_s")
    handlers = None
    if isinstance(event_source, float | int):
        handlers = (ours.own_cpu_s - event_source) / max(ours.pages, 1) / their_cpu
    return speed, cpu, handlers


def _print_ratios(ours: RunResult, theirs: RunResult) -> None:
    speed, cpu, handlers = _ratios(ours, theirs)
    print(
        f"ratio seolens/scrapy: pages/s {speed:.2f}x (target >= 1.5)  own CPU/page {cpu:.2f}x "
        f"of Scrapy's (target <= 0.5)  peak RSS {ours.peak_rss_mb / max(theirs.peak_rss_mb, 1e-9):.2f}x"
    )
    if handlers is not None:
        print(f"                     own CPU/page without the local event source {handlers:.2f}x of Scrapy's")


def _print_medians(rounds: list[tuple[RunResult, RunResult]]) -> None:
    """Each ratio's median over the rounds, with its range and the CPU figures behind it: the machine's speed
    drifts by the hour, and single pairs minutes apart have measured from 1.5x to 2.2x."""
    table = [_ratios(ours, theirs) for ours, theirs in rounds]
    columns: tuple[tuple[str, list[float], str], ...] = (
        ("pages/s", [r[0] for r in table], " (target >= 1.5)"),
        ("own CPU/page", [r[1] for r in table], " (target <= 0.5)"),
        ("own CPU/page without the local event source", [r[2] for r in table if r[2] is not None], ""),
    )
    for label, column, target in columns:
        if column:
            print(
                f"median of {len(column)} rounds, {label}: {statistics.median(column):.2f}x{target}, range "
                f"{min(column):.2f}-{max(column):.2f}; by round {', '.join(f'{v:.2f}' for v in column)}"
            )
    print(
        "CPU a page by round, seolens (own) / Scrapy: "
        + ", ".join(
            f"{ours.own_cpu_s / max(ours.pages, 1) * 1000:.2f} / {theirs.cpu_s / max(theirs.pages, 1) * 1000:.2f} ms"
            for ours, theirs in rounds
        )
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--pages", type=int, default=20_000)
    parser.add_argument("--links", type=int, default=40)
    # The CLI's default. Four containers of ten records each fill the host's 32 slots; with eight, 80 records
    # competed for 32 slots, and the failed grants and re-asks cost more than they fetched (6,000 pages, two
    # back-to-back pairs: 1.33 vs 1.70 AWS calls a page, 62.6-67.7 vs 52.3-54.9 pages/s). Six on 64 slots
    # (`--workers 6 --concurrency 64`) fetched 51.5 pages/s twice against 40.6-45.9 at 3,000 pages (runs
    # interleaved), but not better against Scrapy at 20,000 (0.73x against 0.80x, on a machine slowing down):
    # not the default until it measures better there. Three on two cores: `default_workers` in infra/local/cli.py.
    parser.add_argument("--workers", type=int, default=None, help="emulated pollers (default: the CLI's)")
    parser.add_argument(
        "--concurrency", type=int, default=32, help="the host's initial concurrency (politeness setting)"
    )
    parser.add_argument("--scrapy-concurrency", type=int, default=32)
    parser.add_argument("--max-seconds", type=float, default=900.0, help="time budget of the seolens crawl")
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="crawl with both this many times, interleaved (ABBA), and print the median ratios",
    )
    parser.add_argument("--skip-scrapy", action="store_true")
    parser.add_argument("--skip-seolens", action="store_true")
    parser.add_argument("--keep", action="store_true", help="keep the work directory (logs) afterwards")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    parser.add_argument(
        "--profile",
        action="store_true",
        help="sample the seolens run with py-spy and print where its CPU goes (the sampler slows the run)",
    )
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error("--rounds must be at least 1")

    nginx = _ensure_nginx()
    work = Path(tempfile.mkdtemp(prefix="seolens-bench-"))
    work.chmod(0o755)
    site = work / "site"
    t0 = time.perf_counter()
    spec = generate_site(site, args.pages, args.links)
    port = _free_port()
    origin = f"http://127.0.0.1:{port}"
    write_sitemaps(site, spec, origin)
    print(
        f"site: {args.pages} pages, branching {spec.branching}, depth <= 6, generated in "
        f"{time.perf_counter() - t0:.1f} s under {site}"
    )
    (work / "nginx.conf").write_text(NGINX_CONF.format(work=work, port=port, site=site), encoding="utf-8")
    server = subprocess.Popen([nginx, "-c", str(work / "nginx.conf"), "-e", str(work / "nginx-error.log")])
    results: list[RunResult] = []
    rounds: list[tuple[RunResult, RunResult]] = []
    try:
        _wait_port(port)
        log = work / "access.json"
        for index in range(args.rounds):
            # ABBA: Scrapy first in rounds 1, 3, ..., seolens first in rounds 2, 4, ...: a machine that speeds
            # up or slows down through the rounds favours neither.
            order = ("scrapy", "seolens") if index % 2 == 0 else ("seolens", "scrapy")
            if args.rounds > 1:
                print(f"round {index + 1} of {args.rounds}: {' then '.join(order)}")
            done: dict[str, RunResult] = {}
            for name in order:
                if name == "scrapy" and not args.skip_scrapy:
                    done[name] = _run_scrapy(origin, work, log, args.scrapy_concurrency)
                    _print(done[name])
                elif name == "seolens" and not args.skip_seolens:
                    raw = work / f"py-spy-{index + 1}.txt" if args.profile else None
                    ours = _run_seolens(
                        origin,
                        f"127.0.0.1:{port}",
                        args.pages,
                        args.workers,
                        args.concurrency,
                        work,
                        log,
                        args.max_seconds,
                        raw,
                    )
                    done[name] = ours
                    _print(ours)
                    if raw is not None:
                        per_page = 1000 / max(ours.pages, 1)
                        print("where the CPU goes (py-spy samples of the run above, which it slowed):")
                        for line in Profile.read(raw).lines(
                            ours.own_cpu_s * per_page, ours.emulator_cpu_s * per_page
                        ):
                            print(line)
            results.extend(done.values())
            if "scrapy" in done and "seolens" in done:
                rounds.append((done["seolens"], done["scrapy"]))
                _print_ratios(*rounds[-1])
    finally:
        server.terminate()
        server.wait(timeout=10)
    if len(rounds) > 1:
        _print_medians(rounds)
    if args.json:
        args.json.write_text(
            json.dumps(
                [{**r.__dict__, "requests": dict(r.requests), "pages_per_s": r.pages_per_s} for r in results],
                indent=2,
                default=str,
            ),
            encoding="utf-8",
        )
    if args.keep:
        print(f"kept {work} (site, nginx access log, each crawler's output log)")
    else:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
