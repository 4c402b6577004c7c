"""A matrix axis as figures show it: a human label ("bottleneck buffer"), a short name for file
names ("buffer"), and its values as numbers with a unit when they are quantities (`10Mbit`,
`20ms`, `25pkt`, `0.5bdp`, parsed by `schemas.units`), so figures draw them on a numeric axis;
otherwise (algorithms, mixed units) as categories. A `flows` axis whose values are lists of
flows is numeric: the number of flows."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from schemas.metrics import BIT_PER_S, BYTE, DIMENSIONLESS, PACKET, SECOND, format_quantity
from schemas.units import parse_buffer, parse_duration, parse_rate

BDP = "BDP"  # a buffer as a fraction of the bandwidth-delay product
_INDEX = re.compile(r"\[(\d+|\*)\]")


@dataclass(frozen=True)
class MatrixAxis:
    path: str
    label: str  # "bottleneck buffer", "number of flows"
    short: str  # file names: "buffer"
    unit: str | None  # the SI unit of `number` values (a catalogue unit or "BDP"); None: categories

    def number(self, value: Any) -> float | None:
        """The value on a numeric axis (SI units), None on a categorical one."""
        if self.unit is None:
            return None
        parsed = _quantity(value)
        return parsed[1] if parsed else None

    def text(self, value: Any) -> str:
        """The value as legends and category labels show it: "0.5 BDP", "10 Mbit/s", "reno",
        "2 × reno"."""
        parsed = _quantity(value)
        if parsed is not None and not is_flows(value):
            unit, number = parsed
            return format_quantity(number, unit) if unit != DIMENSIONLESS else f"{number:g}"
        return value_text(value)


def value_text(value: Any) -> str:
    """An axis value as text: strings as given, lists of flows by their algorithms."""
    if isinstance(value, str):
        return value
    if is_flows(value):
        labels = {flow_label(f) for f in value}
        if len(labels) == 1:
            return f"{len(value)} × {labels.pop()}"
        return flow_mix(value)
    return json.dumps(value, separators=(",", ":"), sort_keys=True)


def flow_label(flow: dict[str, Any]) -> str:
    """A flow as a flows axis's mix names it: its label (algorithm id, or cbr-udp for userspace
    CBR), its parameters where set (`tfrc(m=2)`), a traffic model other than bulk
    (`reno[on_off]`), `reverse` before a reverse flow."""
    traffic = flow.get("traffic") or {}
    model = traffic.get("model", "bulk")
    unresponsive = flow.get("agent") == "userspace" and model == "cbr"
    label = "cbr-udp" if unresponsive else str(flow.get("algorithm", "?"))
    params = flow.get("params") or {}
    if params and not unresponsive:
        label += "(" + ",".join(f"{k}={v:g}" for k, v in sorted(params.items())) + ")"
    if model not in ("bulk", "cbr"):
        label += f"[{model}]"
    if flow.get("direction") == "reverse":
        label = f"reverse {label}"
    return label


def flow_mix(flows: Sequence[dict[str, Any]]) -> str:
    """A list of flows as its mix of flow labels (`flow_label`), in order of first appearance:
    '5 aaimd + 20 reno + 10 reverse reno', '5 tfrc(m=2) + 5 reno'."""
    counts: dict[str, int] = {}
    for flow in flows:
        label = flow_label(flow)
        counts[label] = counts.get(label, 0) + 1
    return " + ".join(f"{n} {label}" for label, n in counts.items())


def is_flows(value: Any) -> bool:
    """Whether an axis value is a list of flows (a `flows` axis's)."""
    return isinstance(value, list) and bool(value) and all(isinstance(v, dict) for v in value)


def _quantity(value: Any) -> tuple[str, float] | None:
    """(unit, number in it) of an axis value that is a quantity, else None."""
    if is_flows(value):
        return DIMENSIONLESS, float(len(value))
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return DIMENSIONLESS, float(value)
    if not isinstance(value, str):
        return None
    for parse, unit in ((parse_rate, BIT_PER_S), (parse_duration, SECOND)):
        try:
            return unit, parse(value)
        except ValueError:
            pass
    try:
        buffer = parse_buffer(value)
    except ValueError:
        return None
    unit = {"pkt": PACKET, "bytes": BYTE, "bdp": BDP}[buffer.unit]
    return unit, buffer.value


def _label(path: str) -> str:
    """ "topology.bottleneck.buffer" -> "bottleneck buffer"; "flows[*].algorithm" ->
    "algorithm"; "flows[1].start" -> "flow 1 start"; "flows" -> "number of flows"."""
    parts = path.split(".")
    leaf = _INDEX.sub("", parts[-1]).replace("_", " ")
    if len(parts) < 2:
        return leaf
    parent = parts[-2]
    name = _INDEX.sub("", parent).replace("_", " ")
    indexes = _INDEX.findall(parent)
    if indexes and indexes[-1] == "*":
        return leaf
    if indexes:
        return f"{name.removesuffix('s')} {indexes[-1]} {leaf}"
    return leaf if name == "topology" else f"{name} {leaf}"


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9.+-]+", "-", text).strip("-")


def short_names(paths: Sequence[str]) -> dict[str, str]:
    """A short name per axis for file names: the field's own name ("buffer", "algorithm"),
    or the whole path when two axes share it ("flows1-algorithm")."""
    leaves = {p: _slug(_INDEX.sub("", p.split(".")[-1])) for p in paths}
    counts = {leaf: list(leaves.values()).count(leaf) for leaf in leaves.values()}
    return {
        p: leaf if counts[leaf] == 1 else _slug(_INDEX.sub(r"\1", p).replace("*", ""))
        for p, leaf in leaves.items()
    }


def matrix_axis(path: str, values: Sequence[Any], short: str) -> MatrixAxis:
    """The axis `path` of a matrix with these values: numeric when every value is a quantity
    of one unit."""
    parsed = [_quantity(v) for v in values]
    units = {p[0] for p in parsed if p is not None}
    numeric = bool(values) and None not in parsed and len(units) == 1
    label = "number of flows" if values and all(is_flows(v) for v in values) else _label(path)
    return MatrixAxis(path, label, short, units.pop() if numeric else None)


def file_part(text: str) -> str:
    """Text made safe for a file name."""
    return _slug(text.replace(" ", "").replace("×", "x"))


def file_value(value: Any) -> str:
    """An axis value in a file name: as the spec wrote it where it is text ("0.25bdp",
    "10Mbit", "reno"), else as legends show it ("2×reno" for a list of flows)."""
    return file_part(value if isinstance(value, str) else value_text(value))
