"""`python -m infra.fixture_site --demo [--port N]`: serve the demo shop until Ctrl-C.

Prints the demo's base URL alone on stdout (for scripts); the partner host and the log go to stderr.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from types import FrameType

from infra.fixture_site._demo import DEMO, PARTNER, demo_site, partner_site
from infra.fixture_site._server import FixtureServer


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m infra.fixture_site", description=__doc__)
    parser.add_argument("--demo", action="store_true", help="serve the demo shop and its partner site")
    parser.add_argument("--port", type=int, default=0, help="demo port (default: a free one)")
    parser.add_argument("--ip", default="127.0.0.1", help="demo address on 127.0.0.0/8")
    parser.add_argument("--log", default=None, help="append the request log to this JSON-lines file")
    args = parser.parse_args(argv)
    if not args.demo:
        parser.error("nothing to serve: pass --demo")
    if not args.ip.startswith("127."):
        parser.error("the fixture site only listens on loopback (127.0.0.0/8)")

    server = FixtureServer([demo_site(ip=args.ip, port=args.port), partner_site()], log_path=args.log)
    server.start()
    stop = threading.Event()

    def on_signal(signum: int, frame: FrameType | None) -> None:
        stop.set()

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    print(server.base_url(DEMO), flush=True)
    print(f"partner site: {server.base_url(PARTNER)}; Ctrl-C to stop", file=sys.stderr, flush=True)
    try:
        while not stop.wait(0.5):
            pass
    finally:
        server.stop()
    print(f"served {len(server.log())} requests", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
