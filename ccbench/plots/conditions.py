"""The conditions a figure's subtitle states: the algorithms, the bottleneck's rate, the base
RTT and the buffer — of one run (as applied) or of a matrix's base (less what its axes vary)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import ValidationError

from schemas import ExperimentSpec
from schemas.metrics import BIT_PER_S, PACKET, SECOND, format_quantity
from schemas.spec import Chain, RealPath
from schemas.units import SI_NUMBERS, Buffer

SEPARATOR = " · "


def stored_spec(document: Mapping[str, Any]) -> ExperimentSpec | None:
    """A stored (SI-normalised) spec; None when it no longer validates (an older version)."""
    try:
        return ExperimentSpec.model_validate(document, context=SI_NUMBERS)
    except ValidationError:
        return None


def algorithms(labels: Iterable[str]) -> str:
    """ "reno vs cubic", "2 × reno", "2 × reno vs cubic"."""
    counts = Counter(labels)
    return " vs ".join(name if n == 1 else f"{n} × {name}" for name, n in counts.items())


def buffer_text(buffer: Buffer) -> str:
    if buffer.unit == "bdp":
        return f"{buffer.value:g} BDP"
    if buffer.unit == "pkt":
        return f"{int(buffer.value)} pkt"
    return format_quantity(int(buffer.value), "B")


def conditions(
    spec: ExperimentSpec | None,
    applied: Mapping[str, Any] | None = None,
    varying: Iterable[str] = (),
) -> str:
    """ "reno vs cubic · 10 Mbit/s · RTT 40 ms · buffer 33 pkt (1 BDP)": the forward flows'
    algorithms and the bottleneck's rate, base RTT and buffer, as applied when `applied` (a
    run's AppliedConditions) has them, else as the spec configures. Fields a matrix axis
    varies (`varying`: axis paths) are left out: each point says its own."""
    paths = list(varying)
    varies = {
        "flows": any(p.startswith("flows") for p in paths),
        "rate": any(p.startswith("topology") and p.endswith(".rate") for p in paths),
        "delay": any(p.startswith("topology") and p.endswith(".delay") for p in paths),
        "buffer": any(p.startswith("topology") and p.endswith(".buffer") for p in paths),
    }
    applied = applied or {}
    parts: list[str] = []
    if spec is not None and not varies["flows"]:
        forward = [f.label for f in spec.flows if f.direction == "forward"]
        reverse = [f.label for f in spec.flows if f.direction == "reverse"]
        parts.append(
            algorithms(forward) + (f" (+ reverse {algorithms(reverse)})" if reverse else "")
        )
    if spec is not None and isinstance(spec.topology, RealPath):
        parts.append("real path")
        rtt = applied.get("base_rtt_s")
        if rtt:
            parts.append(f"RTT {format_quantity(rtt, SECOND)}")
        return SEPARATOR.join(parts)
    link = spec.bottleneck if spec is not None else None
    rate = applied.get("rate_bps") or (link.rate if link else None)
    if rate and not varies["rate"]:
        parts.append(format_quantity(rate, BIT_PER_S))
    rtt = applied.get("base_rtt_s") or (link.base_rtt_s if link else None)
    if rtt and not varies["delay"]:
        parts.append(f"RTT {format_quantity(rtt, SECOND)}")
    if not varies["buffer"]:
        configured = buffer_text(link.buffer) if link else None
        packets = applied.get("buffer_pkts")
        if packets is not None:
            shown = format_quantity(int(packets), PACKET)
            if link is not None and link.buffer.unit != "pkt":
                shown += f" ({configured})"
            parts.append(f"buffer {shown}")
        elif configured is not None:
            parts.append(f"buffer {configured}")
    if spec is not None and isinstance(spec.topology, Chain):
        parts.append(f"bottleneck: link {spec.bottleneck_index} of {len(spec.topology.links)}")
    return SEPARATOR.join(parts)
