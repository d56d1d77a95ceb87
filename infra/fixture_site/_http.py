"""HTTP/1.1 values of the fixture server: the parsed request, the scripted response, and head framing.

A Response is a script, not just bytes: besides status, headers and body it says how to deliver them
(latency, hang, one byte at a time, endless chunks, a lying Content-Length, a reset).
"""

from __future__ import annotations

import email.utils
import gzip as _gzip
import math
from dataclasses import dataclass
from http import HTTPStatus

Headers = tuple[tuple[str, str], ...]

HTML = "text/html; charset=utf-8"
XML = "application/xml; charset=utf-8"
TEXT = "text/plain; charset=utf-8"


@dataclass(frozen=True, slots=True)
class Request:
    """One parsed request; `target` is the path with its query, as sent."""

    method: str
    target: str
    version: str
    headers: Headers
    body: bytes = b""
    client: tuple[str, int] = ("", 0)

    @property
    def path(self) -> str:
        """The target without its query string."""
        return self.target.split("?", 1)[0]

    @property
    def query(self) -> str:
        """The raw query string without '?' ('' when absent)."""
        return self.target.split("?", 1)[1] if "?" in self.target else ""

    def header(self, name: str) -> str | None:
        """The first value of a header, case-insensitively; None when absent."""
        wanted = name.lower()
        for key, value in self.headers:
            if key.lower() == wanted:
                return value
        return None

    @property
    def host(self) -> str | None:
        return self.header("host")

    def accepts_gzip(self) -> bool:
        """Whether Accept-Encoding lists gzip (q-values other than 0 are taken as yes)."""
        accept = (self.header("accept-encoding") or "").lower()
        for item in accept.split(","):
            coding, _, params = item.strip().partition(";")
            if coding.strip() in ("gzip", "*") and params.replace(" ", "") not in ("q=0", "q=0.0"):
                return True
        return False


@dataclass(frozen=True, slots=True)
class Response:
    """A scripted answer: what to send and how.

    Delivery fields, each off by default:
    delay: seconds before anything is sent; math.inf never answers (the connection stays open until
    the client gives up or the server stops). trickle: seconds between single body bytes.
    endless: send `body` as chunks forever, `endless_interval` apart. content_length: the declared
    length when it should lie (the connection is closed afterwards). reset_after: abort the connection
    with a TCP RST after this many bytes of the serialized response (0: before any byte).
    """

    status: int = 200
    body: bytes = b""
    content_type: str | None = HTML
    headers: Headers = ()
    gzip: bool = False
    chunked: bool = False
    close: bool = False
    delay: float = 0.0
    trickle: float | None = None
    endless: bool = False
    endless_interval: float = 0.01
    content_length: int | None = None
    reset_after: int | None = None

    @property
    def hangs(self) -> bool:
        return math.isinf(self.delay)

    def encoded_body(self) -> bytes:
        """The body as it goes on the wire (gzip-compressed when asked, with mtime 0 for stable bytes)."""
        if self.gzip and self.body:
            return _gzip.compress(self.body, mtime=0)
        return self.body

    def has_body(self) -> bool:
        """False for statuses that never carry a body (1xx, 204, 304)."""
        return not (100 <= self.status < 200 or self.status in (204, 304))


def reason_phrase(status: int) -> str:
    try:
        return HTTPStatus(status).phrase
    except ValueError:
        return "Unknown"


def render_head(response: Response, body_length: int, *, keep_alive: bool) -> bytes:
    """The status line and headers; framing follows the response (length, chunked, or a declared lie).
    The route's own Date, Server or Content-Type replace the defaults."""
    own = {name.lower() for name, _ in response.headers}
    lines = [f"HTTP/1.1 {response.status} {reason_phrase(response.status)}"]
    if "date" not in own:
        lines.append(f"Date: {email.utils.formatdate(usegmt=True)}")
    if "server" not in own:
        lines.append("Server: seolens-fixture")
    if response.content_type is not None and response.has_body() and "content-type" not in own:
        lines.append(f"Content-Type: {response.content_type}")
    if response.gzip and response.body:
        lines.append("Content-Encoding: gzip")
        lines.append("Vary: Accept-Encoding")
    if response.has_body():
        if response.chunked or response.endless:
            lines.append("Transfer-Encoding: chunked")
        else:
            declared = body_length if response.content_length is None else response.content_length
            lines.append(f"Content-Length: {declared}")
    elif response.status == 304 and response.content_length is not None:
        lines.append(f"Content-Length: {response.content_length}")
    lines.extend(f"{name}: {value}" for name, value in response.headers)
    if not keep_alive:
        lines.append("Connection: close")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def chunk(data: bytes) -> bytes:
    """One chunk of a chunked body (an empty `data` is the terminating chunk)."""
    return f"{len(data):X}\r\n".encode("ascii") + data + b"\r\n"


class BadRequest(Exception):
    """The request head could not be parsed; the connection answers 400 and closes."""


def parse_head(raw: bytes, client: tuple[str, int]) -> Request:
    """Parse a request line and headers (the bytes up to and including the blank line)."""
    text = raw.decode("latin-1")
    lines = text.split("\r\n")
    parts = lines[0].split(" ")
    if len(parts) != 3 or not parts[2].startswith("HTTP/"):
        raise BadRequest(lines[0][:100])
    method, target, version = parts
    if target.startswith(("http://", "https://")):
        after_scheme = target.split("://", 1)[1]
        target = "/" + after_scheme.split("/", 1)[1] if "/" in after_scheme else "/"
    headers: list[tuple[str, str]] = []
    for line in lines[1:]:
        if not line:
            continue
        name, sep, value = line.partition(":")
        if not sep or not name or name != name.strip():
            raise BadRequest(line[:100])
        headers.append((name, value.strip()))
    return Request(
        method=method.upper(), target=target, version=version, headers=tuple(headers), client=client
    )
