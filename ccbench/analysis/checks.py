"""Fidelity: what the testbed applied against what the spec asked for, and the checks that the
configured network was really there (delay, rate, buffer, per-flow RTTs, the emulator's
timing, the host's CPU, the receivers' clocks) and that each kernel sender's congestion state
stayed possible (controller_state)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, Literal

from ccbench import rundir
from ccbench.analysis import metrics as m
from ccbench.analysis.logs import Line, Provenance
from ccbench.analysis.packetlog import LogDelays
from ccbench.analysis.queue import EmulatorTiming, QueueMetrics
from schemas import AppliedConditions, Check, ExperimentSpec, FlowMetrics

# One full-size packet with its Ethernet header, as the bottleneck qdisc counts it.
WIRE_PACKET_BYTES = 1514
# Release lateness the emulator may show at p99 before its timing is suspect.
EMULATOR_LATE_P99_US = 1000
# Above this share of busy CPU the host itself may have shaped the results.
HOST_CPU_BUSY_LIMIT = 0.9
# The checks that load on the host can spoil (the emulator released late or the CPUs were
# saturated) while the network model itself was right: a run that fails one of them is run
# again, alone (workers/packing.py).
LOAD_SENSITIVE_CHECKS = frozenset({"emulator_timing", "send_jitter", "host_cpu"})
# Receivers' timestamps are moved to the sender's clock by the measured offset; beyond this
# the offset's own error (half an ICMP round trip + 1 ms) could shift per-interval metrics.
CLOCK_OFFSET_LIMIT_S = 0.01


def spoiled_by_load(checks: Iterable[Check]) -> list[Check]:
    """The failed checks that load on the host can spoil (LOAD_SENSITIVE_CHECKS)."""
    return [c for c in checks if not c.ok and c.name in LOAD_SENSITIVE_CHECKS]


def emulated_conditions(
    spec: ExperimentSpec,
    provenance: Provenance,
    queue: QueueMetrics,
    min_rtts: list[float],
    flows: list[FlowMetrics],
    send_jitter: dict[int, LogDelays] | None = None,
) -> tuple[AppliedConditions, list[Check]]:
    """`send_jitter`: what each jittered flow's access link did, by flow index."""
    bottleneck = spec.bottleneck
    buffer_pkts, buffer_bytes = bottleneck.buffer_limit()
    applied = AppliedConditions(
        rate_bps=bottleneck.rate,
        delay_s=bottleneck.delay,
        base_rtt_s=bottleneck.base_rtt_s,
        buffer_pkts=buffer_pkts,
        buffer_bytes=buffer_bytes,
        delay_mechanism=provenance.delay_mechanism,
        measured_min_rtt_s=min(min_rtts) if min_rtts else None,
        measured_rate_bps=queue.busy_rate_bps,
        ping_rtt_min_s=provenance.ping_rtt_min_s,
        link_mechanism=provenance.link_mechanism,
        emulator_mode=_emulator_mode(provenance),
        queue_source="emulator_log" if provenance.emulated else "qdisc_sampling",
    )
    shortest_base_rtt = min(spec.base_rtt_s(i) for i in range(len(spec.flows)))
    checks = _checks(applied, queue, shortest_base_rtt)
    if len({round(spec.base_rtt_s(i), 9) for i in range(len(spec.flows))}) > 1:
        checks.append(_per_flow_rtt(spec, flows))
    if provenance.emulated:
        counters = provenance.emulator_counters.get(rundir.link_name(spec.bottleneck_index, True))
        checks.append(_emulator_timing(queue.timing, counters))
    if send_jitter:
        checks.append(_send_jitter(spec, send_jitter))
    if provenance.host_cpu_busy is not None:
        checks.append(_host_cpu(provenance.host_cpu_busy, provenance.cpus))
    clock = clock_check(spec, provenance)
    if clock is not None:
        checks.append(clock)
    return applied, checks


def _emulator_mode(provenance: Provenance) -> Literal["packet", "aggregate"] | None:
    """The emulator's mode as the run recorded it; runs from before modes were per packet."""
    if not provenance.emulated:
        return None
    return "aggregate" if provenance.emulator_mode == "aggregate" else "packet"


def real_path_conditions(
    spec: ExperimentSpec, provenance: Provenance, min_rtts: list[float]
) -> tuple[AppliedConditions, list[Check]]:
    """A real path: nothing was applied; what was measured before the flows is reported."""
    ping_min = provenance.ping_rtt_min_s
    applied = AppliedConditions(
        rate_bps=getattr(spec.topology, "rate", None),
        delay_s=None,
        base_rtt_s=ping_min,
        buffer_pkts=None,
        buffer_bytes=None,
        delay_mechanism=None,
        measured_min_rtt_s=min(min_rtts) if min_rtts else None,
        measured_rate_bps=None,
        ping_rtt_min_s=ping_min,
        link_mechanism="none",
        queue_source="none",
    )
    clock = clock_check(spec, provenance)
    return applied, [clock] if clock is not None else []


def clock_check(spec: ExperimentSpec, provenance: Provenance) -> Check | None:
    """Hosts testbed: each receiver's clock offset to its sender was measured (ICMP
    timestamps) and is small enough to trust the common start and the time series."""
    if provenance.testbed != "hosts":
        return None
    parts, ok = [], True
    for i in range(len(spec.flows)):
        offset = provenance.clock_offset_s(i)
        if offset is None:
            ok = False
            parts.append(f"flow {i}: not measured")
        else:
            ok = ok and abs(offset) <= CLOCK_OFFSET_LIMIT_S
            parts.append(f"flow {i}: {offset * 1e3:+.1f} ms")
    return Check(
        name="clock",
        ok=ok,
        detail="receiver clock minus sender clock (corrected for): "
        + ", ".join(parts)
        + f"; limit {CLOCK_OFFSET_LIMIT_S * 1e3:g} ms",
    )


def controller_state_check(
    spec: ExperimentSpec, infos: list[list[Line]], traces: list[list[Line]], t0: float
) -> Check | None:
    """Kernel flows: no sender's slow-start threshold ever held a value above
    TCP_INFINITE_SSTHRESH (2^31 - 1), which no congestion controller returns. The agent's
    tcp_info samples and the flow's BPF state-trace samples (`traces`, `logs.trace_by_flow`)
    flag one as `ssthresh_invalid`. On this kernel (6.18) BPF controllers sometimes get one:
    the kernel enters fast recovery without running the controller's ssthresh program and
    stores a stale stack word, PRR then sets cwnd to millions of segments and the flow stops
    backing off (docs/reproductions.md, "The skipped ssthresh call"). The network was right,
    the sender was not: such a run must not count."""
    kernel = [i for i, flow in enumerate(spec.flows) if flow.agent == "kernel"]
    if not kernel:
        return None
    first: dict[int, float] = {}
    for i in kernel:
        flagged = [s["ts"] for s in (*infos[i], *traces[i]) if s.get("ssthresh_invalid")]
        if flagged:
            first[i] = min(flagged)
    if not first:
        return Check(
            name="controller_state",
            ok=True,
            detail="every kernel flow's ssthresh stayed within the range controllers return",
        )
    return Check(
        name="controller_state",
        ok=False,
        detail="ssthresh above 2^31 - 1, a value no controller returns (on this kernel: a BPF "
        "controller's skipped ssthresh call): "
        + ", ".join(f"flow {i} from {ts - t0:.1f} s" for i, ts in sorted(first.items())),
    )


def _host_cpu(busy: float, cpus: int | None) -> Check:
    """Fidelity: emulation on a saturated host is not the network that was asked for."""
    return Check(
        name="host_cpu",
        ok=busy < HOST_CPU_BUSY_LIMIT,
        detail=f"host CPUs {busy * 100:.0f}% busy while the flows ran"
        + (f" ({cpus} CPUs)" if cpus else "")
        + f"; limit {HOST_CPU_BUSY_LIMIT * 100:.0f}%",
    )


def _emulator_timing(timing: EmulatorTiming | None, counters: dict[str, Any] | None) -> Check:
    """Fidelity of the emulator (from its packet log): how late packets left against the
    model's schedule, and how far the spacing of back-to-back packets strayed from their
    transmission time; with its counters, how it was scheduled and how late its sleeps ended
    (and how much of that it waited for a CPU), which say where lateness came from."""
    p50 = timing.release_late_us_p50 if timing else None
    p99 = timing.release_late_us_p99 if timing else None
    spacing = timing.spacing_error_us_p99 if timing else None
    if p99 is None:
        return Check(
            name="emulator_timing",
            ok=False,
            detail="not measurable: no packet was released, or the log (version 1) holds no "
            "schedule for jittered packets",
        )
    return Check(
        name="emulator_timing",
        ok=p99 <= EMULATOR_LATE_P99_US,
        detail=f"packets left {p50:.0f} us late at the median, {p99:.0f} us at p99 "
        f"(limit {EMULATOR_LATE_P99_US} us); back-to-back spacing error p99 "
        + (f"{spacing:.0f} us" if spacing is not None else "-")
        + _scheduling(counters or {}),
    )


def _scheduling(counters: dict[str, Any]) -> str:
    """How the emulator was scheduled and how late its wake-ups were, if it said."""
    scheduling = counters.get("scheduling")
    if not scheduling:
        return ""
    text = f"; scheduled {scheduling['policy']}"
    if "priority" in scheduling:
        text += f" {scheduling['priority']}"
    if "refused" in scheduling:
        text += f" ({scheduling['refused']})"
    wakeups = counters.get("wakeups") or {}
    late, waited = (
        (wakeups.get("late") or {}).get("us_p99"),
        (wakeups.get("run_delay") or {}).get("us_p99"),
    )
    if late is not None:
        text += f"; its sleeps ended {late:.0f} us late at p99"
        if waited is not None:
            text += f" (runnable without a CPU: {waited:.0f} us at p99)"
    shares = late_release_shares(counters)
    if shares:
        above = counters["late_causes"].get("above_us")  # not in logs before 2026-11-24
        text += (
            "; its late releases" + (f" (over {above} us)" if above else "") + " lost their time "
            f"{shares['timer']:.0%} asleep past it, {shares['run_delay']:.0%} waiting for a CPU, "
            f"{shares['busy']:.0%} in its own loop"
        )
    return text


def late_release_shares(counters: dict[str, Any]) -> dict[str, float] | None:
    """Where an emulator's late releases (more than `late_causes.above_us` late) lost their time,
    as shares of it, from its `late_causes` counters: `timer` (asleep past the release time: the
    timer's interrupt came late, or on a VM the virtual CPU was not running), `run_delay` (woken
    but without a CPU), `busy` (in its own loop, or stalled while spinning there). The first
    two are the host's doing; `busy` is the emulator's. None when none was late."""
    causes = counters.get("late_causes") or {}
    parts = {k: float(causes.get(f"{k}_us", 0)) for k in ("timer", "run_delay", "busy")}
    total = sum(parts.values())
    return {k: v / total for k, v in parts.items()} if total else None


def _send_jitter(spec: ExperimentSpec, delays: dict[int, LogDelays]) -> Check:
    """Each jittered flow's packets were held for their drawn delay (reported: its mean and
    p99 against the distribution's mean) and released on time (p99 within the emulator's
    limit)."""
    parts, ok = [], True
    for i, d in sorted(delays.items()):
        jitter = spec.flows[i].send_jitter
        assert jitter is not None, "only jittered flows have an access packet log"
        nominal = jitter.max / 2 if jitter.distribution == "uniform" else jitter.mean
        late, mean, p99 = d["release_late_us_p99"], d["jitter_us_mean"], d["jitter_us_p99"]
        if late is None or mean is None or p99 is None:
            ok = False
            parts.append(f"flow {i}: no packet was released")
            continue
        ok = ok and late <= EMULATOR_LATE_P99_US
        parts.append(
            f"flow {i}: {jitter.distribution} jitter of mean {nominal * 1e3:g} ms, held "
            f"{mean / 1e3:.3f} ms on average (p99 {p99 / 1e3:.3f} ms) over {d['packets']} "
            f"packets, released {late:.0f} us late at p99"
        )
    return Check(
        name="send_jitter",
        ok=ok,
        detail="; ".join(parts) + f" (limit {EMULATOR_LATE_P99_US} us)",
    )


def _per_flow_rtt(spec: ExperimentSpec, flows: list[FlowMetrics]) -> Check:
    """With access delays or different paths every flow has its own base RTT; each must show
    it (5%)."""
    parts, ok = [], True
    for i, flow in enumerate(flows):
        base = spec.base_rtt_s(i)
        if flow.rtt_min_s is None:
            ok = False
            parts.append(f"flow {i}: no RTT sample")
            continue
        slack = m.transmission_time_s(WIRE_PACKET_BYTES, spec.bottleneck.rate) * len(spec.links)
        ok = ok and 0.99 * base <= flow.rtt_min_s <= 1.05 * base + slack
        parts.append(f"flow {i}: {flow.rtt_min_s * 1e3:.2f} of {base * 1e3:.2f} ms")
    return Check(name="flow_rtts", ok=ok, detail="minimum RTT per flow: " + ", ".join(parts))


def _checks(
    applied: AppliedConditions, queue: QueueMetrics, shortest_base_rtt_s: float
) -> list[Check]:
    """Evidence that the testbed applied what the spec asked for (5% tolerance). The delay
    check compares the smallest RTT measured with the smallest configured (flows can add
    access delays)."""
    checks: list[Check] = []
    base = shortest_base_rtt_s
    min_rtt = applied.measured_min_rtt_s
    configured_rate = applied.rate_bps
    assert configured_rate is not None, "an emulated link always has a rate"
    # A packet and its ACK also take their transmission time at the bottleneck.
    slack = m.transmission_time_s(WIRE_PACKET_BYTES, configured_rate)
    if min_rtt is None:
        checks.append(Check(name="delay", ok=False, detail="no RTT sample was measured"))
    else:
        ok = 0.99 * base <= min_rtt <= 1.05 * base + slack
        if base > 0:
            detail = (
                f"minimum RTT {min_rtt * 1e3:.2f} ms for a configured base RTT of "
                f"{base * 1e3:.2f} ms ({(min_rtt / base - 1) * 100:+.1f}%)"
            )
        else:
            detail = f"minimum RTT {min_rtt * 1e3:.2f} ms, no delay configured"
        if applied.ping_rtt_min_s is not None:
            detail += f"; ping {applied.ping_rtt_min_s * 1e3:.2f} ms"
        checks.append(Check(name="delay", ok=ok, detail=detail))
    rate = applied.measured_rate_bps
    if rate is None:
        checks.append(
            Check(
                name="rate",
                ok=False,
                detail="the queue was never backlogged for 1 s: rate not measurable",
            )
        )
    else:
        ratio = rate / configured_rate
        checks.append(
            Check(
                name="rate",
                ok=abs(ratio - 1) <= 0.05,
                detail=f"bottleneck sent {rate / 1e6:.3f} Mbit/s while backlogged, configured "
                f"{configured_rate / 1e6:.3f} Mbit/s ({(ratio - 1) * 100:+.1f}%)",
            )
        )
    drops, full_drops = queue.drops or 0, queue.full_drops or 0
    if applied.buffer_pkts is not None:
        limit, peak, unit = float(applied.buffer_pkts), queue.queue_max_pkts, "pkts"
    else:
        limit, peak, unit = float(applied.buffer_bytes or 0), queue.queue_max_bytes, "bytes"
    if peak is None:
        checks.append(Check(name="buffer", ok=False, detail="no queue sample in the window"))
    else:
        within = peak <= limit
        # Buffer-full drops only happen at a full queue: the peak must come close to the limit
        # (sampled queues can miss the exact peak).
        consistent = full_drops == 0 or peak >= 0.8 * limit - (2 if unit == "pkts" else 3000)
        checks.append(
            Check(
                name="buffer",
                ok=within and consistent,
                detail=f"queue peak {peak:g} of {limit:g} {unit}, {drops} drops"
                + (f" ({full_drops} at a full buffer)" if full_drops != drops else ""),
            )
        )
    return checks
