"""Experiment commands, as a client of the REST API: submit, status, report, compare, export,
cancel."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from cli.client import Client, ClientError, client
from cli.render import fmt, print_report, run_line
from schemas.metrics import KEY_METRICS

FINAL_EXPERIMENT = {"done", "failed", "cancelled"}
# Metrics drawn against the matrix axes by `report --plot`: the key metrics.
PLOTTED_METRICS = tuple(m.name for m in KEY_METRICS)


def _load_file(path: Path) -> Any:
    try:
        text = path.read_text()
    except OSError as exc:
        raise ClientError(f"cannot read {path}: {exc.strerror}") from exc
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ClientError(f"{path} is not valid YAML/JSON: {exc}") from exc


def cmd_submit(args: argparse.Namespace) -> int:
    api = client()
    created = api.post_once("/v1/experiments", _load_file(args.file))
    print(f"experiment {created['id']} ({created['name']}): {created['run_count']} run(s) queued")
    if not args.wait:
        return 0
    status = follow(api, created["id"])
    print_report(api.get(f"/v1/experiments/{created['id']}/report"))
    return 0 if status == "done" else 1


def follow(api: Client, experiment_id: str, poll_s: float = 1.0) -> str:
    """Print each run's state and progress until the experiment is final."""
    last_lines: dict[str, str] = {}
    while True:
        detail = api.get(f"/v1/experiments/{experiment_id}")
        total = len(detail["runs"])
        for run in detail["runs"]:
            line = run_line(run, total)
            if last_lines.get(run["id"]) != line:
                print(line, flush=True)
                last_lines[run["id"]] = line
        if detail["status"] in FINAL_EXPERIMENT:
            counts = ", ".join(f"{n} {s}" for s, n in sorted(detail["status_counts"].items()))
            print(f"experiment {experiment_id} {detail['status']} ({counts})", flush=True)
            return str(detail["status"])
        time.sleep(poll_s)


def cmd_status(args: argparse.Namespace) -> int:
    detail = client().get(f"/v1/experiments/{args.id}")
    print(f"experiment {detail['id']} ({detail['name']}): {detail['status']}")
    for run in detail["runs"]:
        print("  " + run_line(run, len(detail["runs"])))
    return 0


def cmd_report(args: argparse.Namespace) -> int:
    api = client()
    report = api.get(f"/v1/experiments/{args.id}/report")
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print_report(report)
    if args.plot:
        for path in plot_report(api, report, args.plot):
            print(f"wrote {path}", file=sys.stderr)
    return 0


def plot_report(api: Client, report: dict[str, Any], directory: Path) -> list[Path]:
    """Every figure of the experiment into `directory` (PNG, SVG and PDF, named by axis
    values): each finished run's, and with matrix axes each plotted metric against the first
    axis, a series per value of the second, with the scheme figures."""
    from ccbench.plots.figures import write_experiment_figures

    runs = {r["run_id"]: api.get(f"/v1/runs/{r['run_id']}") for r in report["runs"]
            if r["status"] == "done"}  # fmt: skip
    axes = report.get("axes") or []
    comparisons = []
    for metric in PLOTTED_METRICS if axes else ():
        params = {"metric": metric, "x": axes[0]}
        if len(axes) > 1:
            params["by"] = axes[1]
        comparisons.append(
            api.get(f"/v1/experiments/{report['experiment_id']}/compare", params=params)
        )
    submission = api.get(f"/v1/experiments/{report['experiment_id']}")["submission"]
    return write_experiment_figures(report, runs, comparisons, directory, submission)


def cmd_compare(args: argparse.Namespace) -> int:
    params = {"metric": args.metric, "x": args.x}
    if args.by:
        params["by"] = args.by
    result = client().get(f"/v1/experiments/{args.id}/compare", params=params)
    if args.plot:
        from ccbench.plots.figures import write_figure
        from ccbench.plots.matrix import comparison_figure_data

        for path in write_figure(comparison_figure_data(result), args.plot):
            print(f"wrote {path}", file=sys.stderr)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"{result['metric']} (median ± SIQR, n repetitions) against {result['x']}")
    for series in result["series"]:
        if result.get("by"):
            print(f"{result['by']} = {series['by']}")
        for point in series["points"]:
            print(
                f"  {result['x']}={point['x']}: {fmt(point['median'])} ± "
                f"{fmt(point['siqr'])} (n={point['n']})"
            )
    return 0


def cmd_export(args: argparse.Namespace) -> int:
    if args.format == "parquet" and args.output is None:
        raise ClientError("--format parquet writes a binary file: give --output FILE")
    data = client().download(
        f"/v1/experiments/{args.id}/export.{args.format}", params={"table": args.table}
    )
    if args.output is None:
        sys.stdout.write(data.decode())
    else:
        args.output.write_bytes(data)
        print(f"wrote {args.output} ({len(data):,} bytes)", file=sys.stderr)
    return 0


def cmd_cancel(args: argparse.Namespace) -> int:
    result = client().post(f"/v1/experiments/{args.id}/cancel")
    print(f"experiment {result['id']}: {result['status']}")
    return 0
