"""From a validated spec to the run's plan (workers/plan.py): every unit resolved (BDP fractions
to packets, algorithm ids to kernel controller names, per-run names for BPF controllers,
transport options with the schema's defaults filled in), paths filled in."""

from __future__ import annotations

from pathlib import Path

from ccbench.settings import Settings
from schemas import Bottleneck, ExperimentSpec
from schemas.algorithms import KERNEL_BUILTIN_NAMES, PACED_EACH_SEGMENT
from schemas.spec import TransportOptions
from workers import bpf
from workers.plan import AGGREGATE_ABOVE_BPS, ControllerPlan, FlowPlan, LinkPlan, Plan


def link_plan(link: Bottleneck) -> LinkPlan:
    buffer_pkts, buffer_bytes = link.buffer_limit()
    return LinkPlan(
        rate_bps=link.rate,
        delay_s=link.delay,
        buffer_pkts=buffer_pkts,
        buffer_bytes=buffer_bytes,
        queue=link.queue,
        red=link.red.model_dump() if link.queue == "red" else {},
        loss=link.loss,
        jitter_s=link.jitter,
        trace_ms=list(link.rate_trace_ms) if link.rate_trace_ms else None,
    )


def emulator_mode(spec: ExperimentSpec) -> str:
    """The run's ccbench-link mode: the bottleneck's emulator_mode, or with auto, aggregate
    when the sandbox has a link faster than AGGREGATE_ABOVE_BPS (per-packet verdicts fall
    behind there), else packet (the hosts testbed's router: always packet)."""
    links = spec.links
    if not links or spec.bottleneck.link_mechanism == "tc":
        return "packet"
    chosen = spec.bottleneck.emulator_mode
    if chosen != "auto":
        return chosen
    fast = any(link.rate > AGGREGATE_ABOVE_BPS for link in links)
    return "aggregate" if fast and spec.testbed.kind == "mininet" else "packet"


def controllers_for_spec(
    spec: ExperimentSpec, attempt_key: str
) -> tuple[list[ControllerPlan], list[str]]:
    """The BPF controllers a run's attempt (`attempt_key`, bpf.attempt_key) registers (one per
    algorithm and parameter set; on the hosts testbed one per sender host, algorithm and
    parameter set, as namespace hosts or containers may share one kernel and so one list of
    controllers) and each flow's controller name: the kernel's (TCP_CONGESTION) or, for
    userspace flows, the id."""
    on_hosts = spec.testbed.kind == "hosts"
    controllers: dict[tuple[str | None, str, tuple[tuple[str, float], ...]], ControllerPlan] = {}
    names = []
    for flow in spec.flows:
        if flow.agent == "userspace":  # ccbench-cc takes the algorithm id itself
            names.append(flow.algorithm.value)
            continue
        if flow.runtime != "bpf":
            names.append(KERNEL_BUILTIN_NAMES[flow.algorithm])
            continue
        params = flow.parameter_values()
        host = flow.src if on_hosts else None
        key = (host, flow.algorithm.value, tuple(sorted(params.items())))
        if key not in controllers:
            controllers[key] = ControllerPlan(
                name=bpf.controller_name(attempt_key, len(controllers), flow.algorithm.value),
                algorithm=flow.algorithm.value,
                params=params,
                symbols=bpf.symbol_values(flow.algorithm.value, params),
                host=host,
            )
        names.append(controllers[key].name)
    return list(controllers.values()), names


def flow_plans(spec: ExperimentSpec, cc_names: list[str]) -> list[FlowPlan]:
    """Each flow resolved: its controller's name, times in seconds, path and agent options."""
    return [
        FlowPlan(
            index=i,
            algorithm=cc_names[i],
            start_s=flow.start,
            duration_s=spec.flow_duration(i),
            access_delay_s=flow.access_delay,
            direction=flow.direction,
            entry=spec.flow_path(i)[0],
            exit=spec.flow_path(i)[1],
            agent=flow.agent,
            params=flow.parameter_values() if flow.agent == "userspace" else {},
            traffic=flow.traffic.model_dump(),
            transport=(flow.transport or TransportOptions()).model_dump()
            if flow.agent == "userspace"
            else {},
            src=flow.src,
            dst=flow.dst,
            initial_window=flow.initial_window,
            send_jitter=flow.send_jitter.model_dump() if flow.send_jitter else None,
            one_segment_per_send=flow.agent == "kernel"
            and flow.runtime == "bpf"
            and flow.algorithm in PACED_EACH_SEGMENT,
        )
        for i, flow in enumerate(spec.flows)
    ]


def plan_for_spec(
    spec: ExperimentSpec, *, run_id: str, out_dir: Path, settings: Settings, attempt: int = 1
) -> Plan:
    """The plan of the run's attempt `attempt` (BPF controller names are per attempt)."""
    if spec.seed is None:
        raise ValueError("the run has no seed: runs get theirs when the submission is expanded")
    controllers, cc_names = controllers_for_spec(spec, bpf.attempt_key(run_id, attempt))
    links = spec.links
    return Plan(
        run_id=run_id,
        run_dir=str(out_dir.resolve()),
        agents_dir=str(Path(settings.agents_dir).resolve()),
        duration_s=spec.duration,
        sampling_interval_s=spec.sampling_interval,
        seed=spec.seed,
        links=[link_plan(link) for link in links],
        flows=flow_plans(spec, cc_names),
        testbed=spec.testbed.kind,
        router=spec.testbed.router,
        bottleneck_index=spec.bottleneck_index if links else 0,
        link_mechanism=spec.bottleneck.link_mechanism if links else "auto",
        delay_mechanism=spec.bottleneck.delay_mechanism if links else "auto",
        emulator_mode=emulator_mode(spec),
        controllers=controllers,
    )
