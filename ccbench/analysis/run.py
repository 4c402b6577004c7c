"""Analysis of one run: read the agents' logs from the run directory (file names:
`ccbench/rundir.py`; formats: docs/contracts.md), then compute per-flow and aggregate metrics
over the measurement window (`flows.py`), the bottleneck's queue (`queue.py`), the checks that
the configured network was really applied (`checks.py`) and the down-sampled time series for
storage (`series.py`). Every formula is in `metrics.py`."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ccbench import rundir
from ccbench.analysis import checks, flows, packetlog, queue
from ccbench.analysis.logs import (
    AnalysisError,
    FlowLogs,
    Line,
    Provenance,
    read_jsonl,
    to_sender_clock,
    trace_by_flow,
)
from ccbench.analysis.metrics import Window
from ccbench.analysis.series import Columns, downsample, fairness_over_time, flow_series
from schemas import ExperimentSpec, FlowMetrics, RunResult

__all__ = ["AnalysisError", "RunAnalysis", "analyze_run"]


@dataclass
class RunAnalysis:
    flows: list[FlowMetrics]
    summary: RunResult
    series: dict[str, Columns] = field(default_factory=dict)


def analyze_run(run_dir: Path, spec: ExperimentSpec) -> RunAnalysis:
    n = len(spec.flows)
    sent = [list(read_jsonl(run_dir / rundir.sender_log(i))) for i in range(n)]
    received = [list(read_jsonl(run_dir / rundir.receiver_log(i))) for i in range(n)]
    provenance = Provenance.read(run_dir / rundir.PROVENANCE)
    to_sender_clock(received, provenance)
    logs = [FlowLogs.of(s, r) for s, r in zip(sent, received, strict=True)]

    t0 = _common_start(spec, logs)
    trace_path = run_dir / rundir.BPF_TRACE
    trace = list(read_jsonl(trace_path)) if trace_path.exists() else []
    traces = trace_by_flow(logs, trace)
    run_window = Window(t0 + spec.measurement.skip_start, t0 + spec.duration)
    series: dict[str, Columns] = {}
    analyzed: list[flows.FlowAnalysis] = []
    for i, flow in enumerate(spec.flows):
        analyzed.append(flows.analyze_flow(spec, i, logs[i], run_window, t0))
        series.update(flow_series(i, flow.agent, logs[i], traces[i], t0))

    bottleneck = _queue(run_dir, spec, provenance, run_window, t0, analyzed)
    flows.with_queue(analyzed, bottleneck)
    if bottleneck.series:
        series["queue"] = downsample(bottleneck.series)
    over_time = fairness_over_time(spec, [f.received for f in logs], t0)
    series["fairness"] = over_time.series
    aggregate = flows.aggregate(
        spec, analyzed, bottleneck, run_window, over_time.convergence_time_s
    )
    flow_metrics = [f.metrics for f in analyzed]
    min_rtts = [r for f in analyzed for r in f.min_rtts_s]
    if bottleneck.observed:
        applied, found = checks.emulated_conditions(
            spec, provenance, bottleneck, min_rtts, flow_metrics, _send_jitter(run_dir, spec)
        )
    else:
        applied, found = checks.real_path_conditions(spec, provenance, min_rtts)
    controller = checks.controller_state_check(spec, [f.info for f in logs], traces, t0)
    if controller is not None:
        found.append(controller)
    return RunAnalysis(
        flow_metrics, RunResult(aggregate=aggregate, applied=applied, checks=found), series
    )


def _queue(
    run_dir: Path,
    spec: ExperimentSpec,
    provenance: Provenance,
    window: Window,
    t0: float,
    analyzed: list[flows.FlowAnalysis],
) -> queue.QueueMetrics:
    """The forward bottleneck's queue: the emulator's packet log, the sampled qdisc, or
    nothing observable on a real path (the hosts testbed without a router: no link)."""
    if not spec.links:
        return queue.UNOBSERVED
    if provenance.emulated:
        log = run_dir / rundir.link_packet_log(spec.bottleneck_index)
        senders = [f.sender for f in analyzed]
        return queue.from_emulator_log(log, window, spec.bottleneck.rate, t0, senders)
    qdisc: list[Line] = list(read_jsonl(run_dir / rundir.QDISC))
    return queue.from_qdisc_samples(qdisc, window, spec.bottleneck.rate, t0)


def _send_jitter(run_dir: Path, spec: ExperimentSpec) -> dict[int, packetlog.LogDelays]:
    """What each jittered flow's access link did, from its packet log."""
    delays = {}
    for i, flow in enumerate(spec.flows):
        if flow.send_jitter is None:
            continue
        path = run_dir / rundir.access_packet_log(i)
        if not path.exists():
            raise AnalysisError(f"{path.name} (flow {i}'s send jitter log) is missing")
        delays[i] = packetlog.delays_from_file(path)
    return delays


def _common_start(spec: ExperimentSpec, logs: list[FlowLogs]) -> float:
    """The run's t0: the earliest sender start, each less its flow's configured start."""
    starts: list[float] = []
    for flow, flow_logs in zip(spec.flows, logs, strict=True):
        if flow_logs.summary is not None:
            starts.append(flow_logs.summary["start_ts"] - flow.start)
        elif flow_logs.sent:
            starts.append(flow_logs.sent[0]["ts"] - flow.start)
    if not starts:
        raise AnalysisError(f"no sender produced any output ({rundir.sender_log('*')} are empty)")
    return float(min(starts))
