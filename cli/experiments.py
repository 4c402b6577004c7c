"""Experiment commands, as a client of the REST API: submit, list, status, report, compare,
export, cancel, logs. Every id argument takes a unique prefix (cli/ids.py)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import quote

import typer

from ccbench.runstate import ExperimentStatus
from cli.client import Client, ClientError, client, load_document
from cli.ids import completion, resolve
from cli.options import (
    AGGREGATE_METRICS,
    JsonFlag,
    aggregate_metric,
    complete_aggregate_metric,
)
from cli.progress import follow
from cli.render import (
    console,
    print_json,
    print_report,
    runs_table,
    short,
    status_text,
    table,
    when,
)
from schemas.metrics import BYTE, KEY_METRICS, METRICS, format_quantity

PANEL = "Experiments"
app = typer.Typer()

# Metrics drawn against the matrix axes by `report --plot`: the key metrics.
PLOTTED_METRICS = tuple(m.name for m in KEY_METRICS)

ExperimentId = Annotated[
    str,
    typer.Argument(
        help="the experiment's id, or any unique prefix of it (`ccbench list` shows them)",
        autocompletion=completion("experiment"),
        show_default=False,
    ),
]
RunId = Annotated[
    str,
    typer.Argument(
        help="the run's id, or any unique prefix of it (`ccbench status EXPERIMENT` shows them)",
        autocompletion=completion("run"),
        show_default=False,
    ),
]


def _exit_unless_done(status: str) -> None:
    if status != "done":
        raise typer.Exit(1)


@app.command(rich_help_panel=PANEL)
def submit(
    file: Annotated[
        Path,
        typer.Argument(
            help="the experiment or matrix spec, YAML or JSON (see schemas/examples/)",
            exists=True,
            dir_okay=False,
            show_default=False,
        ),
    ],
    wait: Annotated[
        bool,
        typer.Option("--wait", help="follow the runs (live on a terminal), then print the report"),
    ] = False,
) -> None:
    """Submit an experiment or a matrix of them.

    With --wait, follow its runs and print its report; exit 1 unless it ends done."""
    api = client()
    created = api.post_once("/v1/experiments", load_document(file))
    out = console()
    out.print(
        f"experiment {created['id']} ({created['name']}): {created['run_count']} run(s) queued"
    )
    if not wait:
        return
    status = follow(api, created["id"], console(stderr=True))
    print_report(out, api.get(f"/v1/experiments/{created['id']}/report"))
    _exit_unless_done(status)


@app.command("list", rich_help_panel=PANEL)
def list_experiments(
    status: Annotated[
        ExperimentStatus | None,
        typer.Option(help="only experiments in this state", show_default=False),
    ] = None,
    tag: Annotated[str | None, typer.Option(help="only experiments with this tag")] = None,
    name: Annotated[
        str | None, typer.Option(help="only experiments whose name contains this")
    ] = None,
    page: Annotated[int, typer.Option(min=1, help="which page of results")] = 1,
    page_size: Annotated[int, typer.Option(min=1, max=200, help="experiments a page")] = 50,
    as_json: JsonFlag = False,
) -> None:
    """The team's experiments, newest first."""
    params: dict[str, Any] = {"page": page, "page_size": page_size}
    filters = {"status": status.value if status else None, "tag": tag, "name": name}
    params.update({k: v for k, v in filters.items() if v})
    found = client().get("/v1/experiments", params=params)
    out = console()
    if as_json:
        print_json(found)
        return
    grid = table("id", "name", "status", "runs", "tags", "created", right=("runs",))
    for item in found["items"]:
        grid.add_row(
            short(item["id"]),
            item["name"],
            status_text(item["status"]),
            str(item["run_count"]),
            ", ".join(item["tags"]),
            when(item["created_at"]),
        )
    if found["items"]:
        out.print(grid)
    first = (found["page"] - 1) * found["page_size"]
    shown = f"{first + 1}-{first + len(found['items'])} of " if found["items"] else ""
    console(stderr=True).print(f"{shown}{found['total']} experiment(s)")


@app.command(rich_help_panel=PANEL)
def status(
    experiment: ExperimentId,
    follow_: Annotated[
        bool,
        typer.Option("--follow", "-f", help="follow the runs until the experiment is final"),
    ] = False,
) -> None:
    """An experiment's status and its runs."""
    api = client()
    experiment_id = resolve("experiment", experiment)
    if follow_:
        _exit_unless_done(follow(api, experiment_id, console(stderr=True)))
        return
    detail = api.get(f"/v1/experiments/{experiment_id}")
    out = console()
    counts = ", ".join(f"{n} {s}" for s, n in sorted(detail["status_counts"].items()))
    out.print(f"experiment {detail['id']} ({detail['name']}): {detail['status']} ({counts})")
    out.print(runs_table(detail["runs"], detail["axes"]))


@app.command(rich_help_panel=PANEL)
def report(
    experiment: ExperimentId,
    as_json: JsonFlag = False,
    plot: Annotated[
        Path | None,
        typer.Option(
            metavar="DIR",
            help="also write figures (PNG, SVG, PDF) into DIR",
            file_okay=False,
            show_default=False,
        ),
    ] = None,
) -> None:
    """An experiment's report.

    Per run its flows, aggregate metrics, applied conditions and checks; per matrix point the
    key metrics over repetitions (median ± SIQR)."""
    api = client()
    experiment_id = resolve("experiment", experiment)
    found = api.get(f"/v1/experiments/{experiment_id}/report")
    out = console()
    if as_json:
        print_json(found)
    else:
        print_report(out, found)
    if plot:
        for path in plot_report(api, found, plot):
            console(stderr=True).print(f"wrote {path}")


def plot_report(api: Client, found: dict[str, Any], directory: Path) -> list[Path]:
    """Every figure of the experiment into `directory` (PNG, SVG and PDF, named by axis
    values): each finished run's, and with matrix axes each plotted metric against the first
    axis, a series per value of the second, with the scheme figures."""
    from ccbench.plots.figures import write_experiment_figures

    runs = {r["run_id"]: api.get(f"/v1/runs/{r['run_id']}") for r in found["runs"]
            if r["status"] == "done"}  # fmt: skip
    axes = found.get("axes") or []
    comparisons = []
    for metric in PLOTTED_METRICS if axes else ():
        params = {"metric": metric, "x": axes[0]}
        if len(axes) > 1:
            params["by"] = axes[1]
        comparisons.append(
            api.get(f"/v1/experiments/{found['experiment_id']}/compare", params=params)
        )
    submission = api.get(f"/v1/experiments/{found['experiment_id']}")["submission"]
    return write_experiment_figures(found, runs, comparisons, directory, submission)


@app.command(rich_help_panel=PANEL)
def compare(
    experiment: ExperimentId,
    metric: Annotated[
        str,
        typer.Option(
            help="the aggregate metric to compare: " + ", ".join(AGGREGATE_METRICS),
            callback=aggregate_metric,
            autocompletion=complete_aggregate_metric,
            show_default=False,
        ),
    ],
    x: Annotated[
        str,
        typer.Option("--x", help="the matrix axis on the x axis, e.g. topology.bottleneck.buffer"),
    ],
    by: Annotated[
        str | None,
        typer.Option(help="one series per value of this axis, e.g. 'flows[*].algorithm'"),
    ] = None,
    as_json: JsonFlag = False,
    plot: Annotated[
        Path | None,
        typer.Option(
            metavar="FILE",
            help="also draw it: FILE.png, .svg or .pdf, or all three without a suffix",
            dir_okay=False,
        ),
    ] = None,
) -> None:
    """One aggregate metric against a matrix axis, a series per value of another.

    Each point is the median ± SIQR over repetitions."""
    params = {"metric": metric, "x": x}
    if by:
        params["by"] = by
    experiment_id = resolve("experiment", experiment)
    result = client().get(f"/v1/experiments/{experiment_id}/compare", params=params)
    if plot:
        from ccbench.plots.figures import write_figure
        from ccbench.plots.matrix import comparison_figure_data

        for path in write_figure(comparison_figure_data(result), plot):
            console(stderr=True).print(f"wrote {path}")
    out = console()
    if as_json:
        print_json(result)
        return
    unit = METRICS[result["metric"]].unit
    out.print(f"{result['metric']} (median ± SIQR, n repetitions) against {result['x']}")
    for series in result["series"]:
        if result.get("by"):
            out.print(f"{result['by']} = {series['by']}")
        for point in series["points"]:
            shown = format_quantity(point["median"], unit, point["siqr"])
            out.print(f"  {result['x']}={point['x']}: {shown} (n={point['n']})")


@app.command(rich_help_panel=PANEL)
def export(
    experiment: ExperimentId,
    table_: Annotated[
        Literal["runs", "flows", "series"],
        typer.Option(
            "--table",
            help="runs (aggregate metrics), flows (per-flow metrics) or series (every run's time "
            "series in long form)",
        ),
    ] = "runs",
    format_: Annotated[
        Literal["csv", "parquet"], typer.Option("--format", help="CSV or Parquet")
    ] = "csv",
    output: Annotated[
        Path | None,
        typer.Option(
            "--output", "-o", help="file to write (default: stdout, CSV only)", dir_okay=False
        ),
    ] = None,
) -> None:
    """An experiment's runs, flows or time series as CSV or Parquet, axes as columns."""
    if format_ == "parquet" and output is None:
        raise ClientError("--format parquet writes a binary file: give --output FILE")
    experiment_id = resolve("experiment", experiment)
    data = client().download(
        f"/v1/experiments/{experiment_id}/export.{format_}", params={"table": table_}
    )
    if output is None:
        sys.stdout.write(data.decode())
    else:
        output.write_bytes(data)
        console(stderr=True).print(f"wrote {output} ({format_quantity(len(data), BYTE)})")


@app.command(rich_help_panel=PANEL)
def cancel(experiment: ExperimentId) -> None:
    """Cancel an experiment.

    Its queued runs at once, its active ones at their next check."""
    experiment_id = resolve("experiment", experiment)
    result = client().post(f"/v1/experiments/{experiment_id}/cancel")
    console().print(f"experiment {result['id']}: {result['status']}")


@app.command(rich_help_panel=PANEL)
def logs(
    run: RunId,
    file: Annotated[
        str | None,
        typer.Option(metavar="NAME", help="print this file of the run instead (names: --files)"),
    ] = None,
    files: Annotated[bool, typer.Option("--files", help="list the run's files")] = False,
) -> None:
    """A run's log, or another of its files.

    The log of its latest attempt: the sandbox's, or the hosts testbed's Ansible tasks."""
    api = client()
    run_id = resolve("run", run)
    if files:
        grid = table("file", "size", right=("size",))
        for item in api.get(f"/v1/runs/{run_id}/files"):
            grid.add_row(item["name"], format_quantity(item["bytes"], BYTE))
        console().print(grid)
        return
    if file is not None:
        sys.stdout.buffer.write(api.download(f"/v1/runs/{run_id}/files/{quote(file, safe='')}"))
        sys.stdout.flush()
        return
    sys.stdout.write(api.get(f"/v1/runs/{run_id}/log"))
