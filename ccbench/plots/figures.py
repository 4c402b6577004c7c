"""The figures of `model.py` drawn with matplotlib into files (PNG, SVG and PDF), in a style
for a two-column paper: one column wide (3.5 in), 7-8 pt sans-serif text, the colour-blind-safe
palette with a marker per series, no offset or x1e6 tick labels (the axis label carries the
unit's prefix), fonts embedded as TrueType in PDF and kept as text in SVG.

`write_experiment_figures` writes every figure of an experiment, named by axis values:
`<axis>-<value>_..._rep<n>_<figure>.<ext>` for each run, `<metric>_vs_<axis>_by_<axis>.<ext>`
and the scheme figures for the matrix."""

from __future__ import annotations

import multiprocessing
import os
import textwrap
from collections.abc import Iterable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from cycler import cycler  # noqa: E402
from matplotlib.axes import Axes  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.lines import Line2D  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402
from matplotlib.ticker import FuncFormatter, NullFormatter  # noqa: E402
from matplotlib.typing import LineStyleType, RcKeyType  # noqa: E402

from ccbench.plots.axes import file_value, short_names  # noqa: E402
from ccbench.plots.matrix import comparison_figure_data, experiment_figure_data  # noqa: E402
from ccbench.plots.model import (  # noqa: E402
    PALETTE,
    Axis,
    FigureData,
    Trace,
    colour_of,
    dense,
    marker_of,
)
from ccbench.plots.run import Bin, run_figure_data  # noqa: E402

FORMATS = ("png", "svg", "pdf")
MAX_PROCESSES = 8  # drawing processes of write_figures
COLUMN_WIDTH_IN = 3.5  # one column of a two-column paper (IEEE, ACM: 3.3-3.5 in)
PANEL_HEIGHT_IN = 1.9
# Characters per line of a title (8 pt) and a subtitle (7 pt) across one column.
TITLE_CHARS, SUBTITLE_CHARS = 56, 64
STYLE: dict[RcKeyType, Any] = {
    "font.family": "sans-serif",
    "font.size": 8,
    "axes.titlesize": 7,
    "axes.labelsize": 8,
    "xtick.labelsize": 7,
    "ytick.labelsize": 7,
    "legend.fontsize": 7,
    "legend.title_fontsize": 7,
    "figure.titlesize": 8,
    "lines.linewidth": 1.0,
    "lines.markersize": 3,
    "axes.prop_cycle": cycler(color=list(PALETTE)),
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "grid.linewidth": 0.5,
    "axes.formatter.useoffset": False,
    "axes.formatter.limits": (-5, 6),
    "legend.frameon": False,
    "savefig.dpi": 300,
    "pdf.fonttype": 42,
    "ps.fonttype": 42,
    "svg.fonttype": "none",
}


_LINESTYLES: dict[str, LineStyleType] = {"dashed": "--", "reference": ":"}


def _values(values: Sequence[Any]) -> Any:
    """Numbers with gaps (None) as NaN, which matplotlib leaves out."""
    return np.array([np.nan if v is None else v for v in values], dtype=float)


def _positions(axis: Axis, trace: Trace, k: int, n: int, width: float) -> Any:
    """x coordinates: numbers as they are; categories at 0, 1, ... with series `k` of `n`
    side by side within `width`."""
    if axis.scale == "date":  # as UTC, without the offset numpy does not take
        instants = [datetime.fromisoformat(x).astimezone(UTC).replace(tzinfo=None) for x in trace.x]
        return np.array(instants, dtype="datetime64[us]")
    if axis.scale != "category":
        return _values(trace.x)
    index = {c: i for i, c in enumerate(axis.categories)}
    offset = (k - (n - 1) / 2) * width / n if n > 1 else 0.0
    return np.array([index[x] + offset for x in trace.x], dtype=float)


def _draw_trace(ax: Axes, axis: Axis, trace: Trace, k: int, n: int) -> None:
    colour, label = colour_of(trace), trace.name if trace.legend else "_nolegend_"
    y = _values(trace.y)
    if trace.style == "box":
        samples = trace.samples or []
        positions = _positions(axis, trace, k, n, 0.8)
        kept = [(p, s) for p, s in zip(positions, samples, strict=True) if s]
        if kept:
            ax.boxplot(
                [s for _, s in kept],
                positions=[p for p, _ in kept],
                widths=0.7 * 0.8 / max(n, 1),
                patch_artist=True,
                manage_ticks=False,
                boxprops={"facecolor": colour, "alpha": 0.35, "edgecolor": colour},
                medianprops={"color": colour, "linewidth": 1.2},
                whiskerprops={"color": colour},
                capprops={"color": colour},
                flierprops={
                    "marker": marker_of(trace),
                    "markersize": 2.5,
                    "markeredgecolor": colour,
                },
            )
        return
    x = _positions(axis, trace, k, n, 0.5)
    if trace.style == "errorbars":
        ax.errorbar(
            x,
            y,
            yerr=_values(trace.error or [0] * len(y)),
            marker=marker_of(trace),
            color=colour,
            capsize=2,
            label=label,
            linestyle="none" if axis.scale == "category" else "-",
        )
    elif trace.style == "points":
        ax.plot(x, y, color=colour, marker=marker_of(trace), markersize=4, linewidth=1.0,
                label=label)  # fmt: skip
    elif trace.style in ("markers", "events"):
        marker = marker_of(trace)
        size = 10 if trace.style == "events" or not dense(trace) else 4
        ax.scatter(x, y, s=size, marker=marker, color=colour, label=label, linewidths=0.6)
    elif trace.style == "step":
        ax.step(x, y, where="post", color=colour, label=label)
    else:
        line = _LINESTYLES.get(trace.style, "-")
        width = {"aggregate": 1.4, "dashed": 0.8, "outline": 0.8}.get(trace.style, 1.0)
        ax.plot(x, y, color=colour, linestyle=line, linewidth=width, label=label)


def _style_x(ax: Axes, axis: Axis) -> None:
    if axis.scale == "category":
        ax.set_xticks(range(len(axis.categories)), list(axis.categories))
        ax.grid(False, axis="x")
    elif axis.scale == "log":
        ax.set_xscale("log")
        ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:g}"))
        ax.xaxis.set_minor_formatter(NullFormatter())
    if axis.ticks:
        ax.set_xticks(list(axis.ticks), [f"{v:g}" for v in axis.ticks])
        ax.xaxis.set_minor_formatter(NullFormatter())
    if axis.reversed:
        ax.invert_xaxis()
    if axis.range is not None:
        ax.set_xlim(*axis.range)


def draw(data: FigureData) -> Figure:
    """The figure in the paper style (matplotlib's Figure, not pyplot's: nothing to close)."""
    with plt.rc_context(STYLE):
        height = PANEL_HEIGHT_IN * len(data.panels) + 0.9
        fig = Figure(figsize=(COLUMN_WIDTH_IN, height), layout="constrained")
        axes = fig.subplots(len(data.panels), 1, sharex=True, squeeze=False)[:, 0]
        for ax, panel in zip(axes, data.panels, strict=True):
            n = sum(1 for t in panel.traces if t.style in ("errorbars", "box"))
            k = 0
            for trace in panel.traces:
                _draw_trace(ax, data.x, trace, k, n)
                if trace.style in ("errorbars", "box"):
                    k += 1
            ax.set_ylabel(panel.y.label)
            if panel.y.scale == "log":
                ax.set_yscale("log")
            if panel.y.range is not None:
                ax.set_ylim(*panel.y.range)
            elif panel.y.from_zero:
                ax.set_ylim(bottom=0)
        _style_x(axes[-1], data.x)
        axes[-1].set_xlabel(data.x.label)
        fig.suptitle(textwrap.fill(data.title, TITLE_CHARS))
        axes[0].set_title(textwrap.fill(data.subtitle, SUBTITLE_CHARS), color="#444444")
        if data.legend:
            _legend(fig, data)
    return fig


def _legend(fig: Figure, data: FigureData) -> None:
    handles: list[Any] = []
    for trace in data.traces:
        if not trace.legend:
            continue
        colour = colour_of(trace)
        if trace.style == "box":
            handles.append(Patch(facecolor=colour, edgecolor=colour, alpha=0.35, label=trace.name))
        elif trace.style in ("markers", "events", "errorbars"):
            marker = marker_of(trace)
            handles.append(
                Line2D([], [], color=colour, marker=marker, linestyle="none", label=trace.name)
            )
        else:
            line = _LINESTYLES.get(trace.style, "-")
            handles.append(Line2D([], [], color=colour, linestyle=line, label=trace.name))
    if handles:
        fig.legend(
            handles=handles,
            loc="outside lower center",
            ncols=min(3, len(handles)),
            title=data.legend_title or None,
        )


def write_figure(data: FigureData, path: Path, formats: Sequence[str] = FORMATS) -> list[Path]:
    """Write the figure: to `path` in its own format when it has a suffix of FORMATS
    (`power.svg`), else to `path` + each format."""
    path.parent.mkdir(parents=True, exist_ok=True)
    targets = (
        [path]
        if path.suffix.lstrip(".") in FORMATS
        else [path.with_name(f"{path.name}.{f}") for f in formats]
    )
    fig = draw(data)
    with plt.rc_context(STYLE):
        for target in targets:
            fig.savefig(target, metadata=_metadata(target))
    return targets


def _metadata(path: Path) -> dict[str, Any]:
    # Reproducible files: no creation date in PDF and SVG.
    if path.suffix == ".pdf":
        return {"CreationDate": None}
    if path.suffix == ".svg":
        return {"Date": None}
    return {}


# A figure to write: its data, its path without the format's suffix, the formats.
_Job = tuple[FigureData, Path, Sequence[str]]


def _write_job(job: _Job) -> list[Path]:
    return write_figure(*job)


def write_figures(
    figures: Iterable[FigureData],
    directory: Path,
    prefix: str = "",
    formats: Sequence[str] = FORMATS,
) -> list[Path]:
    """Each figure as `directory/<prefix><name>.<format>`."""
    return _write_all([(data, directory / f"{prefix}{data.name}", formats) for data in figures])


def _write_all(jobs: Sequence[_Job]) -> list[Path]:
    """Several figures at once on several CPUs (a figure takes 0.3-0.7 s in three formats, most
    of it embedding fonts into the PDF)."""
    workers = min(len(jobs), os.cpu_count() or 1, MAX_PROCESSES)
    if workers <= 1:
        return [path for job in jobs for path in _write_job(job)]
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
        return [path for paths in pool.map(_write_job, jobs) for path in paths]


def run_prefix(axes: Sequence[str], run: Mapping[str, Any]) -> str:
    """A run's file-name prefix from its axis values and repetition:
    "algorithm-reno_buffer-0.25bdp_rep1_"."""
    shorts = short_names(list(axes))
    values = run.get("axis_values") or {}
    parts = [f"{shorts[a]}-{file_value(values.get(a))}" for a in axes]
    parts.append(f"rep{int(run.get('repetition') or 0) + 1}")
    return "_".join(parts) + "_"


def write_experiment_figures(
    report: Mapping[str, Any],
    runs: Mapping[str, Mapping[str, Any]],
    comparisons: Sequence[Mapping[str, Any]],
    directory: Path,
    submission: Mapping[str, Any] | None = None,
    formats: Sequence[str] = FORMATS,
    bin: Bin = "rtt",  # noqa: A002
) -> list[Path]:
    """Every figure of an experiment into `directory`: each finished run's (`runs`: run id ->
    GET /v1/runs/{id}) named by its axis values, then the matrix's (`comparisons`: GET
    .../compare results; `submission`: the experiment's, for the conditions it keeps fixed)."""
    axes = list(report.get("axes") or [])
    jobs: list[_Job] = []
    for run in report.get("runs") or []:
        detail = runs.get(run["run_id"])
        if run.get("status") == "done" and detail is not None:
            prefix = run_prefix(axes, run)
            jobs += [
                (f, directory / f"{prefix}{f.name}", formats) for f in run_figure_data(detail, bin)
            ]
    if axes:
        figures = experiment_figure_data(report, comparisons, submission)
        jobs += [(f, directory / f.name, formats) for f in figures]
    return _write_all(jobs)


def run_figures(run: Mapping[str, Any], bin: Bin = "rtt") -> dict[str, Figure]:  # noqa: A002
    """Figures of one run (GET /v1/runs/{id}), by name."""
    return {data.name: draw(data) for data in run_figure_data(run, bin)}


def comparison_figure(comparison: Mapping[str, Any]) -> Figure:
    """GET /v1/experiments/{id}/compare as a figure: median with SIQR error bars."""
    return draw(comparison_figure_data(comparison))
