"""The run state machine: the run row in the database is the truth.

queued -> provisioning -> running -> collecting -> analyzing -> done | failed | cancelled
"""

from enum import StrEnum


class RunStatus(StrEnum):
    queued = "queued"
    provisioning = "provisioning"
    running = "running"
    collecting = "collecting"
    analyzing = "analyzing"
    done = "done"
    failed = "failed"
    cancelled = "cancelled"


ACTIVE: frozenset[RunStatus] = frozenset(
    {RunStatus.provisioning, RunStatus.running, RunStatus.collecting, RunStatus.analyzing}
)
FINAL: frozenset[RunStatus] = frozenset({RunStatus.done, RunStatus.failed, RunStatus.cancelled})

# Legal moves. Any non-final state may fail or be cancelled; an active run may go back to
# queued only through the reaper's retry of a run whose worker died, or (from analyzing) to be
# run again alone when load spoiled its checks (workers/lifecycle.py, workers/packing.py).
TRANSITIONS: dict[RunStatus, frozenset[RunStatus]] = {
    RunStatus.queued: frozenset({RunStatus.provisioning, RunStatus.cancelled, RunStatus.failed}),
    RunStatus.provisioning: frozenset(
        {RunStatus.running, RunStatus.failed, RunStatus.cancelled, RunStatus.queued}
    ),
    RunStatus.running: frozenset(
        {RunStatus.collecting, RunStatus.failed, RunStatus.cancelled, RunStatus.queued}
    ),
    RunStatus.collecting: frozenset(
        {RunStatus.analyzing, RunStatus.failed, RunStatus.cancelled, RunStatus.queued}
    ),
    RunStatus.analyzing: frozenset(
        {RunStatus.done, RunStatus.failed, RunStatus.cancelled, RunStatus.queued}
    ),
    RunStatus.done: frozenset(),
    RunStatus.failed: frozenset(),
    RunStatus.cancelled: frozenset(),
}


def sources_of(target: RunStatus) -> frozenset[RunStatus]:
    """Every state from which `target` may be entered."""
    return frozenset(s for s, targets in TRANSITIONS.items() if target in targets)


class ExperimentStatus(StrEnum):
    queued = "queued"
    running = "running"
    done = "done"
    failed = "failed"
    cancelled = "cancelled"


def experiment_status(counts: dict[RunStatus, int], cancel_requested: bool) -> ExperimentStatus:
    """An experiment's status, derived from how many of its runs are in each state."""
    total = sum(counts.values())
    unfinished = total - sum(counts.get(s, 0) for s in FINAL)
    if unfinished:
        if counts.get(RunStatus.queued, 0) == total:
            return ExperimentStatus.queued
        return ExperimentStatus.running
    if cancel_requested and counts.get(RunStatus.cancelled, 0):
        return ExperimentStatus.cancelled
    if counts.get(RunStatus.failed, 0):
        return ExperimentStatus.failed
    if counts.get(RunStatus.cancelled, 0):
        return ExperimentStatus.cancelled
    return ExperimentStatus.done
