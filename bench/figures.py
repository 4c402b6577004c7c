"""The one output format of every benchmark: a JSON line per figure."""

from __future__ import annotations

import json
from typing import Any


def figure(
    bench: str, name: str, value: float | None, unit: str, target: str | None = None
) -> None:
    line: dict[str, Any] = {
        "bench": bench,
        "figure": name,
        "value": None if value is None else round(value, 4),
        "unit": unit,
    }
    if target is not None:
        line["target"] = target
    print(json.dumps(line), flush=True)


def p95(values: list[float]) -> float:
    """The 95th percentile of timings (nearest rank)."""
    return sorted(values)[max(0, int(round(0.95 * len(values))) - 1)]
