"""Retry-After parsing (RFC 9110 section 10.2.3) and the state's storage round trip."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seolens_core.politeness import (
    AimdSettings,
    CorruptState,
    HostPoliteness,
    Observation,
    Window,
    observe,
    parse_retry_after,
    release,
    reserve,
)

NOW = 784111777.0  # Sun, 06 Nov 1994 08:49:37 GMT, the RFC's example date


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("120", 120.0),
        (" 5 ", 5.0),
        ("0", 0.0),
        ("Sun, 06 Nov 1994 08:49:47 GMT", 10.0),  # IMF-fixdate
        ("Sunday, 06-Nov-94 08:50:37 GMT", 60.0),  # obsolete RFC 850 form
        ("Sun Nov  6 08:49:57 1994", 20.0),  # asctime: no zone, read as UTC
        ("Sun, 06 Nov 1994 08:49:27 GMT", 0.0),  # in the past
        (None, None),
        ("", None),
        ("garbage", None),
        ("1.5", None),
        ("-3", None),
        ("١٢", None),  # non-ASCII digits are not DIGIT
        ("Sun, 99 Foo 1994 08:49:37 GMT", None),
    ],
)
def test_parse_retry_after(value: str | None, expected: float | None) -> None:
    assert parse_retry_after(value, NOW) == expected


@given(st.text(max_size=40))
def test_parse_retry_after_never_raises(value: str) -> None:
    result = parse_retry_after(value, NOW)
    assert result is None or result >= 0


def busy_state() -> HostPoliteness:
    s = HostPoliteness.initial(AimdSettings(window=5))
    s, _ = reserve(s, NOW, "lease-a", 30.0, 5.0)
    s, _ = reserve(s, NOW, "lease-b", 30.0, 5.0)
    for status in (200, 500, 200, 429, 200, 200):
        s = observe(s, Observation(status=status, ttfb_ms=12.5), NOW, AimdSettings(window=5))
    s = observe(s, Observation(status=503, retry_after="30"), NOW + 1, AimdSettings(window=5))
    return release(s, "lease-a", None, NOW + 2)


def test_item_round_trip_through_json() -> None:
    s = busy_state()
    assert s.last_window is not None and s.block_reason is not None and s.leases
    item = json.loads(json.dumps(s.to_item()))
    assert HostPoliteness.from_item(item) == s


@given(
    delay=st.integers(0, 100_000),
    conc=st.integers(1, 64),
    ttfb=st.lists(st.floats(0, 1e6, allow_nan=False), max_size=50),
    baseline=st.none() | st.floats(0, 1e6, allow_nan=False),
    leases=st.dictionaries(st.text(min_size=1, max_size=8), st.floats(0, 2e9, allow_nan=False), max_size=4),
)
@settings(max_examples=50)
def test_item_round_trip_property(
    delay: int, conc: int, ttfb: list[float], baseline: float | None, leases: dict[str, float]
) -> None:
    s = HostPoliteness(
        delay_ms=delay,
        concurrency=conc,
        window=Window(n=len(ttfb), errors=0, ttfb_ms=tuple(ttfb)),
        baseline_ttfb_ms=baseline,
        leases=leases,
    )
    assert HostPoliteness.from_item(json.loads(json.dumps(s.to_item()))) == s


def _mutate(item: dict[str, Any], key: str, value: Any) -> dict[str, Any]:
    out = dict(item)
    if value is KeyError:
        del out[key]
    else:
        out[key] = value
    return out


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("format", 99),
        ("delay_ms", KeyError),
        ("delay_ms", "250"),
        ("delay_ms", 2.5),
        ("concurrency", 0),
        ("block_reason", "nap"),
        ("next_allowed_at", float("inf")),
        ("leases", ["a"]),
        ("window", {"n": 1}),
    ],
)
def test_from_item_rejects_what_it_did_not_write(key: str, value: Any) -> None:
    with pytest.raises(CorruptState):
        HostPoliteness.from_item(_mutate(busy_state().to_item(), key, value))
