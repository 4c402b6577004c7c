"""execute_run's body: claim the run, drive the testbed, analyse, store, always clean up.

Every state change is a conditional UPDATE guarded by the attempt number (ccbench.db.runs), so a
redelivered message, a second worker or a run the reaper has taken back cannot write over the
owner's work."""

from __future__ import annotations

import json
import logging
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from sqlalchemy import select, update
from sqlalchemy.exc import OperationalError, SQLAlchemyError
from sqlalchemy.orm import Session

from ccbench import jobs, rundir, workerpool
from ccbench.analysis.checks import spoiled_by_load
from ccbench.analysis.run import RunAnalysis, analyze_run
from ccbench.db.models import Experiment, FlowResult, Run, RunSeries, utcnow
from ccbench.db.runs import heartbeat, refresh_experiment_status, transition
from ccbench.db.session import session_scope
from ccbench.runstate import RunStatus
from ccbench.settings import Settings, get_settings
from ccbench.version import CCBENCH_VERSION
from schemas import Check, ExperimentSpec
from schemas.units import SI_NUMBERS
from workers import packing
from workers.artifacts import Uploader
from workers.planning import plan_for_spec
from workers.provenance import software
from workers.testbeds.registry import TestbedContext, testbed_for

log = logging.getLogger(__name__)


# Sandbox phases and the run state each one starts.
PHASE_STATES = {
    "provisioning": RunStatus.provisioning,
    "running": RunStatus.running,
    "collecting": RunStatus.collecting,
}


class RunLost(Exception):
    """The run is no longer this attempt's (reaped, cancelled or finished elsewhere)."""


@dataclass
class Claim:
    run_id: str
    attempt: int
    experiment_id: str
    team_id: str
    spec: ExperimentSpec
    run_dir: Path
    uploads: Uploader  # the run's files to the API, when this worker is on another machine
    load_reruns: int = 0  # times this run was requeued to run alone (workers/packing.py)
    # What the earlier attempts that were re-run because of load recorded of their packing.
    earlier: list[dict[str, Any]] = field(default_factory=list)
    admission: packing.Admission | None = None


def claim(run_id: str, worker_id: str, settings: Settings) -> Claim | None:
    """queued -> provisioning for this worker; None when the run is not queued (a no-op)."""
    with session_scope() as session:
        run = session.get(Run, run_id)
        if run is None or run.status != RunStatus.queued.value:
            return None
        experiment = session.get(Experiment, run.experiment_id)
        assert experiment is not None
        if experiment.cancel_requested_at is not None:
            # Cancellation is final, whatever message still carries the run.
            if transition(
                session,
                run_id,
                RunStatus.cancelled,
                only_from=frozenset({RunStatus.queued}),
                finished_at=utcnow(),
                error="cancelled by user",
            ):
                refresh_experiment_status(session, run.experiment_id)
            return None
        attempt = run.attempt + 1
        now = utcnow()
        if not transition(
            session,
            run_id,
            RunStatus.provisioning,
            only_from=frozenset({RunStatus.queued}),
            expect_attempt=run.attempt,
            **{
                "attempt": attempt,
                "worker_id": worker_id,
                "heartbeat_at": now,
                "started_at": now,
                "error": None,
                "progress": {},
            },
        ):
            return None
        refresh_experiment_status(session, run.experiment_id)
        run_dir = rundir.attempt_dir(settings.runs_dir, run_id, attempt)
        earlier = list((run.provenance or {}).get("packing", {}).get("load_reruns", []))
        return Claim(
            run_id=run_id,
            attempt=attempt,
            experiment_id=run.experiment_id,
            team_id=experiment.team_id,
            spec=ExperimentSpec.model_validate(run.spec, context=SI_NUMBERS),
            run_dir=run_dir,
            uploads=Uploader(settings, run_id, attempt, run_dir),
            load_reruns=run.load_reruns,
            earlier=earlier,
        )


@dataclass
class Monitor:
    """Runs on the task's thread between sandbox polls: heartbeat, phase moves, cancel check."""

    claim: Claim
    events: list[dict[str, Any]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    phase_started: dict[str, float] = field(default_factory=dict)
    cancelled: bool = False
    db_failing_since: float | None = None  # monotonic time of the first failed poll in a row

    def on_event(self, event: dict[str, Any]) -> None:  # sandbox reader thread
        with self.lock:
            if event.get("event") == "phase":
                self.phase_started.setdefault(str(event.get("phase")), time.monotonic())
            self.events.append(event)

    def phase_timings(self, started: float, ended: float) -> dict[str, float]:
        """Seconds spent in each sandbox phase: provisioning, running, collecting."""
        with self.lock:
            marks = sorted(self.phase_started.items(), key=lambda kv: kv[1])
        timings: dict[str, float] = {}
        for i, (phase, at) in enumerate(marks):
            until = marks[i + 1][1] if i + 1 < len(marks) else ended
            timings[f"{phase}_s"] = round(until - at, 3)
        if marks:
            timings["sandbox_start_s"] = round(marks[0][1] - started, 3)
        return timings

    def should_cancel(self) -> bool:  # task thread
        with self.lock:
            events, self.events = self.events, []
        c = self.claim
        try:
            with session_scope() as session:
                for event in events:
                    self._apply(session, event)
                if not heartbeat(session, c.run_id, c.attempt):
                    raise RunLost(f"run {c.run_id} attempt {c.attempt} is no longer active")
                cancel_at = session.scalar(
                    select(Experiment.cancel_requested_at).where(Experiment.id == c.experiment_id)
                )
        except OperationalError as exc:
            # A database that is busy or briefly away (SQLite's "database is locked" on an
            # overloaded host, a PostgreSQL restart) must not fail a run that is going well:
            # the poll rolled back, so its events wait for the next one. Past half the
            # heartbeat timeout the reaper is about to take the run: give up before that.
            now = time.monotonic()
            self.db_failing_since = self.db_failing_since or now
            with self.lock:
                self.events[:0] = events
            if now - self.db_failing_since > get_settings().heartbeat_timeout_s / 2:
                raise
            log.warning("run %s: the database did not answer a poll, trying again: %s",
                        c.run_id, exc.orig)  # fmt: skip
            return self.cancelled
        self.db_failing_since = None
        self.cancelled = cancel_at is not None
        c.uploads.logs()  # a worker on another machine keeps the API's copy of the log fresh
        return self.cancelled

    def _apply(self, session: Session, event: dict[str, Any]) -> None:
        c = self.claim
        kind = event.get("event")
        if kind == "phase" and event.get("phase") in PHASE_STATES:
            phase = str(event["phase"])
            target = PHASE_STATES[phase]
            if target != RunStatus.provisioning and not transition(
                session, c.run_id, target, expect_attempt=c.attempt
            ):
                raise RunLost(f"run {c.run_id} could not enter {target.value}")
        elif kind == "progress":
            run = session.get(Run, c.run_id)
            if run is not None and run.attempt == c.attempt:
                run.progress = {
                    "elapsed_s": event.get("elapsed_s"),
                    "duration_s": event.get("duration_s"),
                }


def execute(run_id: str, worker_id: str | None = None) -> str:
    """Run one run to a final state (as `worker_id`, default this worker's registered id), once
    it fits on this host (workers/packing.py). Returns the final status, 'queued' (to run again
    alone), 'skipped' (not queued) or 'waited' (no room in time: back to the dispatcher)."""
    settings = get_settings()
    worker_id = worker_id or workerpool.worker_id(settings)
    admission = admit(run_id, settings)
    if admission == "no room":
        return "waited"
    if admission == "cancelled":
        claim(run_id, worker_id, settings)  # a queued run of a cancelled experiment: cancelled
        return "cancelled"
    if admission == "not queued":
        log.info("run %s is not queued: redelivered or cancelled task, nothing to do", run_id)
        return "skipped"
    with packing.holding(admission):
        c = claim(run_id, worker_id, settings)
        if c is None:
            log.info("run %s is not queued: redelivered or cancelled task, nothing to do", run_id)
            return "skipped"
        c.admission = admission
        return _execute(c, settings)


def admit(
    run_id: str, settings: Settings
) -> packing.Admission | Literal["no room", "not queued", "cancelled"]:
    """Wait until the run's predicted cost fits this host's budget (workers/packing.py); a run
    re-run because of load waits for the host to itself. The run stays queued meanwhile.
    "no room": it did not fit within settings.pack_wait_s and goes back to the dispatcher (its
    message is spent). "not queued" and "cancelled" (its experiment is being cancelled): it
    needs no room."""
    with session_scope() as session:
        state = _queued_state_in(session, run_id)
        if state != "queued":
            return state
        run = session.get(Run, run_id)  # from the session's identity map: no second query
        assert run is not None
        spec = ExperimentSpec.model_validate(run.spec, context=SI_NUMBERS)
        exclusive = run.load_reruns > 0
    cost = packing.predicted_cost_cores(spec)
    budget = packing.budget_cores(settings)
    admission = packing.host_ledger(settings).admit(
        run_id,
        cost,
        budget,
        exclusive=exclusive,
        wait_s=settings.pack_wait_s,
        still_wanted=lambda: _still_queued(run_id),
    )
    if admission is None:
        state = _queued_state(run_id)
        if state != "queued":  # cancelled or taken elsewhere while it waited
            return state
        log.warning("run %s (%.3f cores) found no room in %.0f s: back to the dispatcher",
                    run_id, cost, settings.pack_wait_s)  # fmt: skip
        with session_scope() as session:
            session.execute(
                update(Run)
                .where(Run.id == run_id, Run.status == RunStatus.queued)
                .values(dispatched_at=None, dispatched_to=None)
                .execution_options(synchronize_session=False)
            )
        return "no room"
    return admission


def _queued_state_in(session: Session, run_id: str) -> Literal["queued", "not queued", "cancelled"]:
    """Whether the run is still queued to run: "cancelled" when its experiment is being
    cancelled, "not queued" when it is gone or no longer queued."""
    run = session.get(Run, run_id)
    if run is None or run.status != RunStatus.queued.value:
        return "not queued"
    experiment = session.get(Experiment, run.experiment_id)
    if experiment is None or experiment.cancel_requested_at is not None:
        return "cancelled"
    return "queued"


def _queued_state(run_id: str) -> Literal["queued", "not queued", "cancelled"]:
    with session_scope() as session:
        return _queued_state_in(session, run_id)


def _still_queued(run_id: str) -> bool:
    """For a run waiting for room: False once it is cancelled or no longer queued. A database
    that cannot answer now keeps it waiting (the wait is bounded by pack_wait_s)."""
    try:
        return _queued_state(run_id) == "queued"
    except SQLAlchemyError as exc:
        log.warning("run %s: cannot tell whether it is still queued (%s)", run_id, exc)
        return True


def _execute(c: Claim, settings: Settings) -> str:
    run_id = c.run_id
    started = time.monotonic()
    timings: dict[str, float] = {}
    try:
        c.run_dir.mkdir(parents=True, exist_ok=True)
        monitor = Monitor(c)
        plan = plan_for_spec(
            c.spec, run_id=c.run_id, out_dir=c.run_dir, settings=settings, attempt=c.attempt
        )
        testbed = testbed_for(plan.testbed, TestbedContext(c.team_id, settings))
        budget = jobs.run_budget(c.spec.duration, plan.testbed, settings)
        result = testbed.run(plan, monitor.on_event, monitor.should_cancel, budget.deadline_s)
        sandbox_ended = time.monotonic()
        monitor.should_cancel()  # apply the last events
        timings.update(monitor.phase_timings(started, sandbox_ended))
        timings["sandbox_s"] = round(sandbox_ended - started, 3)
        if result.status == "cancelled":
            return _finish(c, RunStatus.cancelled, "cancelled by user", timings)
        if result.status != "done":
            return _finish(c, RunStatus.failed, result.describe(), timings)

        analyzing_started = time.monotonic()
        with session_scope() as session:
            if not transition(session, c.run_id, RunStatus.analyzing, expect_attempt=c.attempt):
                raise RunLost(f"run {c.run_id} could not enter analyzing")
        analysis = analyze_run(c.run_dir, c.spec)
        timings["analysis_s"] = round(time.monotonic() - analyzing_started, 3)
        return _store_and_finish(c, analysis, timings)
    except RunLost as exc:
        log.warning("%s", exc)
        return "lost"
    except Exception as exc:  # noqa: BLE001 - every failure becomes the run's error text
        log.exception("run %s failed", run_id)
        return _finish(c, RunStatus.failed, f"{type(exc).__name__}: {exc}", timings)


def _finish(c: Claim, status: RunStatus, error: str | None, timings: dict[str, float]) -> str:
    provenance = _read_provenance(c)
    with session_scope() as session:
        moved = transition(
            session,
            c.run_id,
            status,
            expect_attempt=c.attempt,
            finished_at=utcnow(),
            error=error,
            timings=timings,
            provenance=provenance,
            artifacts_dir=str(c.run_dir),
            runs_beside=_runs_beside(provenance),
        )
        if moved:
            refresh_experiment_status(session, c.experiment_id)
    return status.value if moved else "lost"


def _runs_beside(provenance: dict[str, Any]) -> int | None:
    runs: int | None = provenance.get("packing", {}).get("runs_beside")
    return runs


def _read_provenance(c: Claim) -> dict[str, Any]:
    """What the sandbox recorded, plus what only the worker knows: ccbench's version, the
    software that ran the run (workers/provenance.py) and the run's seed (also on failed and
    cancelled runs)."""
    path = c.run_dir / rundir.PROVENANCE
    provenance: dict[str, Any] = {}
    if path.exists():
        provenance = json.loads(path.read_text())
    provenance["ccbench_version"] = CCBENCH_VERSION
    provenance["software"] = software(get_settings().agents_dir)
    provenance["seed"] = c.spec.seed
    if c.admission is not None:
        # The run's work is over (its sandbox is gone): the budget is free for the next run.
        provenance["packing"] = {**c.admission.release_and_record(), "load_reruns": c.earlier}
    if c.run_dir.is_dir():
        missing = c.uploads.everything()  # before the final state: then the API has the files
        if missing:
            provenance["artifacts_not_uploaded"] = missing
    return provenance


def _store_and_finish(c: Claim, analysis: RunAnalysis, timings: dict[str, float]) -> str:
    provenance = _read_provenance(c)
    spoiled = spoiled_by_load(analysis.summary.checks)
    if spoiled and c.load_reruns < get_settings().pack_load_reruns:
        return _rerun_alone(c, provenance, spoiled, timings)
    with session_scope() as session:
        for flow in analysis.flows:
            session.merge(
                FlowResult(
                    run_id=c.run_id,
                    flow_index=flow.flow,
                    algorithm=flow.algorithm,
                    metrics=flow.model_dump(mode="json", exclude={"flow", "algorithm"}),
                )
            )
        for name, data in analysis.series.items():
            session.merge(RunSeries(run_id=c.run_id, name=name, data=data))
        # The results are kept either way; a spec that requires its checks fails the run
        # when the network was not what it asked for.
        failed_checks = [ch for ch in analysis.summary.checks if not ch.ok]
        final, error = RunStatus.done, None
        if c.spec.measurement.require_checks and failed_checks:
            final = RunStatus.failed
            error = "checks failed (measurement.require_checks): " + "; ".join(
                f"{ch.name}: {ch.detail}" for ch in failed_checks
            )
        moved = transition(
            session,
            c.run_id,
            final,
            expect_attempt=c.attempt,
            finished_at=utcnow(),
            error=error,
            aggregate=analysis.summary.model_dump(mode="json"),
            timings=timings,
            provenance=provenance,
            artifacts_dir=str(c.run_dir),
            progress={"elapsed_s": c.spec.duration, "duration_s": c.spec.duration},
            runs_beside=_runs_beside(provenance),
        )
        if not moved:
            session.rollback()
            return "lost"
        refresh_experiment_status(session, c.experiment_id)
    return final.value


def _rerun_alone(
    c: Claim, provenance: dict[str, Any], spoiled: list[Check], timings: dict[str, float]
) -> str:
    """Checks that load spoils failed (ccbench.analysis.checks.LOAD_SENSITIVE_CHECKS): the run
    goes back to the queue, to run again alone (workers/packing.py), its results unstored. This
    attempt's files stay in its attempt directory; what it recorded of its packing and why it
    was re-run goes into the run's provenance (`packing.load_reruns`)."""
    this = {
        **{k: v for k, v in provenance["packing"].items() if k != "load_reruns"},
        "attempt": c.attempt,
        "timings": timings,
        "checks": {ch.name: ch.detail for ch in spoiled},
    }
    record = {"packing": {"load_reruns": [*c.earlier, this]}}
    reason = "; ".join(f"{ch.name}: {ch.detail}" for ch in spoiled)
    with session_scope() as session:
        moved = transition(
            session,
            c.run_id,
            RunStatus.queued,
            expect_attempt=c.attempt,
            worker_id=None,
            error=f"re-running alone (load spoiled attempt {c.attempt}): {reason}",
            queued_at=utcnow(),
            dispatched_at=None,
            progress={},
            provenance=record,
            runs_beside=this["runs_beside"],
            load_reruns=c.load_reruns + 1,
        )
        if moved:
            refresh_experiment_status(session, c.experiment_id)
    log.warning("run %s attempt %d re-runs alone: %s", c.run_id, c.attempt, reason)
    return RunStatus.queued.value if moved else "lost"
