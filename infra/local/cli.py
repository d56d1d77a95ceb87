"""`seolens`: crawl sites on the embedded local runtime (or the endpoint in AWS_ENDPOINT_URL).

seolens crawl https://example.com/ --out results --max-pages 500
seolens demo --out demo-results
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import socket
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from seolens_core.settings import CrawlSettings

log = logging.getLogger("seolens.cli")


class CliError(Exception):
    """A problem the user can fix; printed as one line, exit status 2."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="seolens", description="SEO Lens: a polite, serverless SEO crawler."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    crawl = sub.add_parser("crawl", help="crawl one site (or several start URLs) and write the audit")
    crawl.add_argument("start_urls", nargs="+", metavar="START_URL")
    _crawl_options(crawl)
    demo = sub.add_parser("demo", help="serve the bundled demo shop on 127.0.0.1 and crawl it")
    _crawl_options(demo)
    return parser


def _crawl_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--out", type=Path, default=Path("seolens-out"), help="directory for the results")
    p.add_argument("--max-pages", type=int, help="stop after this many fetched pages")
    p.add_argument("--max-depth", type=int, help="links deeper than this are recorded, never fetched")
    p.add_argument("--max-seconds", type=float, help="time budget of the crawl")
    p.add_argument("--user-agent", help="product token (and version), default SEOLens")
    p.add_argument("--include-subdomains", action="store_true", help="crawl subdomains of the start hosts")
    p.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="HOST[:PORT]",
        help="also allow this host to resolve to a private/loopback address (repeatable)",
    )
    p.add_argument(
        "--workers",
        type=int,
        default=default_workers(),
        help="concurrent emulated Lambda pollers (default: 4, or the machine's cores + 1 when fewer: %(default)s)",
    )
    p.add_argument(
        "--no-aimd",
        action="store_true",
        help="fixed delay and concurrency (robots Crawl-delay still applies)",
    )
    p.add_argument("--max-query-params", type=int, help="prune URLs with more query parameters (default 2)")
    p.add_argument("--no-ignore-sorting-facets", action="store_true", help="keep sort/view facets in URLs")
    p.add_argument(
        "--force-crawl-delay-cap",
        action="store_true",
        help="crawl hosts whose Crawl-delay exceeds the maximum (pacing keeps the full delay)",
    )
    p.add_argument(
        "--header", action="append", default=[], metavar="NAME:VALUE", help="extra request header (secret)"
    )
    p.add_argument("--cookie", help="session cookie sent to the crawled site (secret)")
    p.add_argument("--config", type=Path, help="JSON or YAML file with crawl settings (options override it)")
    p.add_argument("--quiet", action="store_true", help="no progress display")
    p.add_argument(
        "--wait-out-batching-window",
        action="store_true",
        help="gather the fetch workers' batches for the whole batching window, as AWS Lambda does (fewer, "
        "fuller invocations: the calls and cost of the cloud; the local default sends a thin batch at once)",
    )


def build_settings(args: argparse.Namespace, start_urls: Sequence[str]) -> CrawlSettings:
    data: dict[str, Any] = {}
    if args.config is not None:
        data = _load_config(args.config)
    overrides: dict[str, Any] = {
        "max_pages": args.max_pages,
        "max_depth": args.max_depth,
        "max_seconds": args.max_seconds,
        "user_agent": args.user_agent,
        "max_query_params": args.max_query_params,
    }
    data.update({k: v for k, v in overrides.items() if v is not None})
    data["start_urls"] = list(start_urls)
    if args.include_subdomains:
        data["include_subdomains"] = True
    if args.allow_host:
        data["allow_hosts"] = list(data.get("allow_hosts", [])) + list(args.allow_host)
    if args.no_ignore_sorting_facets:
        data["ignore_sorting_facets"] = False
    politeness = dict(data.get("politeness", {}))
    if args.no_aimd:
        politeness["aimd"] = False
    if args.force_crawl_delay_cap:
        politeness["force_crawl_delay_cap"] = True
    if politeness:
        data["politeness"] = politeness
    headers = dict(data.get("extra_headers", {}))
    for raw in args.header:
        name, sep, value = raw.partition(":")
        if not sep or not name.strip():
            raise CliError(f"--header must look like NAME:VALUE, got {raw!r}")
        headers[name.strip()] = value.strip()
    if headers:
        data["extra_headers"] = headers
    if args.cookie:
        data["cookie"] = args.cookie
    data.setdefault("progress_poll_s", 1)
    try:
        return CrawlSettings.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "settings"
        raise CliError(f"invalid setting {where}: {first['msg']}") from None


def _load_config(path: Path) -> dict[str, Any]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot read config file {path}: {exc.strerror}") from None
    try:
        if path.suffix.lower() in (".yaml", ".yml"):
            import yaml

            loaded = yaml.safe_load(text)
        else:
            loaded = json.loads(text)
    except Exception as exc:
        raise CliError(
            f"config file {path} is not valid {path.suffix.lstrip('.') or 'JSON'}: {exc}"
        ) from None
    if not isinstance(loaded, dict):
        raise CliError(f"config file {path} must hold a mapping of settings")
    return loaded


def check_reachable(settings: CrawlSettings, timeout_s: float = 5.0) -> None:
    """Fail fast, in one line, when a start URL's host cannot be resolved or connected to."""
    from seolens_core.urls import NormalizedURL, normalize

    for raw in settings.start_urls:
        url = normalize(raw)
        if not isinstance(url, NormalizedURL):
            raise CliError(f"start URL {raw!r} is not crawlable: {url.reason.value} ({url.detail})")
        host = url.host.strip("[]")
        port = url.port or (443 if url.scheme == "https" else 80)
        try:
            with socket.create_connection((host, port), timeout=timeout_s):
                pass
        except OSError as exc:
            reason = exc.strerror or type(exc).__name__
            raise CliError(f"start URL {raw} is unreachable: {reason}") from None


class ProgressDisplay:
    """One live line on a terminal (pages done / queued, per-host pacing); a plain line every 5 s otherwise."""

    def __init__(self, stream: Any = sys.stderr, quiet: bool = False) -> None:
        self._stream = stream
        self._tty = bool(getattr(stream, "isatty", lambda: False)())
        self._quiet = quiet
        self._started = time.monotonic()
        self._last_plain = 0.0

    def __call__(self, record: Any, esm: Any) -> None:
        if self._quiet:
            return
        c = record.counters
        done = c.get("n_fetched", 0) + c.get("n_checked", 0) + c.get("n_disallowed", 0)
        discovered = c.get("n_discovered", 0)
        elapsed = max(0.001, time.monotonic() - self._started)
        line = (
            f"[{record.status.value.lower():9}] {done} done / {max(0, discovered - done)} queued · "
            f"{c.get('n_fetched', 0) / elapsed:.1f} pages/s · {esm.in_flight} in flight · {elapsed:.0f}s"
        )
        if self._tty:
            self._stream.write("\r" + line[:160].ljust(100))
            self._stream.flush()
        elif time.monotonic() - self._last_plain >= 5:
            self._last_plain = time.monotonic()
            print(line, file=self._stream, flush=True)

    def finish(self) -> None:
        if self._tty and not self._quiet:
            self._stream.write("\n")


def run(settings: CrawlSettings, args: argparse.Namespace) -> int:
    check_reachable(settings)
    started = time.monotonic()
    from infra.local.moto_server import MotoVersionError, launch_moto_server

    # The embedded server starts (and builds its backends) on the other core while this process imports.
    try:
        moto = None if os.environ.get("AWS_ENDPOINT_URL") else launch_moto_server()
    except MotoVersionError as exc:
        raise CliError(str(exc)) from exc
    from infra.local.lambda_host import route_lambda_logs
    from infra.local.process_host import stop_fork_server
    from infra.local.runtime import LocalCloud, run_crawl
    from infra.local.summary import render_summary

    route_lambda_logs(args.out / "lambda.log")
    display = ProgressDisplay(quiet=args.quiet)
    cloud = LocalCloud(moto=moto)
    try:
        cloud.start()
        outcome = run_crawl(
            cloud,
            settings,
            workers=args.workers,
            out_dir=args.out,
            on_progress=display,
            processes=True,
            wait_out_window=args.wait_out_batching_window,
        )
    finally:
        display.finish()
        cloud.stop()
        stop_fork_server()
    print(render_summary(outcome, args.out, time.monotonic() - started))
    return 0 if outcome.execution.status == "SUCCEEDED" else 1


def default_workers(cores: int | None = None) -> int:
    """Emulated pollers when `--workers` is not given: four, or one more than the machine's cores when that is
    fewer. Each poller is a process beside the emulator: on two cores, three fetched 1.15-1.17x the pages/s
    of four, with the same politeness utilisation (docs/PERFORMANCE.md, 2026-12-04 afternoon)."""
    if cores is None:
        cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    return max(2, min(4, cores + 1))


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        if args.workers < 1 or args.workers > 64:
            raise CliError("--workers must be between 1 and 64")
        if args.command == "demo":
            return _demo(args)
        settings = build_settings(args, args.start_urls)
        return run(settings, args)
    except CliError as exc:
        print(f"seolens: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("seolens: interrupted", file=sys.stderr)
        return 130


def _demo(args: argparse.Namespace) -> int:
    from infra.fixture_site import FixtureServer
    from infra.fixture_site._demo import demo_sites

    server = FixtureServer(demo_sites())
    server.start()
    try:
        start = server.base_url("demo") + "/"
        partner_host, partner_port = server.host_port("partner")
        args.allow_host = [*args.allow_host, f"{partner_host}:{partner_port}"]
        print(f"demo shop serving at {start}", file=sys.stderr)
        settings = build_settings(args, [start])
        return run(settings, args)
    finally:
        server.stop()


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    raise SystemExit(main())
