"""Following an experiment until it is final: one display for the whole matrix (runs done,
running, failed, queued; the active runs' progress; an ETA). On a terminal it is redrawn in
place (rich's Live) and failed runs are printed above it as they fail; elsewhere (a pipe, a
log file, CI) it is a few plain lines: one per run that ends, and a status line when nothing
else was printed for a while."""

from __future__ import annotations

import statistics
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.progress_bar import ProgressBar
from rich.table import Table
from rich.text import Text

from ccbench.runstate import ACTIVE, FINAL, RunStatus
from cli.client import Client
from cli.render import run_label, run_progress, short, status_text

POLL_S = 1.0
# Plain output: a status line after this long without any other line.
PLAIN_STATUS_EVERY_S = 30.0
# Live display: at most this many active runs are listed (then "... and N more").
ACTIVE_SHOWN = 8
BAR_WIDTH = 30
_FINAL = {s.value for s in FINAL}
_ACTIVE = {s.value for s in ACTIVE}


def _seconds_between(start: str | None, end: datetime) -> float | None:
    if not start:
        return None
    return (end - datetime.fromisoformat(start)).total_seconds()


def remaining_s(runs: list[dict[str, Any]], now: datetime) -> float | None:
    """Seconds until every run is final, estimated from what the runs say: a run takes W, the
    median wall time (started to finished) of the runs done so far, or before any is done its
    spec's duration (from a running run's progress: a lower bound); the queued runs take W
    each and an active run what is left of W; the workers go on running as many runs at once
    as are active now (at least one). None until W is known."""
    took = [
        (
            datetime.fromisoformat(r["finished_at"]) - datetime.fromisoformat(r["started_at"])
        ).total_seconds()
        for r in runs
        if r["status"] == RunStatus.done and r.get("started_at") and r.get("finished_at")
    ]
    durations = [
        float(r["progress"]["duration_s"])
        for r in runs
        if (r.get("progress") or {}).get("duration_s")
    ]
    if took:
        per_run = float(statistics.median(took))
    elif durations:
        per_run = max(durations)
    else:
        return None
    active = [r for r in runs if r["status"] in _ACTIVE]
    queued = sum(1 for r in runs if r["status"] == RunStatus.queued)
    left = queued * per_run
    for run in active:
        age = _seconds_between(run.get("started_at"), now) or 0.0
        left += max(0.0, per_run - age)
    return left / max(1, len(active))


def duration_text(seconds: float | None) -> str:
    """`45s`, `2m 10s`, `1h 05m`; `-` when unknown."""
    if seconds is None:
        return "-"
    whole = round(seconds)
    if whole < 60:
        return f"{whole}s"
    if whole < 3600:
        return f"{whole // 60}m {whole % 60:02d}s"
    return f"{whole // 3600}h {whole % 3600 // 60:02d}m"


@dataclass(frozen=True)
class MatrixState:
    """One poll of an experiment, as the displays show it."""

    experiment_id: str
    name: str
    status: str
    runs: list[dict[str, Any]]
    eta_s: float | None
    counts: Counter[str] = field(default_factory=Counter)

    @classmethod
    def of(cls, detail: dict[str, Any], now: datetime) -> MatrixState:
        runs = list(detail["runs"])
        return cls(
            experiment_id=detail["id"],
            name=detail["name"],
            status=detail["status"],
            runs=runs,
            eta_s=remaining_s(runs, now),
            counts=Counter(r["status"] for r in runs),
        )

    @property
    def total(self) -> int:
        return len(self.runs)

    @property
    def finished(self) -> int:
        return sum(self.counts[s] for s in _FINAL)

    @property
    def active(self) -> list[dict[str, Any]]:
        return [r for r in self.runs if r["status"] in _ACTIVE]

    @property
    def final(self) -> bool:
        return self.status in _FINAL

    def summary(self) -> str:
        """`3 done · 1 failed · 2 running · 6 queued`: the states that have runs."""
        active = sum(self.counts[s] for s in _ACTIVE)
        parts = [
            (self.counts["done"], "done"),
            (self.counts["failed"], "failed"),
            (self.counts["cancelled"], "cancelled"),
            (active, "running"),
            (self.counts["queued"], "queued"),
        ]
        return " · ".join(f"{n} {what}" for n, what in parts if n)


class Display:
    """How a poll is shown; a context manager around the whole following."""

    def __enter__(self) -> Display:
        return self

    def __exit__(self, *_exc: object) -> None:
        return None

    def show(self, state: MatrixState, ended: list[dict[str, Any]]) -> None:
        """Show a poll; `ended`: the runs that became final since the last one."""
        raise NotImplementedError


class PlainDisplay(Display):
    """Sparse lines for a pipe or a log: one per run that ends, a status line now and then."""

    def __init__(self, out: Console) -> None:
        self.out = out
        self.last_line = float("-inf")

    def show(self, state: MatrixState, ended: list[dict[str, Any]]) -> None:
        now = time.monotonic()
        for run in ended:
            error = f": {run['error']}" if run["status"] == "failed" and run.get("error") else ""
            self._line(
                f"[{state.finished}/{state.total}] {run_label(run, state.total)}: "
                f"{run['status']}{error}",
                state,
            )
        if not ended and now - self.last_line >= PLAIN_STATUS_EVERY_S and not state.final:
            running = [
                f"run {r['order_index'] + 1} {p}" for r in state.active if (p := run_progress(r))
            ]
            where = f" ({', '.join(running[:3])})" if running else ""
            self._line(f"[{state.finished}/{state.total}] {state.summary()}{where}", state)

    def _line(self, text: str, state: MatrixState) -> None:
        eta = "" if state.final or state.eta_s is None else f", ETA {duration_text(state.eta_s)}"
        self.out.print(text + eta)
        self.last_line = time.monotonic()


class LiveDisplay(Display):
    """The whole matrix redrawn in place: a bar over all runs with the counts and the ETA,
    then the active runs with their progress; failed runs are printed above it."""

    def __init__(self, out: Console) -> None:
        self.live = Live(console=out, auto_refresh=False, transient=False)

    def __enter__(self) -> Display:
        self.live.start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.live.stop()

    def show(self, state: MatrixState, ended: list[dict[str, Any]]) -> None:
        for run in ended:
            if run["status"] == "failed":
                line = Text("✗ ", style="bold red").append(f"{run_label(run, state.total)}: ")
                self.live.console.print(line.append(run.get("error") or "failed"))
        self.live.update(self.render(state), refresh=True)

    @staticmethod
    def render(state: MatrixState) -> RenderableType:
        head = Table.grid(padding=(0, 1))
        head.add_row(
            Text(f"experiment {short(state.experiment_id)} {state.name}", style="bold"),
            ProgressBar(total=max(1, state.total), completed=state.finished, width=BAR_WIDTH),
            Text(f"{state.finished}/{state.total} runs"),
            Text(state.summary()),
            Text("" if state.final else f"ETA {duration_text(state.eta_s)}", style="cyan"),
        )
        rows = Table.grid(padding=(0, 1))
        for run in state.active[:ACTIVE_SHOWN]:
            progress = run.get("progress") or {}
            duration = float(progress.get("duration_s") or 0)
            bar: RenderableType = Text("")
            if run["status"] == "running" and duration:
                elapsed = min(duration, float(progress.get("elapsed_s") or 0))
                bar = ProgressBar(total=duration, completed=elapsed, width=BAR_WIDTH // 2)
            rows.add_row(
                Text("  " + run_label(run, state.total)),
                status_text(run["status"]),
                bar,
                Text(run_progress(run)),
            )
        hidden = len(state.active) - ACTIVE_SHOWN
        more = [Text(f"  ... and {hidden} more active")] if hidden > 0 else []
        return Group(head, rows, *more)


def follow(api: Client, experiment_id: str, out: Console, poll_s: float = POLL_S) -> str:
    """Show the experiment's progress until it is final; its final status. Ctrl-C stops
    following, not the experiment."""
    live = out.is_terminal and not out.is_dumb_terminal
    seen: set[str] | None = None  # runs already final (none known before the first poll)
    started = time.monotonic()
    try:
        with LiveDisplay(out) if live else PlainDisplay(out) as display:
            while True:
                detail = api.get(f"/v1/experiments/{experiment_id}")
                state = MatrixState.of(detail, datetime.now(UTC))
                finals = {r["id"] for r in state.runs if r["status"] in _FINAL}
                ended = [] if seen is None else [r for r in state.runs if r["id"] in finals - seen]
                seen = finals
                display.show(state, ended)
                if state.final:
                    break
                time.sleep(poll_s)
    except KeyboardInterrupt:
        out.print(
            f"stopped following; experiment {experiment_id} goes on "
            f"(`ccbench status {short(experiment_id)} --follow` to follow it again)"
        )
        raise
    took = duration_text(time.monotonic() - started)
    out.print(f"experiment {experiment_id} {state.status}: {state.summary()} (followed {took})")
    return state.status
