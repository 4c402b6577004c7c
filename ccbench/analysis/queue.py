"""The forward bottleneck's queue over the run's window, from whichever source the testbed
gave: the emulator's exact per-packet log (`packetlog.py`), sampled qdisc counters (link
mechanism tc), or nothing (a real path, whose queues are not observable). Formulas:
`metrics.py`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ccbench import rundir
from ccbench.analysis import metrics as m
from ccbench.analysis.logs import AnalysisError, Line
from ccbench.analysis.metrics import Window
from ccbench.analysis.packetlog import queue_metrics_from_file
from ccbench.analysis.series import Columns

QueueSource = Literal["emulator_log", "qdisc_sampling", "none"]
BUFFER_LEAF_KINDS = ("pfifo", "bfifo")


@dataclass(frozen=True)
class EmulatorTiming:
    """How faithfully the emulator kept its schedule (µs): how late packets left against the
    model, and the spacing error of back-to-back packets."""

    release_late_us_mean: float | None
    release_late_us_p50: float | None
    release_late_us_p99: float | None
    spacing_error_us_p99: float | None


@dataclass(frozen=True)
class FlowAtQueue:
    """One forward flow's packets at the bottleneck (emulator log only)."""

    arrivals: float
    drops: float
    loss_rate: float | None
    queue_delay_mean_s: float | None


@dataclass(frozen=True)
class QueueMetrics:
    source: QueueSource
    # Of the link itself; a real path's utilization is nominal, from goodput (`flows.py`).
    utilization: float | None = None
    queue_mean_pkts: float | None = None
    queue_max_pkts: float | None = None
    queue_max_bytes: float | None = None
    queue_delay_mean_s: float | None = None
    drops: int | None = None
    full_drops: int | None = None  # drops at a full buffer (not AQM, not random loss)
    loss_rate: float | None = None
    busy_rate_bps: float | None = None  # departure rate while backlogged for >= 1 s
    series: Columns = field(default_factory=dict)
    timing: EmulatorTiming | None = None  # emulator log only
    per_flow: list[FlowAtQueue] | None = None  # emulator log only, by flow index

    @property
    def observed(self) -> bool:
        return self.source != "none"


# A real path: no queue we can see.
UNOBSERVED = QueueMetrics(source="none")


def from_emulator_log(
    path: Path,
    window: Window,
    capacity_bps: float,
    t0: float,
    senders: list[tuple[str, int] | None],
) -> QueueMetrics:
    """Exact queue metrics from the emulator's packet log; per flow for the flows whose
    sender is known (`senders`, by flow index)."""
    if not path.exists():
        raise AnalysisError(f"{path.name} (the emulator's packet log) is missing")
    log = queue_metrics_from_file(path, window.start, window.end, capacity_bps, senders)
    raw = log["series"]
    return QueueMetrics(
        source="emulator_log",
        utilization=log["utilization"],
        queue_mean_pkts=log["queue_mean_pkts"],
        queue_max_pkts=log["queue_max_pkts"],
        queue_max_bytes=log["queue_max_bytes"],
        queue_delay_mean_s=log["queue_delay_mean_s"],
        drops=log["drops"],
        full_drops=log["full_drops"],
        loss_rate=log["loss_rate"],
        busy_rate_bps=log["busy_rate_bps"],
        series={
            "t_s": [round(ts - t0, 6) for ts in raw["ts"]],
            "qlen_pkts": raw["qlen_pkts"],
            "drops": raw["drops"],
            "queue_delay_s": raw["queue_delay_s"],
        },
        timing=EmulatorTiming(
            release_late_us_mean=log["release_late_us_mean"],
            release_late_us_p50=log["release_late_us_p50"],
            release_late_us_p99=log["release_late_us_p99"],
            spacing_error_us_p99=log["spacing_error_us_p99"],
        ),
        per_flow=[FlowAtQueue(**at) for at in log["per_flow"] or []],
    )


def _buffer_leaf(qdisc: Sequence[Line]) -> list[Line]:
    leaves = [q for q in qdisc if q.get("type") == "qdisc" and q["kind"] in BUFFER_LEAF_KINDS]
    if not leaves:
        raise AnalysisError(f"{rundir.QDISC} has no pfifo/bfifo buffer samples")
    return leaves


def from_qdisc_samples(
    qdisc: Sequence[Line], window: Window, capacity_bps: float, t0: float
) -> QueueMetrics:
    """Queue metrics from the buffer qdisc's sampled counters (qmon's lines)."""
    leaf = _buffer_leaf(qdisc)
    inside = [q for q in leaf if q["ts"] in window]
    qlens = [float(q["qlen_pkts"]) for q in inside]
    backlogs = [float(q["backlog_bytes"]) for q in inside]
    drops = int(m.increase([(q["ts"], q["drops"]) for q in leaf], window))
    sent_pkts = m.increase([(q["ts"], q["sent_pkts"]) for q in leaf], window)
    sent_bytes = m.increase([(q["ts"], q["sent_bytes"]) for q in leaf], window)
    busy_bytes = 0.0
    busy_seconds = 0.0
    for a, b in zip(inside, inside[1:], strict=False):
        # Both samples backlogged: the link was busy for the whole interval.
        if a["qlen_pkts"] > 1 and b["qlen_pkts"] > 1:
            busy_bytes += b["sent_bytes"] - a["sent_bytes"]
            busy_seconds += b["ts"] - a["ts"]
    return QueueMetrics(
        source="qdisc_sampling",
        utilization=m.utilization(sent_bytes, window.seconds, capacity_bps),
        queue_mean_pkts=m.mean(qlens),
        queue_max_pkts=max(qlens) if qlens else None,
        queue_max_bytes=max(backlogs) if backlogs else None,
        queue_delay_mean_s=(
            m.queue_delay_s(m.mean(backlogs) or 0.0, capacity_bps) if backlogs else None
        ),
        drops=drops,
        full_drops=drops,  # a pfifo/bfifo drops only when full
        loss_rate=m.loss_rate(drops, int(sent_pkts) + drops),
        busy_rate_bps=m.rate_bps(busy_bytes, busy_seconds) if busy_seconds >= 1.0 else None,
        series={
            "t_s": [round(q["ts"] - t0, 6) for q in leaf],
            "qlen_pkts": [q["qlen_pkts"] for q in leaf],
            "backlog_bytes": [q["backlog_bytes"] for q in leaf],
            "drops": [q["drops"] for q in leaf],
            "queue_delay_s": [m.queue_delay_s(q["backlog_bytes"], capacity_bps) for q in leaf],
        },
    )
