"""Options several command modules share: `--json`, and an aggregate metric of the catalogue
(checked, completed from schemas/metrics.py)."""

from __future__ import annotations

from typing import Annotated

import typer

from schemas.metrics import metrics_of

JsonFlag = Annotated[bool, typer.Option("--json", help="print the API's JSON instead")]
AGGREGATE_METRICS = [m.name for m in metrics_of("aggregate")]


def aggregate_metric(name: str) -> str:
    """Typer callback: `name` if it is an aggregate metric, else a usage error listing them."""
    if name not in AGGREGATE_METRICS:
        raise typer.BadParameter(
            f"{name!r} is not an aggregate metric; one of: " + ", ".join(AGGREGATE_METRICS)
        )
    return name


def complete_aggregate_metric(incomplete: str) -> list[str]:
    return [m for m in AGGREGATE_METRICS if m.startswith(incomplete)]
