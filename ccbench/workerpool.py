"""The workers an installation has: each registers what it can run (its pool, testbed kinds,
the capabilities it probed: kernel congestion controls, BPF struct_ops controllers, netem,
NFQUEUE) and heartbeats while it lives. The dispatcher sends a run only to a live worker of
the run's pool that can run it, on that worker's own queue; a submission no live worker could
run is refused with the reason.

Standard shapes, so the API, the scheduler and the workers agree: `Capabilities` (what a worker
declares) and `Requirements` (what a run needs, from its spec)."""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from ccbench.db.models import Worker, utcnow
from ccbench.settings import Settings, get_settings
from schemas import ExperimentSpec
from schemas.algorithms import KERNEL_BUILTIN_NAMES


@dataclass(frozen=True)
class Capabilities:
    """What a worker declares when it registers."""

    testbeds: list[str]  # testbed kinds it runs: mininet (root, Mininet), hosts (Ansible)
    congestion_controls: list[str] = field(default_factory=list)  # the kernel's, by name
    bpf: list[str] = field(default_factory=list)  # BPF controllers the kernel accepts
    netem: bool = False
    nfqueue: bool = False

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Capabilities:
        return cls(**{k: data[k] for k in cls.__dataclass_fields__ if k in data})


@dataclass(frozen=True)
class Requirements:
    """What a run needs of the worker that runs it."""

    pool: str
    testbed: str
    congestion_controls: frozenset[str]  # kernel built-ins, run on this worker's kernel
    bpf: frozenset[str]
    netem: bool
    nfqueue: bool


def requirements_of(spec: ExperimentSpec) -> Requirements:
    """On the hosts testbed the flows run on the team's hosts (their preflight checks them):
    the worker only needs to drive Ansible."""
    local = spec.testbed.kind == "mininet"
    builtin = {KERNEL_BUILTIN_NAMES[f.algorithm] for f in spec.flows
               if f.agent == "kernel" and f.runtime == "builtin"}  # fmt: skip
    bpf = {f.algorithm.value for f in spec.flows if f.agent == "kernel" and f.runtime == "bpf"}
    links = spec.links
    tc = bool(links) and spec.bottleneck.link_mechanism == "tc"
    return Requirements(
        pool=spec.testbed.pool,
        testbed=spec.testbed.kind,
        congestion_controls=frozenset(builtin if local else ()),
        bpf=frozenset(bpf if local else ()),
        netem=local and tc and spec.bottleneck.delay_mechanism == "netem",
        nfqueue=local and bool(links) and not (tc and spec.bottleneck.delay_mechanism == "netem"),
    )


def missing(capabilities: Capabilities, needs: Requirements) -> list[str]:
    """What the worker lacks for the run, each as a phrase; empty when it can run it."""
    lacks = []
    if needs.testbed not in capabilities.testbeds:
        lacks.append(f"the {needs.testbed} testbed")
    for name in sorted(needs.congestion_controls - set(capabilities.congestion_controls)):
        lacks.append(f"the kernel congestion control {name}")
    for name in sorted(needs.bpf - set(capabilities.bpf)):
        lacks.append(f"the BPF controller {name}")
    if needs.netem and not capabilities.netem:
        lacks.append("netem")
    if needs.nfqueue and not capabilities.nfqueue:
        lacks.append("NFQUEUE")
    return lacks


def worker_id(settings: Settings | None = None) -> str:
    """This worker's id: CCBENCH_WORKER_ID, else the host name and a random part kept in the
    state directory (so a restarted worker is the same worker, and several workers on one
    host, each with its own state directory, are different ones)."""
    settings = settings or get_settings()
    if settings.worker_id:
        return settings.worker_id
    path = Path(settings.state_dir) / "worker-id"
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        host = "".join(c if c.isalnum() or c in "-_" else "-" for c in socket.gethostname())
        path.write_text(f"{host[:40].lower()}-{uuid.uuid4().hex[:8]}\n")
    return path.read_text().strip()


def register(
    session: Session, worker: str, pool: str, capabilities: Capabilities, slots: int, version: str
) -> Worker:
    """Insert or refresh the worker's row; it is live from now on."""
    now = utcnow()
    row = session.get(Worker, worker)
    if row is None:
        row = Worker(id=worker)
        session.add(row)
    row.pool, row.slots, row.version = pool, slots, version
    row.capabilities = asdict(capabilities)
    row.host = socket.gethostname()
    row.pid = os.getpid()
    row.started_at = row.heartbeat_at = now
    row.stopped_at = None
    session.flush()
    return row


def heartbeat(session: Session, worker: str) -> None:
    session.execute(
        update(Worker).where(Worker.id == worker).values(heartbeat_at=utcnow(), stopped_at=None)
    )


def stopped(session: Session, worker: str) -> None:
    """The worker stopped on purpose: not live any more, at once."""
    session.execute(update(Worker).where(Worker.id == worker).values(stopped_at=utcnow()))


def live_workers(session: Session, settings: Settings | None = None) -> list[Worker]:
    settings = settings or get_settings()
    cutoff = utcnow() - timedelta(seconds=settings.worker_timeout_s)
    return list(
        session.scalars(
            select(Worker).where(Worker.heartbeat_at > cutoff, Worker.stopped_at.is_(None))
        )
    )


def refusal(session: Session, spec: ExperimentSpec, settings: Settings | None = None) -> str | None:
    """Why no live worker could run the spec, or None. With no live worker at all nothing is
    known, and the run waits for one."""
    workers = live_workers(session, settings)
    if not workers:
        return None
    needs = requirements_of(spec)
    in_pool = [w for w in workers if w.pool == needs.pool]
    if not in_pool:
        pools = sorted({w.pool for w in workers})
        return f"no live worker serves the pool {needs.pool!r} (pools: {', '.join(pools)})"
    lacks = [missing(Capabilities.from_dict(w.capabilities), needs) for w in in_pool]
    if all(lacks):
        fewest = min(lacks, key=len)
        return (f"no live worker of the pool {needs.pool!r} can run it: the closest "
                f"({len(in_pool)} live) lacks {', '.join(fewest)}")  # fmt: skip
    return None


def age_s(when: datetime | None) -> float | None:
    return None if when is None else (utcnow() - when).total_seconds()
