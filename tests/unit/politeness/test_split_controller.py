"""`react` + `close_window` (what the DynamoDB store applies separately) equal `observe` step by step."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from seolens_core.politeness import (
    AimdSettings,
    HostPoliteness,
    Observation,
    Window,
    close_window,
    observe,
    react,
)


@pytest.mark.parametrize("seed", range(20))
def test_react_then_close_window_equals_observe(seed: int) -> None:
    rng = random.Random(seed)
    settings = AimdSettings(window=10, incident_cooldown_s=0.5)
    whole = split = HostPoliteness.initial(settings)
    entries: list[Observation] = []
    now = 1_000.0
    for _ in range(200):
        now += rng.uniform(0.01, 2.0)
        status = rng.choice([200, 200, 200, 200, 503, 429, 500, None])
        obs = Observation(
            status=status,
            ttfb_ms=None if status is None else rng.uniform(5, 900),
            network_error=status is None,
            retry_after=rng.choice([None, None, "2"]) if status in (429, 503) else None,
        )
        whole = observe(whole, obs, now, settings)
        split = react(split, obs, now, settings)
        entries.append(obs)
        if len(entries) == settings.window:
            window = Window(
                n=len(entries),
                errors=sum(o.is_error for o in entries),
                ttfb_ms=tuple(o.ttfb_ms for o in entries if o.ttfb_ms is not None),
            )
            split = close_window(split, window, now, settings)
            entries.clear()
        assert replace(split, window=whole.window) == whole
        assert whole.window.n == len(entries)
