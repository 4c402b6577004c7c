"""Static figures for the CLI (`ccbench report --plot`, `ccbench compare --plot`): the figures
of `model.py` drawn with matplotlib."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

from ccbench.plots.model import FigureData, comparison_figure_data, run_figure_data  # noqa: E402


def draw(data: FigureData) -> Figure:
    square = data.name == "rtt_vs_cwnd"
    fig, ax = plt.subplots(figsize=(5, 4) if square else (7, 3.5))
    for trace in data.traces:
        if trace.style == "step":
            ax.step(trace.x, trace.y, where="post", label=trace.name, linewidth=1)
        elif trace.style == "markers":
            red = trace.name == "drops"
            ax.scatter(trace.x, trace.y, s=12 if red else 3, label=trace.name,
                       marker="x" if red else "o", color="red" if red else None)  # fmt: skip
        elif trace.style == "errorbars":
            ax.errorbar(trace.x, trace.y, yerr=trace.error, marker="o", capsize=3,
                        label=trace.name)  # fmt: skip
        else:
            ax.plot(trace.x, trace.y, label=trace.name,
                    linestyle="--" if trace.style == "dashed" else "-",
                    linewidth=0.8 if trace.style == "dashed" else 1)  # fmt: skip
    ax.set_xlabel(data.xlabel)
    ax.set_ylabel(data.ylabel)
    ax.set_title(data.title)
    if data.legend:
        ax.legend(loc="best", fontsize="small")
    ax.grid(alpha=0.3)
    return fig


def run_figures(run: dict[str, Any]) -> dict[str, Figure]:
    """Figures of one run (GET /v1/runs/{id}), by name."""
    return {data.name: draw(data) for data in run_figure_data(run)}


def comparison_figure(comparison: dict[str, Any]) -> Figure:
    """GET /v1/experiments/{id}/compare as a figure: median with SIQR error bars."""
    return draw(comparison_figure_data(comparison))


def save(figures: dict[str, Figure], directory: Path, prefix: str, fmt: str = "png") -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for name, fig in figures.items():
        path = directory / f"{prefix}{name}.{fmt}"
        fig.tight_layout()
        fig.savefig(path, dpi=150)
        plt.close(fig)
        written.append(path)
    return written
