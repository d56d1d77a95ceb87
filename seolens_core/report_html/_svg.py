"""Inline SVG charts, rendered in Python so the report needs no script to show them (pure, deterministic).

Every text and attribute value goes through `html.escape`; labels come from crawled sites and are hostile.
Each chart is an `<svg class="chart" data-chart=NAME>`; bars are `rect.bar` and series `path.series`, with
`data-label`/`data-value` attributes so tests (and people reading the source) can check them against the data.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

_W, _H = 460, 240
_LEFT, _RIGHT, _TOP, _BOTTOM = 52, 14, 16, 46


@dataclass(frozen=True, slots=True)
class Bar:
    label: str
    value: float
    color: str


def _a(value: object) -> str:
    """An attribute value, quoted and escaped."""
    return '"' + escape(str(value), quote=True) + '"'


def _fmt(value: float) -> str:
    if value == int(value):
        return f"{int(value):,}"
    return f"{value:,.2f}".rstrip("0").rstrip(".")


def nice_max(value: float) -> float:
    """Smallest 1/2/2.5/5 x 10^n that is >= value (1 for empty data), so axes get round ticks."""
    if value <= 0 or not math.isfinite(value):
        return 1.0
    exponent = math.floor(math.log10(value))
    for step in (1.0, 2.0, 2.5, 5.0, 10.0):
        candidate = step * 10.0**exponent
        if candidate >= value * (1 - 1e-12):
            return candidate
    return 10.0 ** (exponent + 1)  # pragma: no cover - the loop always returns


def _ticks(y_max: float) -> int:
    """Tick count giving round steps: 1, 2.5 and 5 x 10^n split in 5, 2 x 10^n in 4."""
    lead = y_max / 10.0 ** math.floor(math.log10(y_max))
    return 4 if abs(lead - 2.0) < 1e-9 else 5


def _grid(y_max: float, plot_h: float) -> list[str]:
    parts = []
    ticks = _ticks(y_max)
    for i in range(ticks + 1):
        value = y_max * i / ticks
        y = _TOP + plot_h - plot_h * i / ticks
        parts.append(f'<line class="grid" x1="{_LEFT}" x2="{_W - _RIGHT}" y1="{y:.1f}" y2="{y:.1f}"/>')
        parts.append(_text("tick", _LEFT - 6, y + 4, _fmt(value), anchor="end"))
    return parts


def _open(name: str, title: str, cls: str = "chart") -> str:
    return (
        f'<svg class={_a(cls)} data-chart={_a(name)} viewBox="0 0 {_W} {_H}" role="img"'
        f" aria-label={_a(title)}>"
        f"<title>{escape(title)}</title>"
    )


def _text(cls: str, x: float, y: float, text: str, *, anchor: str = "middle") -> str:
    return f'<text class="{cls}" x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}">{escape(text)}</text>'


def _empty(name: str, title: str) -> str:
    return _open(name, title, "chart empty") + _text("empty-note", _W / 2, _H / 2, "no data") + "</svg>"


def bar_chart(name: str, title: str, bars: Sequence[Bar], *, x_title: str = "", y_title: str = "") -> str:
    """Vertical bar chart with value labels on top of each bar."""
    if not bars:
        return _empty(name, title)
    plot_w, plot_h = _W - _LEFT - _RIGHT, _H - _TOP - _BOTTOM
    y_max = nice_max(max(b.value for b in bars))
    slot = plot_w / len(bars)
    width = max(2.0, min(56.0, slot * 0.72))
    label_every = max(1, math.ceil(len(bars) / 16))
    parts = [
        _open(name, title),
        *_grid(y_max, plot_h),
    ]
    for i, bar in enumerate(bars):
        h = plot_h * bar.value / y_max
        x = _LEFT + slot * i + (slot - width) / 2
        y = _TOP + plot_h - h
        cx = x + width / 2
        parts.append(
            f'<rect class="bar" data-label={_a(bar.label)} data-value={_a(_fmt(bar.value))} x="{x:.1f}" '
            f'y="{y:.1f}" width="{width:.1f}" height="{max(h, 1.0):.1f}" fill={_a(bar.color)}>'
            f"<title>{escape(bar.label)}: {escape(_fmt(bar.value))}</title></rect>"
        )
        if len(bars) <= 24:
            parts.append(_text("value", cx, y - 4, _fmt(bar.value)))
        if i % label_every == 0:
            label = bar.label if len(bar.label) <= 12 else bar.label[:11] + "\u2026"
            parts.append(_text("label", cx, _TOP + plot_h + 16, label))
    if x_title:
        parts.append(
            f'<text class="axis-title" x="{_LEFT + plot_w / 2:.1f}" y="{_H - 6}" text-anchor="middle">'
            f"{escape(x_title)}</text>"
        )
    if y_title:
        parts.append(
            f'<text class="axis-title" x="12" y="{_TOP + plot_h / 2:.1f}" text-anchor="middle" '
            f'transform="rotate(-90 12 {_TOP + plot_h / 2:.1f})">{escape(y_title)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def line_chart(
    name: str,
    title: str,
    points: Sequence[tuple[float, float]],
    *,
    color: str,
    step: bool = False,
    y_title: str = "",
    x_title: str = "seconds since first sample",
) -> str:
    """One series over time; `step` draws a step line (for integer levels like concurrency)."""
    pts = [(x, y) for x, y in points if math.isfinite(x) and math.isfinite(y)]
    if not pts:
        return _empty(name, title)
    pts.sort(key=lambda p: p[0])
    plot_w, plot_h = _W - _LEFT - _RIGHT, _H - _TOP - _BOTTOM
    x0, x1 = pts[0][0], pts[-1][0]
    span = (x1 - x0) or 1.0
    y_max = nice_max(max(y for _, y in pts))

    def sx(x: float) -> float:
        return _LEFT + plot_w * (x - x0) / span

    def sy(y: float) -> float:
        return _TOP + plot_h - plot_h * max(y, 0.0) / y_max

    d = [f"M{sx(pts[0][0]):.1f},{sy(pts[0][1]):.1f}"]
    prev_y = pts[0][1]
    for x, y in pts[1:]:
        if step:
            d.append(f"L{sx(x):.1f},{sy(prev_y):.1f}")
        d.append(f"L{sx(x):.1f},{sy(y):.1f}")
        prev_y = y
    if len(pts) == 1:
        d.append(f"L{_W - _RIGHT:.1f},{sy(pts[0][1]):.1f}")
    parts = [
        _open(name, title),
        *_grid(y_max, plot_h),
        f'<path class="series" data-points="{len(pts)}" d="{" ".join(d)}" fill="none" stroke={_a(color)} '
        f'stroke-width="2" stroke-linejoin="round"/>',
    ]
    for frac in (0.0, 0.5, 1.0):
        x = _LEFT + plot_w * frac
        parts.append(
            f'<text class="label" x="{x:.1f}" y="{_TOP + plot_h + 16:.1f}" text-anchor="middle">'
            f"{escape(_fmt(round(span * frac if x1 > x0 else 0.0, 1)))}</text>"
        )
    parts.append(
        f'<text class="axis-title" x="{_LEFT + plot_w / 2:.1f}" y="{_H - 6}" text-anchor="middle">'
        f"{escape(x_title)}</text>"
    )
    if y_title:
        parts.append(
            f'<text class="axis-title" x="12" y="{_TOP + plot_h / 2:.1f}" text-anchor="middle" '
            f'transform="rotate(-90 12 {_TOP + plot_h / 2:.1f})">{escape(y_title)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)
