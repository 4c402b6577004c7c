"""From a validated spec to the sandbox's plan: every unit resolved (BDP fractions to packets,
algorithm ids to kernel controller names), paths filled in."""

from __future__ import annotations

from pathlib import Path

from ccbench.settings import Settings
from schemas import ExperimentSpec
from schemas.algorithms import KERNEL_BUILTIN_NAMES
from workers.testbeds.mininet.plan import BottleneckPlan, FlowPlan, Plan


def plan_for_spec(spec: ExperimentSpec, *, run_id: str, out_dir: Path, settings: Settings) -> Plan:
    bottleneck = spec.topology.bottleneck
    buffer_pkts, buffer_bytes = bottleneck.buffer_limit()
    if spec.seed is None:
        raise ValueError("the run has no seed: runs get theirs when the submission is expanded")
    return Plan(
        run_id=run_id,
        run_dir=str(out_dir.resolve()),
        agents_dir=str(Path(settings.agents_dir).resolve()),
        duration_s=spec.duration,
        sampling_interval_s=spec.sampling_interval,
        seed=spec.seed,
        bottleneck=BottleneckPlan(
            rate_bps=bottleneck.rate,
            delay_s=bottleneck.delay,
            buffer_pkts=buffer_pkts,
            buffer_bytes=buffer_bytes,
            queue=bottleneck.queue,
            red=bottleneck.red.model_dump() if bottleneck.queue == "red" else {},
            loss=bottleneck.loss,
            jitter_s=bottleneck.jitter,
        ),
        flows=[
            FlowPlan(
                index=i,
                algorithm=KERNEL_BUILTIN_NAMES[flow.algorithm],
                start_s=flow.start,
                duration_s=spec.flow_duration(i),
                access_delay_s=flow.access_delay,
                direction=flow.direction,
            )
            for i, flow in enumerate(spec.flows)
        ],
        link_mechanism=bottleneck.link_mechanism,
        delay_mechanism=bottleneck.delay_mechanism,
    )
