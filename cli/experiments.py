"""Experiment commands, as a client of the REST API: submit, list (every experiment the team
may read: its own, shared with it, public), status, report, compare (one experiment's matrix,
or several experiments, points and runs), export, cancel, logs. Every id argument takes a
unique prefix (cli/ids.py)."""

from __future__ import annotations

import sys
from datetime import date, datetime, time, timedelta
from pathlib import Path
from typing import Annotated, Any, Literal
from urllib.parse import quote

import typer

from ccbench.access import Access
from ccbench.runstate import ExperimentStatus
from cli.client import Client, ClientError, client, load_document
from cli.ids import completion, resolve
from cli.options import AGGREGATE_METRICS, JsonFlag, complete_aggregate_metric
from cli.progress import follow
from cli.render import (
    console,
    print_json,
    print_report,
    runs_table,
    short,
    status_text,
    table,
    team_text,
    when,
)
from schemas.metrics import BYTE, KEY_METRICS, METRICS, Metric, format_quantity, metrics_of

PANEL = "Experiments"
app = typer.Typer()

# Metrics drawn against the matrix axes by `report --plot`: the key metrics.
PLOTTED_METRICS = tuple(m.name for m in KEY_METRICS)
FLOW_METRICS = [m.name for m in metrics_of("flow")]
# Metric columns of `list` unless --metric chooses.
LISTED_METRICS = ("utilization", "goodput_bps")

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


def _instant(text: str | None, option: str, *, end_of_day: bool = False) -> str | None:
    """An RFC 3339 instant for the API from what a person types: a date (`2026-11-01`, local
    midnight; with `end_of_day` the midnight after it, so the day is included) or a date and
    time (in the local time zone unless it names one: `2026-11-01T09:00+01:00`)."""
    if text is None:
        return None
    try:
        if len(text) == len("2026-11-01"):
            day = date.fromisoformat(text)
            start = datetime.combine(day + timedelta(days=1 if end_of_day else 0), time())
            return start.astimezone().isoformat()
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise typer.BadParameter(
            f"{text!r} is neither a date (2026-11-01) nor a date and time (2026-11-01T09:00)",
            param_hint=option,
        ) from None
    return (moment if moment.tzinfo else moment.astimezone()).isoformat()


def _metric_columns(names: list[str]) -> list[Metric]:
    unknown = [n for n in names if n not in AGGREGATE_METRICS]
    if unknown:
        raise typer.BadParameter(
            f"{', '.join(unknown)}: not an aggregate metric; one of: "
            + ", ".join(AGGREGATE_METRICS),
            param_hint="--metric",
        )
    return [METRICS[n] for n in names]


def _counts_text(counts: dict[str, int]) -> str:
    return " ".join(f"{n} {s}" for s, n in counts.items())


@app.command("list", rich_help_panel=PANEL)
def list_experiments(
    text: Annotated[
        str | None,
        typer.Option(
            "--text", "-q", help="in the name, description, notes or a tag, or an id prefix"
        ),
    ] = None,
    name: Annotated[
        str | None, typer.Option(help="only experiments whose name contains this")
    ] = None,
    tag: Annotated[
        list[str] | None,
        typer.Option(help="only experiments with this tag (repeat: with every one)"),
    ] = None,
    algorithm: Annotated[
        list[str] | None,
        typer.Option(help="a flow runs this algorithm, e.g. cubic (repeat: any of them)"),
    ] = None,
    param: Annotated[
        list[str] | None,
        typer.Option(
            metavar="PATH=VALUE",
            help="a run's spec has this value, in any unit, e.g. topology.bottleneck.delay=20ms "
            "or 'flows[*].params.beta=0.5' (repeat: every one)",
        ),
    ] = None,
    status: Annotated[
        list[ExperimentStatus] | None,
        typer.Option(
            help="only experiments in this state (repeat: any of them)", show_default=False
        ),
    ] = None,
    since: Annotated[
        str | None,
        typer.Option(
            metavar="WHEN",
            help="created at or after: a date (2026-11-01, local midnight) or a date and time "
            "(2026-11-01T09:00, local unless it names its zone: ...+01:00, ...Z)",
        ),
    ] = None,
    until: Annotated[
        str | None,
        typer.Option(
            metavar="WHEN",
            help="created before this date and time, or up to the end of this date",
        ),
    ] = None,
    team: Annotated[str | None, typer.Option(help="owned by the team of this name")] = None,
    access: Annotated[
        Access | None,
        typer.Option(
            help="own: your team's; shared: another team's shared with yours by name; "
            "public: another team's made public (default: all of them)",
            show_default=False,
        ),
    ] = None,
    testbed: Annotated[
        str | None, typer.Option(help="only experiments on this testbed: mininet or hosts")
    ] = None,
    pinned: Annotated[bool, typer.Option("--pinned", help="only those your team pinned")] = False,
    sort: Annotated[
        str | None,
        typer.Option(
            metavar="COLUMN",
            help="sort by id, name, team, created, status, runs, algorithms, testbed, tags, "
            "pinned or an aggregate metric (e.g. utilization); default: pinned first, then "
            "newest",
            show_default=False,
        ),
    ] = None,
    desc: Annotated[bool, typer.Option("--desc", help="sort descending")] = False,
    metric: Annotated[
        list[str] | None,
        typer.Option(
            help="a column of this aggregate metric, the median over the done runs (repeat; "
            "default: " + ", ".join(LISTED_METRICS) + ")",
            autocompletion=complete_aggregate_metric,
            show_default=False,
        ),
    ] = None,
    page: Annotated[int, typer.Option(min=1, help="which page of results")] = 1,
    page_size: Annotated[int, typer.Option(min=1, max=200, help="experiments a page")] = 50,
    as_json: JsonFlag = False,
) -> None:
    """The experiments your team may read: its own, shared with it, public.

    Filters combine (all must hold). `*` marks the ones your team pinned; another team's are
    marked shared or public beside their team. Metrics are the medians over the done runs."""
    columns = _metric_columns(metric or list(LISTED_METRICS))
    params: dict[str, Any] = {
        "q": text,
        "name": name,
        "tag": tag or None,
        "algorithm": algorithm or None,
        "param": param or None,
        "status": [s.value for s in status] if status else None,
        "created_after": _instant(since, "--since"),
        "created_before": _instant(until, "--until", end_of_day=True),
        "team": team,
        "access": access.value if access else None,
        "testbed": testbed,
        "pinned": True if pinned else None,
        "sort": f"-{sort}" if sort and desc else sort,
        "page": page,
        "page_size": page_size,
    }
    found = client().get("/v1/experiments", params={k: v for k, v in params.items() if v})
    if as_json:
        print_json(found)
        return
    zone = datetime.now().astimezone().strftime("%Z")
    headings = [m.label for m in columns]
    grid = table(
        "", "id", "name", "status", "runs", "run states", "team", "tags", f"created ({zone})",
        "algorithms", "testbed", *headings, right=("runs", *headings),
    )  # fmt: skip
    for item in found["items"]:
        grid.add_row(
            "*" if item["pinned"] else "",
            short(item["id"]),
            item["name"],
            status_text(item["status"]),
            str(item["run_count"]),
            _counts_text(item["status_counts"]),
            team_text(item),
            ", ".join(item["tags"]),
            when(item["created_at"]),
            " ".join(item["algorithms"]),
            " ".join(item["testbeds"]),
            *(format_quantity(item["metrics"].get(m.name), m.unit) for m in columns),
        )
    if found["items"]:
        console().print(grid)
    first = (found["page"] - 1) * found["page_size"]
    last = first + len(found["items"])
    shown = f"{first + 1}-{last} of " if found["items"] else ""
    more = f" (--page {found['page'] + 1} for more)" if last < found["total"] else ""
    console(stderr=True).print(f"{shown}{found['total']} experiment(s){more}")


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


def _point(text: str) -> str:
    """EXPERIMENT:INDEX with the experiment's prefix resolved."""
    experiment, sep, index = text.rpartition(":")
    if not sep or not experiment or not index.isdigit():
        raise typer.BadParameter(
            f"{text!r} is not EXPERIMENT:INDEX, e.g. 3f9c1a2b:4 (`ccbench status` shows the "
            "point of each run)",
            param_hint="--point",
        )
    return f"{resolve('experiment', experiment)}:{index}"


def _complete_any_metric(incomplete: str) -> list[str]:
    return [m for m in METRICS if m.startswith(incomplete)]


@app.command(rich_help_panel=PANEL)
def compare(
    metric: Annotated[
        str,
        typer.Option(
            help="the metric: an aggregate one (" + ", ".join(AGGREGATE_METRICS) + "), or "
            "with --per-flow a flow's (" + ", ".join(FLOW_METRICS) + ")",
            autocompletion=_complete_any_metric,
            show_default=False,
        ),
    ],
    x: Annotated[
        str,
        typer.Option(
            "--x",
            help="the x axis: a matrix axis or any spec field, e.g. topology.bottleneck.buffer "
            "or 'flows[*].algorithm'; or experiment; with --per-flow also flow (its index) or "
            "algorithm (its own)",
            show_default=False,
        ),
    ],
    experiments: Annotated[
        list[str] | None,
        typer.Argument(
            metavar="EXPERIMENT",
            help="experiments (ids or unique prefixes), every run of each; any team's that "
            "your team may read",
            autocompletion=completion("experiment"),
            show_default=False,
        ),
    ] = None,
    by: Annotated[
        str | None,
        typer.Option(
            help="one series per value of this (the same choices as --x); default: one per "
            "experiment when several are compared, else one of every run; '' for one anyway",
            show_default=False,
        ),
    ] = None,
    point: Annotated[
        list[str] | None,
        typer.Option(
            metavar="EXPERIMENT:INDEX",
            help="also one matrix point of an experiment (its repetitions), e.g. 3f9c1a2b:4 "
            "(repeat)",
            show_default=False,
        ),
    ] = None,
    run: Annotated[
        list[str] | None,
        typer.Option(
            help="also one run (id or unique prefix; repeat)",
            autocompletion=completion("run"),
            show_default=False,
        ),
    ] = None,
    per_flow: Annotated[
        bool,
        typer.Option("--per-flow", help="each flow's value of the metric, not the run's aggregate"),
    ] = False,
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
    """One metric against an axis, over experiments, matrix points and runs.

    The x axis is a matrix axis or any spec field, with a series per value of another; the
    experiments may be any team's that your team may read. Each point is the median ± SIQR
    over the runs (or, with --per-flow, the flows) that fall on it, e.g. the repetitions of
    a matrix point: `ccbench compare EXPERIMENT --metric M --x AXIS --by AXIS` is one
    experiment's matrix; with several experiments the series are the experiments. Prints the
    comparison's page (its permalink) too."""
    scope = "flow" if per_flow else "aggregate"
    allowed = FLOW_METRICS if per_flow else AGGREGATE_METRICS
    if metric not in allowed:
        raise typer.BadParameter(
            f"{metric!r} is not {'a flow' if per_flow else 'an aggregate'} metric; one of: "
            + ", ".join(allowed),
            param_hint="--metric",
        )
    if not (experiments or point or run):
        raise typer.BadParameter(
            "give experiments, --point EXPERIMENT:INDEX or --run RUN", param_hint="EXPERIMENT"
        )
    params: dict[str, Any] = {
        "experiment": [resolve("experiment", e) for e in experiments or []],
        "point": [_point(p) for p in point or []],
        "run": [resolve("run", r) for r in run or []],
        "metric": metric,
        "x": x,
        "scope": scope,
    }
    if by is not None:
        params["by"] = by
    api = client()
    result = api.get("/v1/compare", params=params)
    if plot:
        from ccbench.plots.figures import write_figure
        from ccbench.plots.matrix import cross_comparison_figure_data

        for path in write_figure(cross_comparison_figure_data(result), plot):
            console(stderr=True).print(f"wrote {path}")
    if as_json:
        print_json(result)
        return
    out = console()
    unit = METRICS[result["metric"]].unit
    what = "each flow's" if per_flow else "each run's"
    out.print(f"{result['metric']} ({what}; median ± SIQR, n values) against {result['x']}")
    for e in result["experiments"]:
        runs = f"{e['runs']} run" + ("" if e["runs"] == 1 else "s")
        out.print(f"  {e['short_id']} {e['name']} (team {team_text(e)}): {runs}")
    for series in result["series"]:
        if result.get("by"):
            out.print(f"{result['by']} = {series['label']}")
        for p in series["points"]:
            shown = format_quantity(p["median"], unit, p["siqr"])
            out.print(f"  {result['x']}={p['label']}: {shown} (n={p['n']})")
    out.print(f"page: {api.config.api_url.rstrip('/')}{result['permalink']}")


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
