"""`ccbench campaign ...`: scheduled measurement campaigns over the REST API (create, list,
show, pause, resume, edit, stop, report, export)."""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from cli.client import ClientError, client, load_document
from cli.ids import completion, resolve
from cli.options import (
    JsonFlag,
    aggregate_metric,
    complete_aggregate_metric,
)
from cli.render import console, print_json, short, status_text, table, team_text, when
from schemas.campaign import CampaignState
from schemas.metrics import BYTE, METRICS, format_quantity
from schemas.units import shown_duration

app = typer.Typer(name="campaign", help="Scheduled measurement campaigns (the hosts testbed).")

CampaignId = Annotated[
    str,
    typer.Argument(
        help="the campaign's id, or any unique prefix of it (`ccbench campaign list`)",
        autocompletion=completion("campaign"),
        show_default=False,
    ),
]
# Occurrences `show` lists (the newest; the API pages the rest).
SHOWN_OCCURRENCES = 20


def _schedule_text(schedule: dict[str, Any]) -> str:
    if schedule["kind"] == "interval":
        every = schedule["every"]  # seconds as stored, or as a spec writes it
        return f"every {shown_duration(every) if isinstance(every, int | float) else every}"
    if schedule["kind"] == "cron":
        return f"cron '{schedule['expression']}' ({schedule.get('timezone', 'UTC')})"
    windows = ", ".join(f"{w['start']}-{w['end']}" for w in schedule.get("windows", []))
    count = (
        f"{schedule['per_day']} a day" if schedule.get("per_day") else
        f"{schedule['per_window']} per window a day"
    )  # fmt: skip
    return f"random, {count} in {windows} ({schedule.get('timezone', 'UTC')})"


def _print_detail(found: dict[str, Any]) -> None:
    out = console()
    out.print(f"campaign {found['id']} ({found['name']}): ", status_text(found["state"]), sep="")
    out.print(f"  schedule: {_schedule_text(found['schedule'])}")
    spec = found["spec"]
    bounds = [f"start {when(spec.get('start'))}"]
    if spec.get("stop"):
        bounds.append(f"stop {when(spec['stop'])}")
    if spec.get("count"):
        bounds.append(f"{spec['count']} occurrences")
    out.print(f"  {', '.join(bounds)}; repetitions per occurrence {spec.get('repetitions', 1)}")
    out.print(f"  fired {found['fired']}, missed {found['missed']}, failed {found['failed']}")
    if found["upcoming"]:
        out.print("  next: " + ", ".join(when(t) for t in found["upcoming"]))
    for failure in found["recent_failures"]:
        out.print(f"  failed at {when(failure['due_at'])}: {failure['error']}")


@app.command()
def create(
    file: Annotated[
        Path,
        typer.Argument(
            help="the campaign spec, YAML or JSON (see schemas/examples/campaigns/)",
            exists=True,
            dir_okay=False,
            show_default=False,
        ),
    ],
    as_json: JsonFlag = False,
) -> None:
    """Create a campaign: its experiment, hosts and schedule are checked now; its first
    occurrence fires at the time shown."""
    created = client().post("/v1/campaigns", json=load_document(file))
    if as_json:
        print_json(created)
    else:
        _print_detail(created)


@app.command("list")
def list_(
    state: Annotated[
        CampaignState | None,
        typer.Option(help="only campaigns in this state", show_default=False),
    ] = None,
    page: Annotated[int, typer.Option(min=1, help="page number")] = 1,
    page_size: Annotated[int, typer.Option(min=1, max=500, help="campaigns per page")] = 50,
    as_json: JsonFlag = False,
) -> None:
    """The campaigns your team may read (its own, shared with it, public), newest first."""
    params: dict[str, Any] = {"page": page, "page_size": page_size}
    if state:
        params["state"] = state.value
    found = client().get("/v1/campaigns", params=params)
    if as_json:
        print_json(found)
        return
    grid = table("id", "name", "team", "state", "schedule", "next", "fired", "missed", "failed",
                 right=("fired", "missed", "failed"))  # fmt: skip
    for item in found["items"]:
        grid.add_row(short(item["id"]), item["name"], team_text(item), status_text(item["state"]),
                     _schedule_text(item["schedule"]), when(item["next_due_at"]),
                     str(item["fired"]), str(item["missed"]), str(item["failed"]))  # fmt: skip
    out = console()
    out.print(grid)
    pages = max(1, -(-found["total"] // page_size))
    out.print(f"{found['total']} campaign(s), page {page} of {pages}")


@app.command()
def show(campaign: CampaignId, as_json: JsonFlag = False) -> None:
    """A campaign: schedule, counts, next instants, and its newest occurrences."""
    api = client()
    campaign_id = resolve("campaign", campaign)
    found = api.get(f"/v1/campaigns/{campaign_id}")
    occurrences = api.get(f"/v1/campaigns/{campaign_id}/occurrences",
                          params={"page_size": SHOWN_OCCURRENCES})  # fmt: skip
    if as_json:
        print_json({**found, "occurrences": occurrences})
        return
    _print_detail(found)
    grid = table("due", "state", "experiment", "path", "status", "runs", right=("runs",))
    for occurrence in occurrences["items"]:
        experiments = occurrence["experiments"] or [None]
        for experiment in experiments:
            grid.add_row(
                when(occurrence["due_at"]),
                status_text(occurrence["state"]),
                short(experiment["id"]) if experiment else "-",
                (experiment["path"] or "-") if experiment else (occurrence["error"] or ""),
                status_text(experiment["status"]) if experiment else "",
                str(experiment["run_count"]) if experiment else "",
            )
    out = console()
    out.print(grid)
    out.print(f"{len(occurrences['items'])} of {occurrences['total']} occurrence(s)")


def _state_change(verb: str, campaign: str) -> None:
    campaign_id = resolve("campaign", campaign)
    changed = client().post(f"/v1/campaigns/{campaign_id}/{verb}")
    console().print(f"campaign {short(changed['id'])} ({changed['name']}): ",
                    status_text(changed["state"]), sep="")  # fmt: skip


@app.command()
def pause(campaign: CampaignId) -> None:
    """Pause: no occurrence fires until `resume` (those due meanwhile are missed)."""
    _state_change("pause", campaign)


@app.command()
def resume(campaign: CampaignId) -> None:
    """Resume a paused campaign from now."""
    _state_change("resume", campaign)


@app.command()
def stop(campaign: CampaignId) -> None:
    """Stop for good: no more occurrences; the experiments already run stay."""
    _state_change("stop", campaign)


def _instant_or_none(option: str, value: str | None) -> str | None:
    if value is None or value.lower() == "none":
        return None
    try:
        instant = datetime.fromisoformat(value)
    except ValueError as exc:
        raise ClientError(f"{option} {value!r}: not an ISO 8601 time (or 'none')") from exc
    if instant.tzinfo is None:
        raise ClientError(f"{option} {value!r}: give a time zone, e.g. {value}Z or {value}+01:00")
    return instant.isoformat()


@app.command()
def edit(
    campaign: CampaignId,
    every: Annotated[
        str | None, typer.Option(help="new schedule: every DURATION, e.g. 6h", show_default=False)
    ] = None,
    cron: Annotated[
        str | None,
        typer.Option(
            help="new schedule: a cron expression, e.g. '0 */6 * * *'", show_default=False
        ),
    ] = None,
    timezone: Annotated[
        str, typer.Option(help="the cron expression's time zone (IANA name)")
    ] = "UTC",
    schedule_file: Annotated[
        Path | None,
        typer.Option(
            help="new schedule from a YAML/JSON file (any kind, e.g. random)",
            exists=True,
            dir_okay=False,
            show_default=False,
        ),
    ] = None,  # fmt: skip
    stop_at: Annotated[
        str | None,
        typer.Option(
            "--stop", help="new stop time (ISO 8601 with zone) or 'none'", show_default=False
        ),
    ] = None,  # fmt: skip
    count: Annotated[
        str | None,
        typer.Option(help="new number of occurrences, or 'none'", show_default=False),
    ] = None,
    catch_up: Annotated[
        Literal["skip", "run_once"] | None,
        typer.Option(help="what a late scheduler does with missed occurrences", show_default=False),
    ] = None,
    description: Annotated[str | None, typer.Option(help="new description")] = None,
    as_json: JsonFlag = False,
) -> None:
    """Change a campaign's schedule, stop, count, catch-up or description, from now on."""
    schedules = [s for s in (every, cron, schedule_file) if s is not None]
    if len(schedules) > 1:
        raise ClientError("give one of --every, --cron and --schedule-file")
    changes: dict[str, Any] = {}
    if every is not None:
        changes["schedule"] = {"kind": "interval", "every": every}
    elif cron is not None:
        changes["schedule"] = {"kind": "cron", "expression": cron, "timezone": timezone}
    elif schedule_file is not None:
        changes["schedule"] = load_document(schedule_file)
    if stop_at is not None:
        changes["stop"] = _instant_or_none("--stop", stop_at)
    if count is not None:
        if count.lower() == "none":
            changes["count"] = None
        elif count.isdigit():
            changes["count"] = int(count)
        else:
            raise ClientError(f"--count {count!r}: a whole number or 'none'")
    if catch_up is not None:
        changes["catch_up"] = catch_up
    if description is not None:
        changes["description"] = description
    if not changes:
        raise ClientError("nothing to change: give at least one option (see -h)")
    campaign_id = resolve("campaign", campaign)
    changed = client().request("PATCH", f"/v1/campaigns/{campaign_id}", json=changes)
    if as_json:
        print_json(changed)
    else:
        _print_detail(changed)


@app.command()
def report(
    campaign: CampaignId,
    metric: Annotated[
        str,
        typer.Option(
            help="the aggregate metric, e.g. goodput_bps or equivalence_ratio",
            callback=aggregate_metric,
            autocompletion=complete_aggregate_metric,
        ),
    ] = "goodput_bps",
    by: Annotated[
        str | None,
        typer.Option(
            help="a matrix axis of the campaign's experiment: a series per value",
            show_default=False,
        ),
    ] = None,  # fmt: skip
    as_json: JsonFlag = False,
) -> None:
    """Results over time: per path (and `by` value) the median ± SIQR over all occurrences and
    per time-of-day window, then every occurrence's value."""
    campaign_id = resolve("campaign", campaign)
    params = {"metric": metric, **({"by": by} if by else {})}
    found = client().get(f"/v1/campaigns/{campaign_id}/report", params=params)
    if as_json:
        print_json(found)
        return
    unit = METRICS[found["metric"]].unit
    out = console()
    out.print(f"campaign {short(found['campaign_id'])} ({found['name']}): {found['label']}, "
              f"median ± SIQR over occurrences; windows in {found['timezone']}")  # fmt: skip
    summary = table("path", *(["group"] if found["by"] else []), "window", "n", "median ± SIQR",
                    right=("n",))  # fmt: skip
    for series in found["series"]:
        group = [str(series.get("group"))] if found["by"] else []
        summary.add_row(series["path"], *group, "all", str(series["n"]),
                        format_quantity(series["median"], unit, series["siqr"]))  # fmt: skip
        for window in series["windows"]:
            summary.add_row("", *([""] if found["by"] else []), window["window"],
                            str(window["n"]),
                            format_quantity(window["median"], unit, window["siqr"]))  # fmt: skip
    out.print(summary)
    points = table("due", "state", "path", *(["group"] if found["by"] else []), "experiment",
                   "runs done", found["label"], right=("runs done", found["label"]))  # fmt: skip
    for point in found["occurrences"]:
        points.add_row(
            when(point["due_at"]),
            status_text(point["state"]),
            point["path"] or "-",
            *([str(point.get("group"))] if found["by"] else []),
            short(point["experiment_id"]) if point["experiment_id"] else "-",
            str(point["runs_done"]),
            format_quantity(point["value"], unit) if point["error"] is None else point["error"],
        )
    out.print(points)


@app.command()
def export(
    campaign: CampaignId,
    file_format: Annotated[
        Literal["csv", "parquet"], typer.Option("--format", help="file format")
    ] = "csv",
    output: Annotated[
        Path | None,
        typer.Option(
            "-o",
            "--output",
            help="write to this file (default: stdout for CSV)",
            dir_okay=False,
            show_default=False,
        ),
    ] = None,  # fmt: skip
) -> None:
    """Every run of every occurrence, the occurrence time as a column: CSV or Parquet."""
    campaign_id = resolve("campaign", campaign)
    suffix = "export.csv" if file_format == "csv" else "export.parquet"
    data = client().download(f"/v1/campaigns/{campaign_id}/{suffix}")
    if output is None:
        if file_format == "parquet":
            raise ClientError("Parquet is binary: give -o FILE")
        typer.echo(data.decode(), nl=False)
        return
    output.write_bytes(data)
    console(stderr=True).print(f"wrote {output} ({format_quantity(len(data), BYTE)})")
