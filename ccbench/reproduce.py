"""The seeds reproduced: a seed's templates and claims (`schemas/examples/seeds/<seed>/`), the
quick variant of a template, and the evaluation of claims against an experiment's report.

Nothing here talks to the API: `ccbench reproduce` (cli/reproduce.py) submits what
`submission` returns and passes the reports it gets back to `evaluate`."""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import TypeAdapter, ValidationError

import schemas
from ccbench.analysis.metrics import median, siqr
from ccbench.plots.axes import flow_mix, is_flows
from schemas.matrix import MatrixSpec, SpecError, Submission, errors_of, expand_submission
from schemas.metrics import METRICS
from schemas.report import ExperimentReport, RunReport
from schemas.reproduce import SEEDS, Claim, Measure, SeedClaims, Template
from schemas.units import WITH_UNITS, parse_duration

SEEDS_DIR = Path(schemas.__file__).parent / "examples" / "seeds"
CLAIMS_FILE = "claims.yaml"
# Every run a reproduction submits carries these tags: `reproduce`, the seed's, and one naming
# the template and the mode, by which `ccbench reproduce --report` finds it again.
TAG = "reproduce"
Mode = Literal["quick", "full"]
# Leaves of a spec path that are times within the run: scaled by the quick variant.
_TIME_LEAVES = ("duration", "start", "skip_start")
_SUBMISSION: TypeAdapter[Any] = TypeAdapter(Submission)


class ReproduceError(Exception):
    """A seed, figure or claim that does not exist, or files that contradict each other."""


@dataclass(frozen=True)
class Seed:
    """A seed's claims file and its templates, validated against each other."""

    claims: SeedClaims
    templates: dict[str, MatrixSpec]
    directory: Path

    def claims_for(self, figures: Sequence[str] = (), claim_ids: Sequence[str] = ()) -> list[Claim]:
        """The claims of these figures and ids (all of them when neither is given)."""
        known_figures = {f.id for f in self.claims.figures}
        known_ids = {c.id for c in self.claims.claims}
        for figure in figures:
            if figure not in known_figures:
                raise ReproduceError(
                    f"seed {self.claims.seed} has no figure {figure!r} (figures: "
                    + ", ".join(f.id for f in self.claims.figures) + ")"
                )  # fmt: skip
        for claim_id in claim_ids:
            if claim_id not in known_ids:
                raise ReproduceError(f"seed {self.claims.seed} has no claim {claim_id!r}")
        if not figures and not claim_ids:
            return list(self.claims.claims)
        return [c for c in self.claims.claims if c.figure in figures or c.id in claim_ids]


def seed_directory(seed: str) -> Path:
    return SEEDS_DIR / seed


def load_seed(seed: str, directory: Path | None = None) -> Seed:
    """Read and cross-check a seed's claims file and templates: every template validates as a
    matrix, every claim's axes are axes of its template and its values are values of them."""
    if seed not in SEEDS:
        raise ReproduceError(f"no seed {seed!r}: one of {', '.join(SEEDS)}")
    folder = directory or seed_directory(seed)
    claims = SeedClaims.model_validate(_read_yaml(folder / CLAIMS_FILE))
    if claims.seed != seed:
        raise ReproduceError(f"{folder / CLAIMS_FILE} is seed {claims.seed}'s, not {seed}'s")
    templates: dict[str, MatrixSpec] = {}
    for template in claims.templates:
        path = folder / template.file
        try:
            spec = _SUBMISSION.validate_python(_read_yaml(path))
        except ValidationError as exc:
            raise ReproduceError(
                f"{path}: " + "; ".join(f"{e['loc']}: {e['msg']}" for e in errors_of(exc))
            ) from exc
        if not isinstance(spec, MatrixSpec):
            raise ReproduceError(f"{path}: a template is a matrix (kind: matrix)")
        if template.quick.duration > spec.base.duration:
            raise ReproduceError(f"{path}: its quick duration exceeds its duration")
        templates[template.file] = spec
    loaded = Seed(claims, templates, folder)
    for claim in claims.claims:
        _check_claim(claim, templates)
    for template in claims.templates:
        _check_quick_axes(template, templates[template.file])
    return loaded


def _read_yaml(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text())
    except OSError as exc:
        raise ReproduceError(f"cannot read {path}: {exc.strerror}") from exc


def _axis_values(matrix: MatrixSpec, path: str) -> list[Any] | None:
    return next((axis.values for axis in matrix.axes if axis.path == path), None)


def _check_values(where: str, path: str, wanted: list[Any], matrix: MatrixSpec) -> None:
    values = _axis_values(matrix, path)
    if values is None:
        raise ReproduceError(f"{where}: {path!r} is not an axis of its template")
    for value in wanted:
        if not any(axis_value_matches(value, v) for v in values):
            raise ReproduceError(f"{where}: {path}={value!r} is not a value of that axis")


def _check_claim(claim: Claim, templates: dict[str, MatrixSpec]) -> None:
    own = templates[claim.template]
    for path, values in claim.each.items():
        _check_values(f"claim {claim.id}: each", path, values or [], own)
    for side in claim.measures():
        file = claim.template_of(side)
        matrix = templates[file]
        for path, wanted in side.where.items():
            _check_values(f"claim {claim.id}: where", path, [wanted], matrix)
        if matrix.combine == "product":
            several = {a.path for a in matrix.axes if len(a.values) > 1}
            loose = several - set(side.where) - set(claim.each)
            if loose:
                raise ReproduceError(
                    f"claim {claim.id}: pin {sorted(loose)} of {file} with where (or name them "
                    "in each): else it pools different conditions"
                )


def _check_quick_axes(template: Template, matrix: MatrixSpec) -> None:
    for path, values in template.quick.axes.items():
        _check_values(f"{template.file}: quick.axes", path, values, matrix)


def _canonical(text: str) -> str:
    return re.sub(r"\s+", "", text)


def axis_value_matches(wanted: Any, value: Any) -> bool:
    """Whether a claim's `where` value names this axis value: the same value; the same text
    without spaces ("20 pkt" is "20pkt"); for a `flows` axis (lists of flows) the number of
    flows or their mix (`flow_mix`: '5 aaimd + 20 reno', '5 tfrc(m=2) + 5 reno')."""
    if wanted == value:
        return True
    if is_flows(value):
        if isinstance(wanted, int) and not isinstance(wanted, bool):
            return len(value) == wanted
        if is_flows(wanted):  # the same flows with other times (a quick variant's)
            return flow_mix(wanted) == flow_mix(value)
        return isinstance(wanted, str) and _canonical(wanted) == _canonical(flow_mix(value))
    return (
        isinstance(wanted, str)
        and isinstance(value, str)
        and (_canonical(wanted) == _canonical(value))
    )


def tag_of(seed: str, template_file: str, mode: Mode) -> str:
    """The tag naming a template's reproduction in one mode: `000/fig05-06-single/quick`."""
    return f"{seed}/{Path(template_file).stem}/{mode}"


def submission(
    seed: Seed,
    template_file: str,
    mode: Mode,
    claims: Sequence[Claim],
    duration: float | None = None,
    repetitions: int | None = None,
) -> Any:
    """The document `ccbench reproduce` submits for a template: the template itself, or its
    quick variant for `claims` (QuickOptions says how; `duration` and `repetitions` replace the
    claims file's quick ones), tagged so the reproduction can be found again. Validated (and
    expanded) here, so a bad template fails before submission."""
    matrix = seed.templates[template_file]
    document = matrix.model_dump(mode="json", context=WITH_UNITS)
    if mode == "quick":
        template = seed.claims.template(template_file)
        changes: dict[str, Any] = {}
        if duration is not None:
            changes["duration"] = min(duration, matrix.base.duration)
        if repetitions is not None:
            changes["repetitions"] = repetitions
        if changes:
            quick = template.quick.model_copy(update=changes)
            template = template.model_copy(update={"quick": quick})
        document = quick_document(matrix, template, claims)
    document["tags"] = [
        *document.get("tags", []),
        *(t for t in (TAG, f"seed-{seed.claims.seed}") if t not in document.get("tags", [])),
        tag_of(seed.claims.seed, template_file, mode),
    ]
    try:
        checked = _SUBMISSION.validate_python(copy.deepcopy(document))
        expand_submission(checked, limit=10**6)
    except ValidationError as exc:
        raise ReproduceError(
            f"{template_file} ({mode}): "
            + "; ".join(f"{e['loc']}: {e['msg']}" for e in errors_of(exc))
        ) from exc
    except SpecError as exc:
        raise ReproduceError(f"{template_file} ({mode}): {exc}") from exc
    return document


def quick_document(matrix: MatrixSpec, template: Template, claims: Sequence[Claim]) -> Any:
    """The quick variant of a template for some of its claims (the transformation
    QuickOptions documents): every time scaled by quick.duration / duration, repetitions
    capped, each axis reduced to the values the claims compare."""
    quick = template.quick
    document = matrix.model_dump(mode="json", context=WITH_UNITS)
    factor = min(1.0, quick.duration / matrix.base.duration)
    _scale_times(document["base"], factor, is_spec=True)
    axes = document["axes"]
    for axis in axes:
        if axis["path"].split(".")[-1].split("[")[0] in _TIME_LEAVES:
            axis["values"] = [_scaled(v, factor) for v in axis["values"]]
        elif axis["path"] == "flows":
            for flows in axis["values"]:
                for flow in flows:
                    _scale_times(flow, factor, is_spec=False)
    chosen = [c for c in claims if template.file in c.templates()]
    if matrix.combine == "zip":
        points = _kept_points(matrix, template, chosen)
        for axis in axes:
            axis["values"] = [axis["values"][i] for i in points]
    else:
        for axis, spec_axis in zip(axes, matrix.axes, strict=True):
            kept = _kept_values(spec_axis.path, spec_axis.values, template, chosen)
            axis["values"] = [axis["values"][i] for i in kept]
    document["repetitions"] = min(matrix.repetitions, quick.repetitions)
    document["name"] = f"{matrix.name}-quick"[:100]
    document["base"]["name"] = f"{matrix.base.name}-quick"[:100]
    return document


def _matching(values: Sequence[Any], wanted: Iterable[Any]) -> set[int]:
    wanted = list(wanted)
    return {i for i, v in enumerate(values) if any(axis_value_matches(w, v) for w in wanted)}


def _each_choice(claim: Claim, path: str, values: Sequence[Any], template: Template) -> set[int]:
    """Indexes of the values of an axis the claim holds at each value of that the quick variant
    keeps: the claim's own list (else all values), within quick.axes' where it names the axis."""
    chosen = claim.each[path]
    kept = set(range(len(values))) if chosen is None else _matching(values, chosen)
    quick = template.quick.axes.get(path)
    return kept if quick is None else kept & _matching(values, quick)


def _sides_in(claim: Claim, file: str) -> list[Measure]:
    return [side for side in claim.measures() if claim.template_of(side) == file]


def _kept_values(
    path: str, values: Sequence[Any], template: Template, claims: Sequence[Claim]
) -> list[int]:
    """A product matrix: the indexes of an axis's values the quick variant keeps: those the
    claims pin, and those of the axes claims hold at each value of (an axis of one value keeps
    it)."""
    kept: set[int] = set(range(len(values))) if len(values) == 1 else set()
    for claim in claims:
        if claim.template == template.file and path in claim.each:
            kept |= _each_choice(claim, path, values, template)
        for side in _sides_in(claim, template.file):
            if path in side.where:
                kept |= _matching(values, [side.where[path]])
    return sorted(kept)


def _kept_points(matrix: MatrixSpec, template: Template, claims: Sequence[Claim]) -> list[int]:
    """A zipped matrix: the points the claims read (a side's `where` picks the points whose
    values match it, within the values kept of the axes a claim holds at each value of)."""
    count = len(matrix.axes[0].values)
    kept: set[int] = set()
    for claim in claims:
        allowed = set(range(count))
        if claim.template == template.file:
            for path in claim.each:
                values = _axis_values(matrix, path) or []
                allowed &= _each_choice(claim, path, values, template)
        for side in _sides_in(claim, template.file):
            points = set(allowed)
            for path, wanted in side.where.items():
                points &= _matching(_axis_values(matrix, path) or [], [wanted])
            kept |= points
    return sorted(kept)


def _scaled(value: Any, factor: float) -> Any:
    """A time as the spec writes it ("400s", "2min", or seconds), scaled, with its unit."""
    if value is None:
        return None
    seconds = parse_duration(value)
    return f"{seconds * factor!r}s"


def _scale_times(document: dict[str, Any], factor: float, *, is_spec: bool) -> None:
    """Scale a spec's (or a flow's) times in place: duration, flows' start and duration, the
    measurement's skip_start."""
    for key in ("duration", "start"):
        if document.get(key) is not None:
            document[key] = _scaled(document[key], factor)
    if is_spec:
        measurement = document.get("measurement") or {}
        if measurement.get("skip_start") is not None:
            measurement["skip_start"] = _scaled(measurement["skip_start"], factor)
        for flow in document.get("flows", []):
            _scale_times(flow, factor, is_spec=False)


# --- evaluation -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Stat:
    """A measure at a point: median and SIQR over its finished repetitions."""

    median: float | None
    siqr: float | None
    n: int
    unit: str
    failed: int = 0  # the point's runs that ended failed (or cancelled): not in n
    # Of the n, the runs with a failed fidelity check (their network was not quite the one
    # asked for, e.g. the host too busy to emulate it): counted, and said.
    failed_checks: int = 0


@dataclass(frozen=True)
class Row:
    """A claim at one combination of its `each` axes' values (none: the claim's one row)."""

    at: dict[str, Any]
    measured: Stat
    than: Stat | float
    holds: bool | None  # None: not measured (no finished run at a point)

    @property
    def ratio(self) -> float | None:
        """median(measure) / median(than), the margin by which the claim holds or not."""
        other = self.than if isinstance(self.than, float) else self.than.median
        if self.measured.median is None or other is None or other == 0:
            return None
        return self.measured.median / other


@dataclass(frozen=True)
class ClaimResult:
    claim: Claim
    experiments: dict[str, str]  # template -> the experiment whose report was read
    rows: list[Row] = field(default_factory=list)

    @property
    def holds(self) -> bool | None:
        """True when every row holds, False when one does not, else None (not measured)."""
        verdicts = [row.holds for row in self.rows]
        if not verdicts:
            return None
        if any(v is False for v in verdicts):
            return False
        if any(v is None for v in verdicts):
            return None
        return True


def _compare(left: float, op: str, right: float) -> bool:
    return {
        "<": left < right,
        "<=": left <= right,
        ">": left > right,
        ">=": left >= right,
    }[op]


def _point_runs(report: ExperimentReport, where: dict[str, Any]) -> list[RunReport]:
    return [
        run
        for run in report.runs
        if all(
            path in run.axis_values and axis_value_matches(value, run.axis_values[path])
            for path, value in where.items()
        )
    ]


def run_value(run: RunReport, measure: Measure) -> float | None:
    """The measure's value in one finished run: its aggregate metric, or its selected flows'
    metric combined as the selection says; None when the run has none."""
    if measure.flows is None:
        if run.aggregate is None:
            return None
        value = getattr(run.aggregate, measure.metric)
        return None if value is None else float(value)
    chosen = measure.flows
    values = [
        float(v)
        for flow in run.flows
        if (chosen.algorithm is None or flow.algorithm == chosen.algorithm)
        and (chosen.index is None or flow.flow in chosen.index)
        and flow.direction == chosen.direction
        and (v := getattr(flow, measure.metric)) is not None
    ]
    if not values:
        return None
    if chosen.reduce == "sum":
        return sum(values)
    if chosen.reduce == "min":
        return min(values)
    if chosen.reduce == "max":
        return max(values)
    return sum(values) / len(values)


def measure_at(report: ExperimentReport | None, measure: Measure, at: dict[str, Any]) -> Stat:
    """The measure at its point (its where, plus `at`): median and SIQR over the point's
    repetitions that finished (done), and how many of those failed a fidelity check."""
    unit = METRICS[measure.metric].unit
    if report is None:
        return Stat(None, None, 0, unit)
    runs = _point_runs(report, {**measure.where, **at})
    measured = [
        (run, value)
        for run in runs
        if run.status == "done" and (value := run_value(run, measure)) is not None
    ]
    values = [value for _, value in measured]
    failed = sum(1 for run in runs if run.status in ("failed", "cancelled"))
    failed_checks = sum(1 for run, _ in measured if any(not c.ok for c in run.checks))
    return Stat(median(values), siqr(values), len(values), unit, failed, failed_checks)


def _each_values(
    report: ExperimentReport, claim: Claim, matrix: MatrixSpec
) -> list[dict[str, Any]]:
    """Every combination of the values of the claim's `each` axes (its own list, else every
    value) that the report has runs at, in the template's order."""
    present = [run.axis_values for run in report.runs]
    combos: list[dict[str, Any]] = [{}]
    for path, chosen in claim.each.items():
        values: list[Any] = []
        for v in _axis_values(matrix, path) or []:
            if v in values or (chosen is not None and not _matching([v], chosen)):
                continue
            if any(path in p and axis_value_matches(v, p[path]) for p in present):
                values.append(v)
        combos = [{**c, path: v} for c in combos for v in values]
    return combos


def evaluate(
    claim: Claim,
    reports: Mapping[str, ExperimentReport | None],
    templates: Mapping[str, MatrixSpec],
) -> ClaimResult:
    """A claim against the reports of the templates it reads (a missing one: not run yet): a
    row per combination of its `each` axes' values, each with both sides' median and SIQR and
    whether the comparison holds."""
    experiments = {f: r.experiment_id for f, r in reports.items() if r is not None}
    own = reports.get(claim.template)
    if own is None:
        return ClaimResult(claim, experiments, [])
    rows = []
    for at in _each_values(own, claim, templates[claim.template]):
        measured = measure_at(own, claim.measure, at)
        than: Stat | float
        if isinstance(claim.than, Measure):
            file = claim.template_of(claim.than)
            than = measure_at(reports.get(file), claim.than, at if file == claim.template else {})
            other = than.median
        else:
            than = float(claim.than)
            other = than
        holds = None
        if measured.median is not None and other is not None:
            holds = _compare(measured.median, claim.op, claim.factor * other)
        rows.append(Row(at, measured, than, holds))
    return ClaimResult(claim, experiments, rows)


def covers(
    report: ExperimentReport, claim: Claim, file: str, matrix: MatrixSpec | None = None
) -> bool:
    """Whether a report of template `file` has runs at every point the claim reads there: at
    each side's `where`, and in the claim's own template at a value of each axis it holds at
    each value of (so a newer experiment of the template submitted for other claims, e.g. `--claim`
    of another flow count, is passed over). Given the template, also the same axes: a report
    of an older version of it is not read."""
    if matrix is not None and set(report.axes) != {axis.path for axis in matrix.axes}:
        return False
    if file == claim.template and not all(
        any(
            path in run.axis_values
            and (chosen is None or _matching([run.axis_values[path]], chosen))
            for run in report.runs
        )
        for path, chosen in claim.each.items()
    ):
        return False
    return all(_point_runs(report, side.where) for side in _sides_in(claim, file))


def templates_of(claims: Iterable[Claim]) -> list[str]:
    """The templates these claims read, in order of first appearance."""
    files: list[str] = []
    for claim in claims:
        for file in claim.templates():
            if file not in files:
                files.append(file)
    return files
