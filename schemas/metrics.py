"""The metric catalogue: every metric of a report once, with its name (the key in JSON, tables
and exports), its unit, a human label and what it measures. The report models
(`schemas/report.py`) take their metric fields' descriptions from here, and the clients (CLI,
result pages, exports, figures) their names, labels and units; the formulas are the functions
of `ccbench.analysis.metrics`, whose docstrings name these metrics.

Units are SI symbols of the stored values (`"1"`: dimensionless); every value is stored in
the unit itself, never with a prefix. Windows: the run's window is its measurement window
(`measurement.skip_start` to `duration` after the common start); a flow's window is the run's
window intersected with the flow's active period. A metric's scope says which report model
carries it: a flow's metrics (`FlowMetrics`), the run's aggregate over its forward flows and
its forward bottleneck (`AggregateMetrics`), or both. Over repetitions a matrix point reports
`<name>_median` and `<name>_siqr` of each aggregate metric."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import Field
from pydantic_core import PydanticUndefined

Scope = Literal["flow", "aggregate", "both"]
# The scope of one report model (a "both" metric appears in each).
ModelScope = Literal["flow", "aggregate"]

# Units, as SI symbols.
BIT_PER_S = "bit/s"
SECOND = "s"
PACKET = "pkt"
BYTE = "B"
DIMENSIONLESS = "1"
BIT_PER_S_PER_S = "bit/s^2"  # network power: bit/s per s of delay


@dataclass(frozen=True)
class Quantity:
    """Something a client shows: its name (the key in JSON, a series' column), its SI unit, a
    human label and what it measures."""

    name: str
    unit: str
    label: str
    description: str


@dataclass(frozen=True)
class Metric(Quantity):
    """A metric of a report (`description`: for scope "both", a flow's value)."""

    scope: Scope
    # Scope "both": how the aggregate value is formed.
    aggregate: str | None = None

    def __post_init__(self) -> None:
        if (self.scope == "both") != (self.aggregate is not None):
            raise ValueError(f"{self.name}: a metric of both scopes says how it aggregates")

    def in_scope(self, scope: ModelScope) -> bool:
        return self.scope in (scope, "both")

    def describe(self, scope: ModelScope) -> str:
        """The description of its field in the report model of `scope`."""
        if not self.in_scope(scope):
            raise ValueError(f"{self.name} is not a {scope} metric")
        text = self.aggregate if scope == "aggregate" and self.aggregate else self.description
        return f"{text} [{self.unit}]"


CATALOGUE: tuple[Metric, ...] = (
    Metric(
        "goodput_bps",
        BIT_PER_S,
        "goodput",
        "8 x application bytes the receiver got in the flow's window / the window's length",
        "both",
        aggregate="8 x application bytes every forward flow's receiver got in the run's window "
        "/ the window's length (flows active at different times: not a sum of their rates)",
    ),
    Metric(
        "throughput_bps",
        BIT_PER_S,
        "throughput",
        "8 x bytes the sender sent in the flow's window (retransmissions included) / the "
        "window's length",
        "both",
        aggregate="8 x bytes every forward flow's sender sent in the run's window / the "
        "window's length",
    ),
    Metric(
        "utilization",
        DIMENSIONLESS,
        "utilization",
        "share of the forward bottleneck's capacity used in the run's window: 8 x bytes the "
        "bottleneck sent / (its rate x the window's length), as the emulator (IP packets) or "
        "the qdisc (Ethernet frames) counts them; on a real path, where the link is not "
        "observable: min(1, goodput_bps / the path's nominal rate), none without a nominal rate",
        "aggregate",
    ),
    Metric(
        "jain_index",
        DIMENSIONLESS,
        "Jain's index",
        "Jain's fairness index (sum x)^2 / (n sum x^2) of the forward flows' goodputs over "
        "the part of the run's window in which they are all active: 1 for equal shares (seed "
        "000); none when they never run together",
        "aggregate",
    ),
    Metric(
        "rtt_mean_s",
        SECOND,
        "mean RTT",
        "mean of the sender's smoothed RTT samples in the flow's window",
        "both",
        aggregate="mean of the forward flows' smoothed RTT samples in their windows, together",
    ),
    Metric(
        "rtt_p95_s",
        SECOND,
        "RTT p95",
        "95th percentile of the sender's smoothed RTT samples in the flow's window",
        "flow",
    ),
    Metric(
        "rtt_min_s",
        SECOND,
        "minimum RTT",
        "smallest minimum RTT the sender reported over the whole flow",
        "flow",
    ),
    Metric(
        "retransmits",
        PACKET,
        "retransmits",
        "segments the sender retransmitted over the whole flow (its summary, else its last sample)",
        "flow",
    ),
    Metric(
        "bytes_received",
        BYTE,
        "bytes received",
        "application bytes the receiver got over the whole flow",
        "flow",
    ),
    Metric(
        "queue_mean_pkts",
        PACKET,
        "mean queue",
        "time average of the forward bottleneck's queue length over the run's window "
        "(emulator log: exact; qdisc sampling: mean of the samples); none on a real path",
        "aggregate",
    ),
    Metric(
        "queue_max_pkts",
        PACKET,
        "peak queue",
        "longest queue at the forward bottleneck in the run's window (emulator log: what an "
        "arrival found plus itself; qdisc sampling: the longest sample); none on a real path",
        "aggregate",
    ),
    Metric(
        "queue_delay_mean_s",
        SECOND,
        "mean queueing delay",
        "mean queueing delay at the forward bottleneck of the flow's packets that arrived in "
        "the run's window and were sent on: departure - arrival - their own transmission time "
        "(emulator log, forward flows only)",
        "both",
        aggregate="emulator log: the same over every packet through the forward bottleneck; qdisc "
        "sampling: 8 x the mean sampled backlog / the bottleneck's rate; none on a real path",
    ),
    Metric(
        "drops",
        PACKET,
        "drops",
        "packets the forward bottleneck dropped in the run's window; none on a real path",
        "aggregate",
    ),
    Metric(
        "loss_rate",
        DIMENSIONLESS,
        "loss rate",
        "the flow's packets the forward bottleneck dropped / its packets that arrived there "
        "in the run's window (emulator log, forward flows only)",
        "both",
        aggregate="packets the forward bottleneck dropped / packets offered to it in the run's "
        "window "
        "(emulator log: arrivals; qdisc sampling: sent + dropped); none on a real path",
    ),
    Metric(
        "power",
        BIT_PER_S_PER_S,
        "power",
        "network power (seed 000): the aggregate goodput_bps / the aggregate rtt_mean_s",
        "aggregate",
    ),
    Metric(
        "normalized_fairness",
        DIMENSIONLESS,
        "normalized fairness",
        "Jain's index of the forward flows' goodput x mean smoothed RTT, over the window of "
        "jain_index: 1 when each flow gets a share proportional to 1/RTT (seed 003; flows with "
        "different RTTs)",
        "aggregate",
    ),
    Metric(
        "friendliness_ratio",
        DIMENSIONLESS,
        "friendliness F",
        "F: mean goodput of the candidate flows / mean goodput of the reference flows, over "
        "the part of the run's window in which all of them are active (seed 004); 1 is "
        "TCP-friendly",
        "aggregate",
    ),
    Metric(
        "equivalence_ratio",
        DIMENSIONLESS,
        "equivalence E",
        "E = max(F, 1/F) (seed 004)",
        "aggregate",
    ),
    Metric(
        "fc_ratio",
        DIMENSIONLESS,
        "FC",
        "FC: max / min goodput among the candidate flows, over the window of F (seed 004)",
        "aggregate",
    ),
    Metric(
        "convergence_time_s",
        SECOND,
        "convergence time",
        "from the last time a forward flow started or stopped before the flows settled (else "
        "the run's start) to the first interval from which on every forward flow active for "
        "the whole interval stays within the band (measurement.convergence_band) around the "
        "interval's equal share",
        "aggregate",
    ),
)

METRICS: dict[str, Metric] = {m.name: m for m in CATALOGUE}
if len(METRICS) != len(CATALOGUE):
    raise ValueError("two metrics of the catalogue share a name")


def metrics_of(scope: ModelScope) -> tuple[Metric, ...]:
    """The metrics of one report model, in the catalogue's (and the model's) order."""
    return tuple(m for m in CATALOGUE if m.in_scope(scope))


def metric_field(name: str, scope: ModelScope, default: Any = PydanticUndefined) -> Any:
    """A report model's field for metric `name`: its label (the JSON Schema's title),
    description and unit (also as "x-unit") from the catalogue. Required unless `default` is
    given."""
    metric = METRICS[name]
    return Field(
        default,
        title=metric.label,
        description=metric.describe(scope),
        json_schema_extra={"x-unit": metric.unit},
    )


def _select(scope: ModelScope, *names: str) -> tuple[Metric, ...]:
    chosen = tuple(METRICS[name] for name in names)
    wrong = [m.name for m in chosen if not m.in_scope(scope)]
    if wrong:
        raise ValueError(f"not {scope} metrics: {', '.join(wrong)}")
    return chosen


# The few aggregate metrics that sum up a run or a matrix point: the CLI's group lines,
# `ccbench report --plot`'s comparisons and the result pages' run and group tables show these.
KEY_METRICS = _select("aggregate", "goodput_bps", "utilization", "jain_index",
                      "queue_mean_pkts", "power")  # fmt: skip
# The CLI's one-line summary of a run (`ccbench report`): of each flow, and of the aggregate
# (followed by the aggregate metrics the run has only sometimes, when it has them).
RUN_LINE_FLOW = _select("flow", "goodput_bps", "rtt_mean_s", "retransmits",
                        "queue_delay_mean_s", "loss_rate")  # fmt: skip
RUN_LINE_AGGREGATE = _select("aggregate", "utilization", "jain_index", "queue_mean_pkts",
                             "power", "drops", "goodput_bps", "rtt_mean_s")  # fmt: skip

# The columns of a run's stored time series (`ccbench.analysis.series`) that are not report
# metrics; a column named as a metric (goodput_bps, jain_index, drops, ...) is that metric,
# counted from the run's start (cumulative counters) or over one sample's interval (rates).
SERIES_COLUMNS: tuple[Quantity, ...] = (
    Quantity("t_s", SECOND, "time", "seconds since the run's common start"),
    Quantity("cwnd_pkts", PACKET, "cwnd", "the sender's congestion window"),
    Quantity(
        "ssthresh_pkts",
        PACKET,
        "ssthresh",
        "the sender's slow-start threshold (none while infinite)",
    ),  # fmt: skip
    Quantity("srtt_s", SECOND, "smoothed RTT", "the sender's smoothed RTT estimate"),
    Quantity(
        "delivery_rate_bps",
        BIT_PER_S,
        "delivery rate",
        "the sender's delivery-rate estimate (tcp_info)",
    ),  # fmt: skip
    Quantity(
        "bytes_sent",
        BYTE,
        "bytes sent",
        "bytes the sender transmitted since its start, retransmissions included",
    ),  # fmt: skip
    Quantity(
        "qlen_pkts",
        PACKET,
        "queue",
        "packets in the forward bottleneck's queue (emulator log: what a sampled arrival "
        "found plus itself; qdisc sampling: the sampled length)",
    ),  # fmt: skip
    Quantity("backlog_bytes", BYTE, "queue backlog", "bytes in the sampled qdisc's queue"),
    Quantity(
        "queue_delay_s",
        SECOND,
        "queueing delay",
        "emulator log: a sampled packet's departure - arrival - its own transmission time "
        "(none for a dropped packet); qdisc sampling: 8 x the sampled backlog / the "
        "bottleneck's rate",
    ),  # fmt: skip
)

QUANTITIES: dict[str, Quantity] = {**METRICS, **{q.name: q for q in SERIES_COLUMNS}}
if len(QUANTITIES) != len(METRICS) + len(SERIES_COLUMNS):
    raise ValueError("a series column shares a name with a metric: use the metric")

# Name suffixes of columns outside the catalogue (a controller's state variables,
# docs/contracts.md "State trace"): the unit and the factor to SI ("_x256": fixed point over 256).
_SUFFIXES = (("_us", SECOND, 1e-6), ("_ms", SECOND, 1e-3), ("_s", SECOND, 1.0),
             ("_x256", DIMENSIONLESS, 1 / 256), ("_pkts", PACKET, 1.0), ("_bps", BIT_PER_S, 1.0),
             ("_bytes", BYTE, 1.0))  # fmt: skip


def column_quantity(name: str) -> tuple[Quantity, float]:
    """A series column as a quantity, with the factor that turns its values into the
    quantity's SI unit: the catalogue's, or for a controller's state variable what its name
    says ("base_rtt_us" -> base RTT in s, x 1e-6; "diff" -> dimensionless)."""
    if name in QUANTITIES:
        return QUANTITIES[name], 1.0
    stem, unit, factor = name, DIMENSIONLESS, 1.0
    for suffix, suffix_unit, suffix_factor in _SUFFIXES:
        if name.endswith(suffix):
            stem, unit, factor = name.removesuffix(suffix), suffix_unit, suffix_factor
            break
    words = ["RTT" if w == "rtt" else w for w in stem.split("_")]
    return Quantity(name, unit, " ".join(words), f"controller state {name}"), factor


# A unit as written after a number ("1": nothing).
_SYMBOLS = {BIT_PER_S_PER_S: "bit/s²", DIMENSIONLESS: ""}
# SI prefixes (decimal, as in networking) and the units that take them: rates and sizes grow
# (kbit/s .. Gbit/s), seconds only shrink (ms, µs: a long time stays in s). Network power is
# written as seed 000 writes it (Figs. 13-23: "Kb/s²").
_PREFIXES = {"G": 1e9, "M": 1e6, "k": 1e3, "": 1.0, "m": 1e-3, "µ": 1e-6}
_PREFIXED = {BIT_PER_S: "GMk", BYTE: "GMk", BIT_PER_S_PER_S: "GMk", SECOND: "mµ"}
# The unit each column of a table shows a unit in (values of a column stay comparable across
# rows and pages): value x factor, then the symbol.
_DISPLAY = {BIT_PER_S: "M", SECOND: "m", BIT_PER_S_PER_S: "M", BYTE: "M"}


def symbol(unit: str) -> str:
    """How `unit` is written after a number: "bit/s", "pkt", "bit/s²", "" for "1"."""
    return _SYMBOLS.get(unit, unit)


def _prefixed(unit: str, prefix: str) -> tuple[str, float]:
    return f"{prefix}{symbol(unit)}", 1.0 / _PREFIXES[prefix]


# The unit of a report field by its name's suffix (the house convention: names say their SI
# unit, e.g. AppliedConditions' rate_bps, delay_s, buffer_pkts).
_SUFFIX_UNITS = {"_bps": BIT_PER_S, "_s": SECOND, "_pkts": PACKET, "_bytes": BYTE}


def unit_of_field(name: str) -> str | None:
    """The SI unit a field named `<what>_<unit>` is stored in; None without such a suffix."""
    return next((u for suffix, u in _SUFFIX_UNITS.items() if name.endswith(suffix)), None)


def display_unit(unit: str) -> tuple[str, float]:
    """(symbol, factor) a table column shows values of `unit` in: value x factor, then symbol
    ("Mbit/s", 1e-6)."""
    return _prefixed(unit, _DISPLAY.get(unit, ""))


def scaled_unit(unit: str, magnitude: float | None) -> tuple[str, float]:
    """(symbol, factor) that shows values of `unit` around `magnitude` (a figure axis's or a
    single value's largest absolute value) between 1 and 1000 where the unit takes a prefix:
    (4.2e6, bit/s) -> ("Mbit/s", 1e-6); (0.04, s) -> ("ms", 1e3); (12.0, s) -> ("s", 1.0)."""
    allowed = _PREFIXED.get(unit)
    if allowed is None or not magnitude or not math.isfinite(magnitude):
        return _prefixed(unit, "")
    # Largest first; the smallest is taken when none fits.
    candidates = ["", *allowed] if unit == SECOND else [*allowed, ""]
    size = abs(magnitude) * (1 + 1e-9)
    prefix = next((p for p in candidates if size >= _PREFIXES[p]), candidates[-1])
    return _prefixed(unit, prefix)


# `format_quantity`: significant digits of a value (a client's default; figures take 3), and of
# the spread after it.
SIGNIFICANT_DIGITS = 4
SPREAD_DIGITS = 2


def _digits(number: float, significant: int) -> str:
    return f"{number:.0f}" if abs(number) >= 10**significant else f"{number:.{significant}g}"


def format_quantity(
    value: float | None, unit: str, spread: float | None = None, digits: int = SIGNIFICANT_DIGITS
) -> str:
    """A value of `unit` (a catalogue unit) as every client prints it for people: `digits`
    significant digits with the SI prefix that brings it into [1, 1000) where the unit takes one
    ("4.542 Mbit/s", "68.3 ms", "19 s", "141.5 Mbit/s²"), counts as they are ("57 pkt",
    "22.5 pkt"), dimensionless values bare ("0.9913"). `spread` (e.g. a SIQR) follows as "± x"
    with two significant digits in the same prefix ("8.386 ± 0.023 Mbit/s"). None (not
    measured) is "–"."""
    if value is None:
        return "–"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(f"format_quantity takes a number, got {value!r}")
    if isinstance(value, int) and unit not in _PREFIXED:
        shown, factor, text = symbol(unit), 1.0, str(value)  # a count: every digit
    else:
        # The prefix of the value as rounded (999.96e6 bit/s is "1 Gbit/s", not "1000 Mbit/s").
        shown, factor = scaled_unit(unit, float(f"{value:.{digits}g}"))
        scaled = value * factor
        text = str(value) if isinstance(value, int) and factor == 1.0 else _digits(scaled, digits)
    if spread is not None:
        text += f" ± {_digits(spread * factor, SPREAD_DIGITS)}"
    return f"{text} {shown}" if shown else text


def heading(quantity: Quantity, unit_symbol: str | None = None) -> str:
    """A column or axis title: the label with the unit shown, "goodput (Mbit/s)" (the table
    unit of `display_unit`, or `unit_symbol`)."""
    shown = unit_symbol if unit_symbol is not None else display_unit(quantity.unit)[0]
    return f"{quantity.label} ({shown})" if shown else quantity.label
