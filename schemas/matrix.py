"""A matrix: a base spec plus axes (field path -> values) combined as a product or zipped,
repeated, optionally in shuffled order. `expand_submission` turns any submission into the list
of runs it stands for, checking the run count before building anything."""

from __future__ import annotations

import copy
import functools
import math
import random
import re
import secrets
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import Discriminator, Field, Tag, ValidationError

from schemas.limits import AXIS_PATH_MAX, TAGS_MAX
from schemas.spec import Description, ExperimentSpec, Name, StrictModel, TagText
from schemas.units import WITH_UNITS

_PATH_PART = re.compile(r"(?P<key>[A-Za-z_][A-Za-z0-9_]*)(?P<index>(\[(\d+|\*)\])*)")


class SpecError(Exception):
    """A submission that cannot be run; `errors` name each field path and the reason."""

    def __init__(self, errors: list[dict[str, str]]) -> None:
        self.errors = errors
        super().__init__("; ".join(f"{e['loc']}: {e['msg']}" for e in errors))


class Axis(StrictModel):
    path: str = Field(
        max_length=AXIS_PATH_MAX,
        description="field of the base spec, dotted; [i] picks a list item, [*] sets all items",
        examples=["topology.bottleneck.buffer", "flows[*].algorithm", "flows[1].start"],
    )
    values: list[Any] = Field(min_length=1, max_length=100_000)


class Order(StrictModel):
    shuffle: bool = Field(False, description="run the points in a random order (seeded)")
    seed: int = 0


class MatrixSpec(StrictModel):
    schema_version: Literal[1] = 1
    kind: Literal["matrix"]
    name: Name
    description: Description = ""
    tags: list[TagText] = Field(default_factory=list, max_length=TAGS_MAX)
    base: ExperimentSpec
    axes: list[Axis] = Field(min_length=1, max_length=16)
    combine: Literal["product", "zip"] = "product"
    repetitions: int = Field(1, ge=1, le=10_000)
    order: Order = Field(default_factory=Order)
    seed: int | None = Field(
        None, ge=0, lt=2**31, description="seed from which every run's seed is derived"
    )


def _kind_of(value: Any) -> str:
    if isinstance(value, dict):
        return str(value.get("kind", "experiment"))
    return str(getattr(value, "kind", "experiment"))


Submission = Annotated[
    Annotated[ExperimentSpec, Tag("experiment")] | Annotated[MatrixSpec, Tag("matrix")],
    Discriminator(
        _kind_of,
        custom_error_type="invalid_kind",
        custom_error_message="kind must be 'experiment' or 'matrix'",
    ),
]


@dataclass(frozen=True)
class RunPoint:
    index: int  # matrix point, before shuffling
    repetition: int
    axis_values: dict[str, Any]
    spec: ExperimentSpec


# Tags pydantic puts in error locations for the branches of discriminated unions: the
# submission's kind at the root, the topology's kind after "topology".
_ROOT_TAGS = {"experiment", "matrix"}
_TOPOLOGY_TAGS = {"dumbbell", "chain"}


def field_path(loc: tuple[Any, ...] | list[Any]) -> str:
    """A validation error's location as the user wrote the field (union tags removed)."""
    parts = list(loc)
    if parts and parts[0] in _ROOT_TAGS:
        parts = parts[1:]
    cleaned = [
        part
        for i, part in enumerate(parts)
        if not (part in _TOPOLOGY_TAGS and i > 0 and parts[i - 1] == "topology")
    ]
    return ".".join(str(part) for part in cleaned)


def reason_of(message: str) -> str:
    """A pydantic error message for people: without the "Value error, " pydantic puts before
    the message of a validator's own ValueError."""
    return message.removeprefix("Value error, ")


def errors_of(exc: ValidationError, prefix: str = "") -> list[dict[str, str]]:
    out = []
    for error in exc.errors(include_url=False):
        loc = field_path(error["loc"])
        msg = reason_of(str(error["msg"]))
        out.append({"loc": f"{prefix}.{loc}".strip(".") if prefix else loc, "msg": msg})
    return out


def _set_path(document: dict[str, Any], path: str, value: Any) -> None:
    """Set `value` at `path` in a JSON document; KeyError/IndexError name what is missing."""
    parts = path.split(".")
    targets: list[Any] = [document]
    for n, part in enumerate(parts):
        match = _PATH_PART.fullmatch(part)
        if match is None:
            raise KeyError(f"{part!r} is not a field name")
        key = match["key"]
        indexes = re.findall(r"\[(\d+|\*)\]", match["index"] or "")
        last = n == len(parts) - 1
        next_targets: list[Any] = []
        for target in targets:
            if not isinstance(target, dict) or key not in target:
                raise KeyError(f"the spec has no field {'.'.join(parts[: n + 1])!r}")
            if last and not indexes:
                target[key] = copy.deepcopy(value)
                continue
            items = [target[key]]
            for i, index in enumerate(indexes):
                lists = items
                items = []
                for lst in lists:
                    if not isinstance(lst, list):
                        raise KeyError(f"{key!r} is not a list")
                    chosen = range(len(lst)) if index == "*" else [int(index)]
                    for j in chosen:
                        if j >= len(lst):
                            raise IndexError(f"{key!r} has {len(lst)} items, no item {j}")
                        if last and i == len(indexes) - 1:
                            lst[j] = copy.deepcopy(value)
                        else:
                            items.append(lst[j])
            next_targets.extend(items)
        targets = next_targets


def _points(matrix: MatrixSpec) -> list[tuple[Any, ...]]:
    lists = [axis.values for axis in matrix.axes]
    if matrix.combine == "zip":
        return list(zip(*lists, strict=True))
    combos: list[tuple[Any, ...]] = [()]
    for values in lists:
        combos = [c + (v,) for c in combos for v in values]
    return combos


def run_count(matrix: MatrixSpec) -> int:
    lengths = [len(axis.values) for axis in matrix.axes]
    per_rep = math.prod(lengths) if matrix.combine == "product" else lengths[0]
    return per_rep * matrix.repetitions


def _derived_seed(base: int, index: int, repetition: int) -> int:
    return random.Random(f"{base}:{index}:{repetition}").randrange(2**31)


def expand_submission(
    submission: ExperimentSpec | MatrixSpec, limit: int, repetitions: int = 1
) -> list[RunPoint]:
    """Every run of the submission, in execution order, each with its own recorded seed;
    `repetitions` repeats each point that many more times (a campaign's occurrence)."""
    if isinstance(submission, ExperimentSpec):
        seed = submission.seed if submission.seed is not None else secrets.randbelow(2**31)
        if repetitions == 1:
            return [RunPoint(0, 0, {}, submission.model_copy(update={"seed": seed}))]
        seeds = [_derived_seed(seed, 0, r) for r in range(repetitions)]
        return [RunPoint(0, r, {}, submission.model_copy(update={"seed": s}))
                for r, s in enumerate(seeds)]  # fmt: skip
    matrix = submission
    if repetitions > 1:
        matrix = matrix.model_copy(update={"repetitions": matrix.repetitions * repetitions})
    if matrix.combine == "zip":
        lengths = {len(axis.values) for axis in matrix.axes}
        if len(lengths) > 1:
            raise SpecError(
                [
                    {
                        "loc": "axes",
                        "msg": "zip needs axes of equal length, got "
                        + ", ".join(str(len(a.values)) for a in matrix.axes),
                    }
                ]
            )
    total = run_count(matrix)
    if total > limit:
        raise SpecError(
            [
                {
                    "loc": "axes",
                    "msg": f"matrix expands to {total:,} runs, more than "
                    f"the limit {limit:,}; use fewer values or repetitions",
                }
            ]
        )
    # The base with its units, so the documents below validate as a user's submission: an
    # axis value without a unit is refused as it would be in the base.
    base = matrix.base.model_dump(mode="json", context=WITH_UNITS)
    _check_axes(matrix, base)
    base_seed = matrix.seed if matrix.seed is not None else secrets.randbelow(2**31)
    points: list[RunPoint] = []
    for index, values in enumerate(_points(matrix)):
        document = copy.deepcopy(base)
        for axis, value in zip(matrix.axes, values, strict=True):
            _set_path(document, axis.path, value)
        try:
            spec = ExperimentSpec.model_validate(document)
        except ValidationError as exc:
            where = ", ".join(f"{a.path}={v!r}" for a, v in zip(matrix.axes, values, strict=True))
            raise SpecError(errors_of(exc, prefix=f"axes (point {where})")) from exc
        axis_values = {axis.path: value for axis, value in zip(matrix.axes, values, strict=True)}
        for repetition in range(matrix.repetitions):
            seed = _derived_seed(base_seed, index, repetition)
            points.append(
                RunPoint(index, repetition, axis_values, spec.model_copy(update={"seed": seed}))
            )
    if matrix.order.shuffle:
        random.Random(matrix.order.seed).shuffle(points)
    return points


def _check_axes(matrix: MatrixSpec, base: dict[str, Any]) -> None:
    """Each axis path must exist and each value must be valid on its own."""
    errors: list[dict[str, str]] = []
    for i, axis in enumerate(matrix.axes):
        for j, value in enumerate(axis.values):
            document = copy.deepcopy(base)
            try:
                _set_path(document, axis.path, value)
            except (KeyError, IndexError) as exc:
                errors.append({"loc": f"axes.{i}.path", "msg": str(exc).strip('"')})
                break
            try:
                ExperimentSpec.model_validate(document)
            except ValidationError as exc:
                errors.extend(errors_of(exc, prefix=f"axes.{i}.values.{j}"))
            if len(errors) >= 20:
                raise SpecError(errors)
    if errors:
        raise SpecError(errors)


def get_path(document: dict[str, Any], path: str) -> list[Any]:
    """The values at `path` in a JSON document (as matrix axes write paths): one value, or one
    per list item where the path says [*]; nothing where the document has no such field."""
    found: list[Any] = [document]
    for part in path.split("."):
        match = _PATH_PART.fullmatch(part)
        if match is None:
            return []
        items = [t[match["key"]] for t in found if isinstance(t, dict) and match["key"] in t]
        for index in re.findall(r"\[(\d+|\*)\]", match["index"] or ""):
            lists = [i for i in items if isinstance(i, list)]
            if index == "*":
                items = [v for lst in lists for v in lst]
            else:
                items = [lst[int(index)] for lst in lists if int(index) < len(lst)]
        found = items
    return found


@functools.cache
def _spec_schema() -> dict[str, Any]:
    return ExperimentSpec.model_json_schema()


def unit_of_path(path: str) -> str | None:
    """The SI unit (`x-unit`: bit, s, B) of the spec field at `path`, if it has one."""
    schema = _spec_schema()
    definitions = schema.get("$defs", {})

    def resolve(node: dict[str, Any]) -> list[dict[str, Any]]:
        if "$ref" in node:
            return resolve(definitions[node["$ref"].rsplit("/", 1)[-1]])
        branches = node.get("anyOf") or node.get("oneOf")
        if branches:
            return [n for branch in branches for n in resolve(branch)]
        return [node]

    nodes = resolve(schema)
    for part in path.split("."):
        match = _PATH_PART.fullmatch(part)
        if match is None:
            return None
        nodes = [n for node in nodes
                 for n in resolve(node.get("properties", {}).get(match["key"], {}))]  # fmt: skip
        for _ in re.findall(r"\[(\d+|\*)\]", match["index"] or ""):
            nodes = [n for node in nodes if "items" in node for n in resolve(node["items"])]
    units = {node["x-unit"] for node in nodes if "x-unit" in node}
    return units.pop() if len(units) == 1 else None
