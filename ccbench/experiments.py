"""Submitting experiments: a submission (a spec or a matrix) becomes an experiment and one
queued run per matrix point and repetition, stored in the caller's transaction, or is refused
naming the field. Used by the API and by the scheduler (campaign occurrences). The runs have
no broker message yet: the dispatcher (ccbench.dispatch) sends them after the commit."""

import hashlib
import json
import secrets
from dataclasses import dataclass
from typing import Any

from pydantic import TypeAdapter, ValidationError
from sqlalchemy import select
from sqlalchemy.orm import Session

from ccbench.browse import derive
from ccbench.db.models import (
    Experiment,
    ExperimentFacet,
    ExperimentTag,
    Host,
    IdempotencyKey,
    Run,
    Team,
)
from ccbench.errors import ValidationFailed
from ccbench.runstate import ExperimentStatus, RunStatus
from ccbench.workerpool import Requirements, refusal, requirements_of
from schemas import (
    ExperimentSpec,
    MatrixSpec,
    RunPoint,
    SpecError,
    Submission,
    errors_of,
    expand_submission,
)
from schemas.units import SI_NUMBERS, WITH_UNITS

SUBMISSION: TypeAdapter[ExperimentSpec | MatrixSpec] = TypeAdapter(Submission)


@dataclass(frozen=True)
class OccurrenceLink:
    """The campaign occurrence an experiment measures, and its path ("h1->h2")."""

    campaign_id: str
    occurrence_id: str
    path: str


def _validation_failed(exc: SpecError) -> ValidationFailed:
    errors = [{"field": e["loc"], "reason": e["msg"]} for e in exc.errors]
    return ValidationFailed.of(errors, "invalid submission")


def _check_hosts_registered(session: Session, team: Team, specs: list[ExperimentSpec]) -> None:
    """Every host a hosts-testbed run names must be in the team's inventory."""
    registered = set(session.scalars(select(Host.name).where(Host.team_id == team.id)).all())
    errors = []
    for spec in specs:
        if spec.testbed.kind != "hosts":
            continue
        named = [(f"flows.{i}.{key}", getattr(flow, key))
                 for i, flow in enumerate(spec.flows) for key in ("src", "dst")]  # fmt: skip
        if spec.testbed.router is not None:
            named.append(("testbed.router", spec.testbed.router))
        for field, name in named:
            if name not in registered:
                errors.append(
                    {"field": field, "reason": f"host {name!r} is not in the team's inventory"}
                )
        if errors:
            break  # one point names them all: the others share the hosts or repeat them
    if errors:
        raise ValidationFailed.of(errors, "invalid submission")


def submission_digest(submission: Submission) -> str:
    """What a retried request must repeat to be the same submission (Idempotency-Key)."""
    document = json.dumps(submission.model_dump(mode="json"), sort_keys=True)
    return hashlib.sha256(document.encode()).hexdigest()


def replayed(session: Session, team: Team, key: str, digest: str) -> Experiment | None:
    """The experiment an earlier request with this Idempotency-Key created, if any; a key
    reused for a different submission is refused."""
    record = session.get(IdempotencyKey, (team.id, key))
    if record is None:
        return None
    if record.request_sha256 != digest:
        raise ValidationFailed.field(
            "Idempotency-Key", "already used for a different submission: use a new key"
        )
    return session.get(Experiment, record.experiment_id)


def _check_some_worker_can_run(session: Session, points: list[RunPoint]) -> None:
    """Refuse a run no live worker could run (its pool, testbed, congestion controls, BPF
    controllers, netem): it would otherwise fail later, once per matrix run. Points that
    differ only in other ways share the answer, so each distinct need is asked once."""
    asked: dict[Requirements, str | None] = {}
    errors = []
    for point in points:
        needs = requirements_of(point.spec)
        if needs not in asked:
            asked[needs] = refusal(session, point.spec)
            if asked[needs] is not None:
                where = ", ".join(f"{k}={v!r}" for k, v in point.axis_values.items())
                errors.append({"field": "testbed" + (f" (point {where})" if where else ""),
                               "reason": str(asked[needs])})  # fmt: skip
    if errors:
        raise ValidationFailed.of(errors, "invalid submission")


def create_experiment(
    session: Session,
    team: Team,
    submission: Submission,
    *,
    run_limit: int,
    idempotency_key: str | None = None,
    repetitions: int = 1,
    occurrence: OccurrenceLink | None = None,
    source: Experiment | None = None,
) -> tuple[Experiment, list[Run]]:
    """Store the experiment and one queued run per matrix point and repetition, in the
    caller's transaction; the dispatcher sends the runs once it has committed. With an
    Idempotency-Key the experiment an earlier request created with it is returned (and no run).
    `source`: the experiment this one runs again (ccbench.experiments.rerun).

    The matrix is expanded (and its size checked against `run_limit`) before anything is
    stored, so a refused submission leaves the database untouched. A submission without a
    seed is stored with the one chosen for it, so running it again reproduces every run's."""
    digest = submission_digest(submission)
    if idempotency_key is not None:
        earlier = replayed(session, team, idempotency_key, digest)
        if earlier is not None:
            return earlier, []
    if submission.seed is None:
        submission = submission.model_copy(update={"seed": secrets.randbelow(2**31)})
    try:
        points = expand_submission(submission, limit=run_limit, repetitions=repetitions)
    except SpecError as exc:
        raise _validation_failed(exc) from exc
    _check_hosts_registered(session, team, [point.spec for point in points])
    _check_some_worker_can_run(session, points)

    # Repetitions of a point differ only in their seed: one spec per point describes them.
    derived = derive(p.spec.model_dump(mode="json") for p in points if p.repetition == 0)
    experiment = Experiment(
        team_id=team.id,
        name=submission.name,
        description=submission.description,
        kind=submission.kind,
        submission=submission.model_dump(mode="json"),
        axes=[axis.path for axis in getattr(submission, "axes", [])],
        status=ExperimentStatus.queued.value,
        run_count=len(points),
        tags=[ExperimentTag(tag=tag) for tag in sorted(set(submission.tags))],
        campaign_id=occurrence.campaign_id if occurrence else None,
        occurrence_id=occurrence.occurrence_id if occurrence else None,
        path=occurrence.path if occurrence else None,
        source_experiment_id=source.id if source else None,
        algorithms=derived.algorithms,
        testbed=derived.testbed,
        status_counts={RunStatus.queued.value: len(points)},
    )
    session.add(experiment)
    session.flush()
    session.add_all(
        ExperimentFacet(experiment_id=experiment.id, key=key, value=value)
        for key, value in sorted(derived.facets)
    )
    runs = [
        Run(
            experiment_id=experiment.id,
            order_index=order,
            point_index=point.index,
            repetition=point.repetition,
            axis_values=point.axis_values,
            spec=point.spec.model_dump(mode="json"),
            seed=point.spec.seed,
            status=RunStatus.queued.value,
        )
        for order, point in enumerate(points)
    ]
    session.add_all(runs)
    if idempotency_key is not None:
        session.add(IdempotencyKey(team_id=team.id, key=idempotency_key,
                                   request_sha256=digest, experiment_id=experiment.id))  # fmt: skip
    session.flush()
    return experiment, runs


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON Merge Patch: objects merge key by key, null removes a key, anything else
    replaces the target's value."""
    if not isinstance(patch, dict):
        return patch
    merged = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = merge_patch(merged.get(key), value)
    return merged


def stored_submission(experiment: Experiment, runs: list[Run]) -> dict[str, Any]:
    """The experiment's stored submission as a user would write it (quantities with their
    units), with the seed its runs used when it was chosen for them."""
    model = SUBMISSION.validate_python(experiment.submission, context=SI_NUMBERS)
    if model.seed is None and isinstance(model, ExperimentSpec) and len(runs) == 1:
        model = model.model_copy(update={"seed": runs[0].seed})
    document: dict[str, Any] = model.model_dump(mode="json", context=WITH_UNITS)
    return document


def rerun(
    session: Session,
    team: Team,
    source: Experiment,
    edits: dict[str, Any] | None,
    *,
    run_limit: int,
    idempotency_key: str | None = None,
) -> tuple[Experiment, list[Run]]:
    """Run an experiment again: its stored submission, changed by `edits` (a JSON Merge Patch
    in the submission's terms, e.g. {"repetitions": 5} or {"base": {"duration": "30s"}}), as a
    new experiment of `team` linked to the source. Without edits every run gets the seed it
    had, so the new experiment reproduces the old one; `{"seed": null}` draws new seeds."""
    runs = list(session.scalars(select(Run).where(Run.experiment_id == source.id).limit(2)))
    document = merge_patch(stored_submission(source, runs), edits or {})
    try:
        submission = SUBMISSION.validate_python(document)
    except ValidationError as exc:
        errors = [{"field": e["loc"] or "edits", "reason": e["msg"]} for e in errors_of(exc)]
        raise ValidationFailed.of(errors, "invalid submission after the edits") from exc
    return create_experiment(session, team, submission, run_limit=run_limit,
                             idempotency_key=idempotency_key, source=source)  # fmt: skip
