"""A campaign's figures (GET /v1/campaigns/{id}/report): the metric over time, one series per
path (and `by` value), and the same values by hour of day in the schedule's time zone — seed
000 compares its Internet runs across times of day, seed 004 reports E over runs at random
times of day and night."""

from __future__ import annotations

from collections import defaultdict
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from ccbench.plots.model import Axis, FigureData, Panel, Trace, scaled
from schemas.metrics import METRICS


def _series_name(point: dict[str, Any]) -> str:
    group = point.get("group")
    return str(point["path"]) + (f" · {group}" if group is not None else "")


def campaign_figure_data(report: dict[str, Any]) -> list[FigureData]:
    """Over time and by hour of day; no figure without a value."""
    metric = METRICS[report["metric"]]
    values = [p["value"] for p in report["occurrences"] if p["value"] is not None]
    label, factor = scaled(metric, values)
    zone = ZoneInfo(report["timezone"])
    over_time: dict[str, tuple[list[Any], list[float | None]]] = defaultdict(lambda: ([], []))
    by_hour: dict[str, tuple[list[Any], list[float | None]]] = defaultdict(lambda: ([], []))
    for point in report["occurrences"]:
        if point["value"] is None or point["path"] is None:
            continue
        name = _series_name(point)
        due = datetime.fromisoformat(point["due_at"])
        over_time[name][0].append(due.isoformat())
        over_time[name][1].append(point["value"] * factor)
        local = due.astimezone(zone)
        by_hour[name][0].append(round(local.hour + local.minute / 60, 2))
        by_hour[name][1].append(point["value"] * factor)
    if not over_time:
        return []
    subtitle = f"campaign {report['campaign_id'][:8]} · {len(report['occurrences'])} occurrences"
    y = Axis(label)
    return [
        FigureData("over-time", f"{metric.label} over time", subtitle, Axis("occurrence", "date"),
                   [Panel(y, [Trace(n, *xy, style="points")
                              for n, xy in sorted(over_time.items())])],
                   legend_title="path"),
        FigureData("by-hour", f"{metric.label} by time of day", subtitle,
                   Axis(f"hour of day ({report['timezone']})", range=(0.0, 24.0),
                        ticks=(0, 3, 6, 9, 12, 15, 18, 21, 24)),
                   [Panel(y, [Trace(n, *xy, style="markers")
                              for n, xy in sorted(by_hour.items())])],
                   legend_title="path"),
    ]  # fmt: skip
