"""Streaming sitemap parser: bytes in as they arrive, entries out as they complete (sitemaps.org 0.9).

The parser never holds the document: gzip is inflated in bounded pieces, XML goes through expat with
DTDs and entities refused (no XXE, no entity expansion), text sitemaps are split line by line.
Nothing in here raises on bad input; problems become findings on the result.
"""

from __future__ import annotations

from pyexpat import ErrorString, ExpatError, ParserCreate
from pyexpat import XMLParserType as _ExpatParser
from typing import Literal

from seolens_core.sitemaps._gzip import GZIP_MAGIC, PIECE_BYTES, Inflater
from seolens_core.sitemaps._model import (
    ALERT_SITEMAP_DTD_REJECTED,
    ALERT_SITEMAP_INVALID_ENTRIES,
    ALERT_SITEMAP_MALFORMED,
    ALERT_SITEMAP_NOT_A_SITEMAP,
    ALERT_SITEMAP_TOO_LARGE,
    ALERT_SITEMAP_TOO_MANY_URLS,
    SitemapEntry,
    SitemapFinding,
    SitemapKind,
    SitemapLimits,
    SitemapResult,
)

__all__ = ["SitemapParser"]

_UTF8_BOM = b"\xef\xbb\xbf"
_XML_SPACE = b" \t\r\n"
_MAX_GZIP_LAYERS = 2
"""A .xml.gz served with an undecoded Content-Encoding: gzip arrives gzipped twice."""
_XML_PARAM_ENTITY_PARSING_NEVER = 0
_SITEMAP_NAMESPACES = frozenset(
    {
        "",
        "www.sitemaps.org/schemas/sitemap/0.9",
        "sitemaps.org/schemas/sitemap/0.9",
        "www.google.com/schemas/sitemap/0.9",
        "www.google.com/schemas/sitemap/0.84",
    }
)
_RECORD_FIELDS = frozenset({"loc", "lastmod", "changefreq", "priority"})
_XHTML_NS = "http://www.w3.org/1999/xhtml"
MAX_ALTERNATES = 256
"""hreflang alternates kept per `<url>` (a site has at most a few hundred language versions)."""
_NAME_CACHE_MAX = 64


class _Stop(Exception):
    """Raised inside expat handlers to abort parsing; never leaves this module."""


def _is_sitemap_ns(uri: str) -> bool:
    u = uri.strip().lower().rstrip("/")
    for scheme in ("http://", "https://"):
        if u.startswith(scheme):
            u = u[len(scheme) :]
            break
    return u in _SITEMAP_NAMESPACES


def _is_http_url(loc: str) -> bool:
    head = loc[:8].lower()
    return head.startswith(("http://", "https://")) and len(loc) > len("http://")


class _Collector:
    """Shared sink for entries, counters and findings; a stop finding ends all further parsing."""

    __slots__ = ("entries", "findings", "kind", "limits", "out", "skipped", "stopped")

    def __init__(self, limits: SitemapLimits) -> None:
        self.limits = limits
        self.out: list[SitemapEntry] = []
        self.entries = 0
        self.skipped = 0
        self.findings: list[SitemapFinding] = []
        self.kind = SitemapKind.UNKNOWN
        self.stopped = False

    def stop(self, code: str, detail: str, position: int | None) -> None:
        if not self.stopped:
            self.stopped = True
            self.findings.append(SitemapFinding(code, detail, position))

    def emit(
        self,
        kind: Literal["url", "sitemap"],
        loc: str | None,
        lastmod: str | None,
        changefreq: str | None,
        priority: str | None,
        position: int | None,
        alternates: tuple[tuple[str, str], ...] = (),
    ) -> None:
        if loc is None or len(loc) > self.limits.max_loc_length or not _is_http_url(loc):
            self.skipped += 1
            return
        if self.entries >= self.limits.max_urls:
            self.stop(
                ALERT_SITEMAP_TOO_MANY_URLS,
                f"more than {self.limits.max_urls} entries; the rest is ignored",
                position,
            )
            return
        self.entries += 1
        self.out.append(SitemapEntry(loc, lastmod, kind, changefreq, priority, alternates))


class _XmlSink:
    """Feeds expat and turns `<url>`/`<sitemap>` records into entries; other namespaces are ignored."""

    __slots__ = (
        "_alternates",
        "_base",
        "_child",
        "_depth",
        "_fed",
        "_field",
        "_in_record",
        "_last_event",
        "_names",
        "_out",
        "_overflow",
        "_p",
        "_record",
        "_text",
        "_text_len",
    )

    def __init__(self, out: _Collector, base: int) -> None:
        self._out = out
        self._base = base
        self._fed = 0
        self._last_event = 0
        self._depth = 0
        self._child: Literal["url", "sitemap"] | None = None
        self._in_record = False
        self._record: dict[str, str | None] = {}
        self._alternates: list[tuple[str, str]] = []
        self._field: str | None = None
        self._text: list[str] = []
        self._text_len = 0
        self._overflow = False
        self._names: dict[str, tuple[bool, str]] = {}
        p = ParserCreate(namespace_separator=" ")
        p.SetParamEntityParsing(_XML_PARAM_ENTITY_PARSING_NEVER)
        p.buffer_text = False
        p.StartDoctypeDeclHandler = self._doctype
        p.EntityDeclHandler = self._entity
        p.UnparsedEntityDeclHandler = self._entity
        p.ExternalEntityRefHandler = self._external_entity
        p.StartElementHandler = self._start
        p.EndElementHandler = self._end
        p.CharacterDataHandler = self._chars
        p.CommentHandler = self._mark
        p.ProcessingInstructionHandler = self._pi
        self._p: _ExpatParser | None = p

    @property
    def buffered_bytes(self) -> int:
        """Bytes expat holds in an unfinished token, plus the text gathered for the current field."""
        return (self._fed - self._last_event) + self._text_len

    def push(self, data: bytes) -> None:
        for i in range(0, len(data), PIECE_BYTES):
            if self._p is None or self._out.stopped:
                return
            piece = data[i : i + PIECE_BYTES]
            self._fed += len(piece)
            self._parse(piece, final=False)
            pending = self._fed - self._last_event
            if self._p is not None and pending > self._out.limits.max_token_bytes:
                self._fail(
                    ALERT_SITEMAP_MALFORMED,
                    f"a single XML token exceeds {self._out.limits.max_token_bytes} bytes",
                    self._base + self._last_event,
                )

    def finish(self) -> None:
        if self._p is not None and not self._out.stopped:
            self._parse(b"", final=True)
        self._p = None

    def _parse(self, data: bytes, *, final: bool) -> None:
        p = self._p
        assert p is not None
        try:
            p.Parse(data, final)
        except _Stop:
            self._p = None
        except ExpatError as exc:
            self._fail(
                ALERT_SITEMAP_MALFORMED,
                f"line {exc.lineno} column {exc.offset}: {ErrorString(exc.code)}",
                self._base + p.ErrorByteIndex,
            )
        except Exception as exc:  # expat's codec layer can raise on exotic encodings
            self._fail(ALERT_SITEMAP_MALFORMED, f"{type(exc).__name__}: {exc}", None)

    def _fail(self, code: str, detail: str, position: int | None) -> None:
        self._out.stop(code, detail, position)
        self._p = None

    def _here(self) -> int:
        p = self._p
        return self._base + (p.CurrentByteIndex if p is not None else self._fed)

    def _halt(self, code: str, detail: str) -> None:
        self._out.stop(code, detail, self._here())
        raise _Stop

    def _mark(self, *_args: object) -> None:
        if self._p is not None:
            self._last_event = self._p.CurrentByteIndex

    def _pi(self, _target: str, _data: str) -> None:
        self._mark()

    def _doctype(self, name: str, _sys_id: str | None, _pub_id: str | None, _internal: bool) -> None:
        if name.strip().lower() == "html":
            self._halt(ALERT_SITEMAP_NOT_A_SITEMAP, "HTML document, not a sitemap")
        self._halt(
            ALERT_SITEMAP_DTD_REJECTED, f"DOCTYPE {name[:64]!r} refused; DTDs and entities are not allowed"
        )

    def _entity(self, name: str, *_args: object) -> None:
        self._halt(ALERT_SITEMAP_DTD_REJECTED, f"ENTITY {name[:64]!r} refused")

    def _external_entity(self, *_args: object) -> int:
        self._halt(ALERT_SITEMAP_DTD_REJECTED, "external entity reference refused")
        return 0  # pragma: no cover - _halt raises

    def _split(self, name: str) -> tuple[bool, str]:
        hit = self._names.get(name)
        if hit is None:
            uri, _, local = name.rpartition(" ")
            hit = (_is_sitemap_ns(uri), local)
            if len(self._names) < _NAME_CACHE_MAX:
                self._names[name] = hit
        return hit

    def _start(self, name: str, _attrs: dict[str, str]) -> None:
        self._mark()
        self._depth += 1
        depth = self._depth
        if depth == 1:
            self._root(name)
        elif depth == 2:
            in_ns, local = self._split(name)
            if in_ns and local == self._child:
                self._in_record = True
                self._record = {}
                self._alternates = []
        elif depth == 3 and self._in_record:
            if name == f"{_XHTML_NS} link":
                self._alternate(_attrs)
                return
            in_ns, local = self._split(name)
            if in_ns and local in _RECORD_FIELDS and local not in self._record:
                self._field = local
                self._text = []
                self._text_len = 0
                self._overflow = False

    def _alternate(self, attrs: dict[str, str]) -> None:
        """An `<xhtml:link rel="alternate" hreflang=".." href="..">` of the current `<url>`."""
        rel = attrs.get("rel", "").lower().split()
        lang, href = attrs.get("hreflang", "").strip(), attrs.get("href", "").strip()
        cap = self._out.limits.max_loc_length
        if (
            "alternate" in rel
            and lang
            and href
            and len(href) <= cap
            and len(self._alternates) < MAX_ALTERNATES
        ):
            self._alternates.append((lang[:64].lower(), href))

    def _root(self, name: str) -> None:
        in_ns, local = self._split(name)
        if in_ns and local == "urlset":
            self._out.kind = SitemapKind.URLSET
            self._child = "url"
        elif in_ns and local == "sitemapindex":
            self._out.kind = SitemapKind.INDEX
            self._child = "sitemap"
        else:
            shown = name.replace(" ", "}", 1) if " " in name else name
            self._halt(
                ALERT_SITEMAP_NOT_A_SITEMAP, f"root element {shown[:128]!r} is not urlset or sitemapindex"
            )

    def _chars(self, data: str) -> None:
        self._mark()
        if self._field is None or self._depth != 3 or self._overflow:
            return
        self._text_len += len(data)
        cap = self._out.limits.max_loc_length if self._field == "loc" else self._out.limits.max_field_length
        # Surrounding whitespace is allowed, so only give up well past the cap.
        if self._text_len > cap + 256:
            self._overflow = True
            self._text = []
            self._text_len = 0
        else:
            self._text.append(data)

    def _end(self, _name: str) -> None:
        self._mark()
        depth = self._depth
        self._depth -= 1
        if depth == 3 and self._field is not None:
            value = None if self._overflow else "".join(self._text).strip()
            field = self._field
            cap = self._out.limits.max_loc_length if field == "loc" else self._out.limits.max_field_length
            if value is not None and (len(value) > cap or (field != "loc" and not value)):
                value = None
            self._record[field] = value
            self._field = None
            self._text = []
            self._text_len = 0
        elif depth == 2 and self._in_record:
            self._in_record = False
            r = self._record
            assert self._child is not None
            self._out.emit(
                self._child,
                r.get("loc"),
                r.get("lastmod"),
                r.get("changefreq"),
                r.get("priority"),
                self._here(),
                tuple(self._alternates),
            )
            if self._out.stopped:
                raise _Stop


class _TextSink:
    """Plain-text sitemap: one absolute URL per line, UTF-8; lines are held only up to the loc limit."""

    __slots__ = ("_discard_url", "_discarding", "_line", "_line_start", "_out", "_pos", "url_lines")

    def __init__(self, out: _Collector, base: int) -> None:
        self._out = out
        self._line = bytearray()
        self._discarding = False
        self._discard_url = False
        self._pos = base
        self._line_start = base
        self.url_lines = 0

    @property
    def buffered_bytes(self) -> int:
        return len(self._line)

    def push(self, data: bytes) -> None:
        parts = data.split(b"\n")
        for part in parts[:-1]:
            if self._out.stopped:
                return
            if self._discarding:
                self._discarding = False
                self._line.clear()
                self._skip_long()
            else:
                self._line += part
                self._take(bytes(self._line))
                self._line.clear()
            self._pos += len(part) + 1
            self._line_start = self._pos
        if self._out.stopped:
            return
        tail = parts[-1]
        self._pos += len(tail)
        if not self._discarding:
            self._line += tail
            if len(self._line) > self._out.limits.max_loc_length + 256:
                self._discarding = True
                self._discard_url = _is_http_url(self._line[:16].decode("latin-1").lstrip())
                self._line.clear()

    def finish(self) -> None:
        if self._out.stopped:
            return
        if self._discarding:
            self._skip_long()
        elif self._line:
            self._take(bytes(self._line))
        self._line.clear()

    def _skip_long(self) -> None:
        if self._discard_url:
            self.url_lines += 1
        self._out.skipped += 1

    def _take(self, raw: bytes) -> None:
        line = raw.decode("utf-8", errors="replace").strip()
        if not line:
            return
        if _is_http_url(line):
            self.url_lines += 1
        self._out.emit("url", line, None, None, None, self._line_start)


class SitemapParser:
    """Push parser for one sitemap document: `feed()` bytes as they arrive, then `close()` for the summary.

    Gzip is recognised by its magic bytes whatever the name or Content-Type said; XML and plain-text
    sitemaps are told apart by the first non-blank byte. Memory stays flat: at most a piece of
    64 KiB plus one unfinished entry is held between calls (see `buffered_bytes`).
    """

    def __init__(self, limits: SitemapLimits | None = None) -> None:
        self._limits = limits if limits is not None else SitemapLimits()
        self._out = _Collector(self._limits)
        self._inflaters: list[Inflater] = []
        self._head = bytearray()
        self._sniffed = False
        self._lead = bytearray()
        self._bom_checked = False
        self._sink: _XmlSink | _TextSink | None = None
        self._bytes_in = 0
        self._bytes_out = 0
        self._result: SitemapResult | None = None

    @property
    def limits(self) -> SitemapLimits:
        return self._limits

    @property
    def buffered_bytes(self) -> int:
        """Bytes held between calls in all internal buffers; bounded whatever the document size."""
        held = len(self._head) + len(self._lead) + sum(i.buffered_bytes for i in self._inflaters)
        if self._sink is not None:
            held += self._sink.buffered_bytes
        return held

    def feed(self, chunk: bytes | bytearray | memoryview) -> list[SitemapEntry]:
        """Consume the next chunk of the response body; return the entries it completed."""
        if self._result is not None:
            raise RuntimeError("SitemapParser.feed() called after close()")
        data = bytes(chunk)
        self._bytes_in += len(data)
        self._ingest(data, 0)
        return self._drain()

    def close(self) -> SitemapResult:
        """Finish the document (flush gzip, end expat) and return the summary; idempotent."""
        if self._result is not None:
            return self._result
        out = self._out
        level = 0
        while not out.stopped:
            if level == len(self._inflaters):
                self._flush_head()
                break
            inflater = self._inflaters[level]
            for piece in inflater.finish():
                self._ingest(piece, level + 1)
                if out.stopped:
                    break
            if inflater.error is not None:
                out.stop(ALERT_SITEMAP_MALFORMED, inflater.error, self._bytes_out)
            level += 1
        if not out.stopped and not self._bom_checked and self._lead:
            self._bom_checked = True
            lead = bytes(self._lead)
            self._lead.clear()
            self._start_content(lead)
        if self._sink is not None:
            self._sink.finish()
        self._finish_kind()
        findings = list(out.findings)
        if out.skipped:
            findings.append(
                SitemapFinding(
                    ALERT_SITEMAP_INVALID_ENTRIES,
                    f"{out.skipped} entries skipped: missing, non-http(s) or over-long loc "
                    f"(limit {self._limits.max_loc_length})",
                )
            )
        self._result = SitemapResult(
            kind=out.kind,
            entries=out.entries,
            skipped=out.skipped,
            compressed=bool(self._inflaters),
            bytes_in=self._bytes_in,
            bytes_decompressed=self._bytes_out,
            complete=not out.stopped,
            findings=tuple(findings),
            tail=tuple(self._drain()),
        )
        self._sink = None
        self._inflaters = []
        return self._result

    def _drain(self) -> list[SitemapEntry]:
        if not self._out.out:
            return []
        done = self._out.out
        self._out.out = []
        return done

    def _finish_kind(self) -> None:
        out = self._out
        if isinstance(self._sink, _TextSink):
            if self._sink.url_lines:
                out.kind = SitemapKind.TEXT
            elif not out.stopped:
                out.stop(ALERT_SITEMAP_NOT_A_SITEMAP, "no XML and no line that is an http(s) URL", 0)
        elif self._sink is None and not out.stopped:
            out.stop(ALERT_SITEMAP_MALFORMED, "empty document", 0)

    def _ingest(self, data: bytes, level: int) -> None:
        """Route bytes that are the output of gzip layer `level - 1` (the raw body when level is 0)."""
        if self._out.stopped or not data:
            return
        if level < len(self._inflaters):
            inflater = self._inflaters[level]
            for piece in inflater.push(data):
                self._ingest(piece, level + 1)
                if self._out.stopped:
                    return
            if inflater.error is not None:
                self._out.stop(ALERT_SITEMAP_MALFORMED, inflater.error, self._bytes_out)
            return
        if not self._sniffed:
            self._head += data
            if len(self._head) < len(GZIP_MAGIC):
                return
            head = bytes(self._head)
            self._head.clear()
            if head.startswith(GZIP_MAGIC) and len(self._inflaters) < _MAX_GZIP_LAYERS:
                self._inflaters.append(Inflater())
                self._ingest(head, level)
                return
            self._sniffed = True
            data = head
        self._content(data)

    def _flush_head(self) -> None:
        if not self._sniffed and self._head:
            head = bytes(self._head)
            self._head.clear()
            self._sniffed = True
            self._content(head)

    def _content(self, data: bytes) -> None:
        """Count decoded bytes against the caps, then hand them to the XML or text sink."""
        limits = self._limits
        room = limits.max_uncompressed_bytes - self._bytes_out
        over = len(data) > room
        if over:
            data = data[:room]
        self._bytes_out += len(data)
        if self._sink is None:
            self._start_content(data)
        elif data:
            self._sink.push(data)
        if self._out.stopped:
            return
        if over:
            self._out.stop(
                ALERT_SITEMAP_TOO_LARGE,
                f"more than {limits.max_uncompressed_bytes} bytes once decompressed",
                limits.max_uncompressed_bytes,
            )
        elif (
            self._inflaters
            and self._bytes_out > limits.ratio_grace_bytes
            and self._bytes_out > limits.max_compression_ratio * self._bytes_in
        ):
            self._out.stop(
                ALERT_SITEMAP_TOO_LARGE,
                f"compression ratio above {limits.max_compression_ratio:g} (gzip bomb)",
                self._bytes_out,
            )

    def _start_content(self, data: bytes) -> None:
        """Drop a UTF-8 BOM and leading blanks, then pick the sink from the first significant byte."""
        buf = bytes(self._lead) + data
        self._lead.clear()
        if not self._bom_checked:
            if len(buf) < len(_UTF8_BOM) and _UTF8_BOM.startswith(buf):
                self._lead += buf
                return
            self._bom_checked = True
            if buf.startswith(_UTF8_BOM):
                buf = buf[len(_UTF8_BOM) :]
        body = buf.lstrip(_XML_SPACE)
        if not body:
            return
        base = self._bytes_out - len(body)
        if body.startswith(b"<"):
            self._sink = _XmlSink(self._out, base)
        else:
            self._sink = _TextSink(self._out, base)
        self._sink.push(body)
