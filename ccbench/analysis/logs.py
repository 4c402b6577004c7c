"""The reading edge of a run's analysis: the agents' JSON-lines logs (formats in
docs/contracts.md) stay dicts here, as the agents wrote them; what the other analysis modules
get is typed: each flow's lines sorted by kind (`FlowLogs`), the testbed's provenance
(`Provenance`)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# One JSON line of an agent's log, as written.
Line = dict[str, Any]


class AnalysisError(Exception):
    """The run's logs are missing or unusable; the message names the file."""


def read_jsonl(path: Path) -> Iterator[Line]:
    if not path.exists():
        raise AnalysisError(f"{path.name} is missing from the run directory")
    with path.open() as handle:
        for number, line in enumerate(handle, 1):
            line = line.strip()
            if not line:
                continue
            try:
                yield json.loads(line)
            except json.JSONDecodeError as exc:
                raise AnalysisError(f"{path.name} line {number} is not JSON: {exc}") from exc


@dataclass(frozen=True)
class FlowLogs:
    """One flow's agent lines: everything its sender wrote, the sender's interval samples
    (kernel flows sample tcp_info; userspace flows write the same keys, type "transport"), its
    final summary, and the receiver's per-interval lines."""

    sent: list[Line]
    info: list[Line]
    summary: Line | None
    received: list[Line]

    @classmethod
    def of(cls, sender: list[Line], receiver: list[Line]) -> FlowLogs:
        return cls(
            sent=sender,
            info=[s for s in sender if s.get("type") in ("tcp_info", "transport")],
            summary=next((s for s in sender if s.get("type") == "summary"), None),
            received=[r for r in receiver if r.get("type") == "recv"],
        )

    @property
    def sender_address(self) -> tuple[str, int] | None:
        """The sender's address and port as its agent reported them ("10.0.0.1:43210")."""
        if not self.summary or not self.summary.get("local"):
            return None
        address, _, port = str(self.summary["local"]).rpartition(":")
        return address, int(port)


def trace_by_flow(logs: Sequence[FlowLogs], trace: Iterable[Line]) -> list[list[Line]]:
    """Each flow's samples of the BPF state trace: those of its sender's address and port
    (`FlowLogs.sender_address`). A flow whose sender reported no address gets none."""
    flow_of = {logs_.sender_address: i for i, logs_ in enumerate(logs) if logs_.sender_address}
    per_flow: list[list[Line]] = [[] for _ in logs]
    for sample in trace:
        i = flow_of.get((sample["saddr"], sample["sport"]))
        if i is not None:
            per_flow[i].append(sample)
    return per_flow


@dataclass(frozen=True)
class Provenance:
    """What the testbed recorded about the run (provenance.json) that the analysis uses."""

    testbed: str | None = None
    link_mechanism: str | None = None
    delay_mechanism: str | None = None
    emulator_mode: str | None = None  # packet | aggregate (link_mechanism emulator)
    ping_rtt_min_s: float | None = None
    host_cpu_busy: float | None = None
    cpus: int | None = None
    # Hosts testbed: each receiver's clock minus its sender's, by flow index as text.
    receiver_clock_offsets_s: dict[str, float | None] = field(default_factory=dict)
    # Each emulator's counters when it stopped, by its stats file's stem ("link-0-data").
    emulator_counters: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def read(cls, path: Path) -> Provenance:
        """The file's values; all unknown when the testbed wrote none."""
        raw: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
        busy = raw.get("host_cpu_busy")
        return cls(
            testbed=raw.get("testbed"),
            link_mechanism=raw.get("link_mechanism"),
            delay_mechanism=raw.get("delay_mechanism"),
            emulator_mode=raw.get("emulator_mode"),
            ping_rtt_min_s=(raw.get("ping_rtt_s") or {}).get("min"),
            host_cpu_busy=float(busy) if busy is not None else None,
            cpus=(raw.get("capabilities") or {}).get("cpus"),
            receiver_clock_offsets_s=raw.get("receiver_clock_offset_s") or {},
            emulator_counters=raw.get("emulator_counters") or {},
        )

    @property
    def emulated(self) -> bool:
        """The bottleneck was ccbench-link, whose packet log the queue metrics come from."""
        return self.link_mechanism == "emulator"

    def clock_offset_s(self, flow: int) -> float | None:
        return self.receiver_clock_offsets_s.get(str(flow))


def to_sender_clock(receivers: list[list[Line]], provenance: Provenance) -> None:
    """Hosts testbed: shift each receiver's timestamps onto its sender's clock."""
    for i, lines in enumerate(receivers):
        offset = provenance.clock_offset_s(i)
        if not offset:
            continue
        for line in lines:
            for key in ("ts", "first_byte_ts", "last_byte_ts"):
                if isinstance(line.get(key), int | float):
                    line[key] -= offset
