"""The metric catalogue (schemas/metrics.py) and the report models agree: the same metrics in
the same order and scope, with the catalogue's descriptions and units; and the names DESIGN.md
fixes are all there."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from schemas import AggregateMetrics, FlowMetrics
from schemas.metrics import (
    BIT_PER_S,
    BIT_PER_S_PER_S,
    BYTE,
    CATALOGUE,
    DIMENSIONLESS,
    METRICS,
    PACKET,
    SECOND,
    ModelScope,
    format_quantity,
    metric_field,
    metrics_of,
)
from schemas.report import FLOW_KEYS

# DESIGN.md's "Metrics": names fixed in JSON and tables.
FIXED_NAMES = {
    "goodput_bps", "throughput_bps", "utilization", "rtt_mean_s", "rtt_p95_s",
    "queue_delay_mean_s", "queue_mean_pkts", "loss_rate", "retransmits", "drops", "power",
    "jain_index", "normalized_fairness", "friendliness_ratio", "equivalence_ratio", "fc_ratio",
    "convergence_time_s",
}  # fmt: skip


def disagreements(model: type[BaseModel], scope: ModelScope, keys: tuple[str, ...]) -> list[str]:
    """How a report model's metric fields differ from the catalogue's metrics of its scope."""
    fields = [name for name in model.model_fields if name not in keys]
    expected = [m.name for m in metrics_of(scope)]
    problems = [f"{name}: not among the catalogue's {scope} metrics" for name in fields
                if name not in expected]  # fmt: skip
    problems += [f"{name}: missing from {model.__name__}" for name in expected
                 if name not in fields]  # fmt: skip
    if not problems and fields != expected:
        problems.append(f"{model.__name__} orders its metrics {fields}, the catalogue {expected}")
    for name in set(fields) & set(expected):
        info, metric = model.model_fields[name], METRICS[name]
        if info.title != metric.label:
            problems.append(f"{name}: title {info.title!r} is not the catalogue's label")
        if info.description != metric.describe(scope):
            problems.append(f"{name}: description {info.description!r} is not the catalogue's")
        if info.json_schema_extra != {"x-unit": metric.unit}:
            problems.append(f"{name}: unit {info.json_schema_extra} is not the catalogue's")
    return problems


def test_report_models_carry_the_catalogue_metrics() -> None:
    assert disagreements(FlowMetrics, "flow", FLOW_KEYS) == []
    assert disagreements(AggregateMetrics, "aggregate", ()) == []
    in_models = set(FlowMetrics.model_fields) | set(AggregateMetrics.model_fields)
    assert {m.name for m in CATALOGUE} <= in_models
    assert FIXED_NAMES - set(METRICS) == set()
    units = {BIT_PER_S, BIT_PER_S_PER_S, BYTE, DIMENSIONLESS, PACKET, SECOND}
    assert {m.unit for m in CATALOGUE} <= units
    # Names say their unit where DESIGN.md's names do.
    for metric in CATALOGUE:
        if metric.name.endswith("_bps"):
            assert metric.unit == BIT_PER_S, metric
        if metric.name.endswith("_s"):
            assert metric.unit == SECOND, metric
        if metric.name.endswith("_pkts"):
            assert metric.unit == PACKET, metric


def test_a_model_that_strays_from_the_catalogue_is_caught() -> None:
    class Stray(BaseModel):
        goodput_bps: float | None = metric_field("goodput_bps", "aggregate")
        utilization: float | None = metric_field("goodput_bps", "aggregate")  # wrong field
        rtt_p95_s: float | None = None  # a flow metric

    problems = disagreements(Stray, "aggregate", ())
    assert "rtt_p95_s: not among the catalogue's aggregate metrics" in problems
    assert "drops: missing from Stray" in problems
    assert any(p.startswith("utilization: description") for p in problems), problems
    assert any(p.startswith("utilization: unit") for p in problems), problems


@pytest.mark.parametrize(
    ("value", "unit", "spread", "shown"),
    [
        (4.542e6, BIT_PER_S, None, "4.542 Mbit/s"),
        (1e7, BIT_PER_S, None, "10 Mbit/s"),
        (999.96e6, BIT_PER_S, None, "1 Gbit/s"),  # rounded before the prefix is chosen
        (8.386e6, BIT_PER_S, 2.259e4, "8.386 ± 0.023 Mbit/s"),
        (0, BIT_PER_S, None, "0 bit/s"),
        (0.0683, SECOND, None, "68.3 ms"),
        (19.0, SECOND, None, "19 s"),  # issue 20: not "convergence_time_s=19000.0 ms"
        (3600.0, SECOND, None, "3600 s"),  # no kiloseconds
        (24e-6, SECOND, None, "24 µs"),
        (1.415e8, BIT_PER_S_PER_S, None, "141.5 Mbit/s²"),
        (12_345_678, BYTE, None, "12.35 MB"),
        (57, PACKET, None, "57 pkt"),
        (22.5, PACKET, None, "22.5 pkt"),
        (0.99134, DIMENSIONLESS, None, "0.9913"),
        (0.9, DIMENSIONLESS, 0.0, "0.9 ± 0"),
        (None, SECOND, None, "–"),
    ],
)
def test_quantities_print_with_si_prefixes(
    value: float | None, unit: str, spread: float | None, shown: str
) -> None:
    assert format_quantity(value, unit, spread) == shown


def test_format_quantity_refuses_what_is_not_a_number() -> None:
    with pytest.raises(TypeError, match="takes a number"):
        format_quantity("12", SECOND)  # type: ignore[arg-type]


def test_values_are_shown_with_si_prefixes_and_units() -> None:
    from schemas.metrics import (
        QUANTITIES,
        column_quantity,
        display_unit,
        heading,
        scaled_unit,
    )

    assert format_quantity(9_613_000.0, BIT_PER_S, digits=3) == "9.61 Mbit/s"
    assert (
        format_quantity(999_999.9, BIT_PER_S, digits=3) == "1 Mbit/s"
    )  # rounded before the prefix
    assert format_quantity(512_000.0, BIT_PER_S, digits=3) == "512 kbit/s"
    assert format_quantity(1.2e9, BIT_PER_S, digits=3) == "1.2 Gbit/s"
    assert format_quantity(0.0404, SECOND, digits=3) == "40.4 ms"
    assert format_quantity(0.00025, SECOND, digits=3) == "250 µs"
    assert format_quantity(19.0, SECOND, digits=3) == "19 s"  # never "ks", and not 19000 ms
    assert (
        format_quantity(33, PACKET, digits=3) == "33 pkt"
        and format_quantity(1234, PACKET, digits=3) == "1234 pkt"
    )
    assert format_quantity(1.9e8, BIT_PER_S_PER_S, digits=3) == "190 Mbit/s²"  # seed 000's Kb/s²
    assert format_quantity(12_345_678, BYTE, digits=3) == "12.3 MB"
    assert format_quantity(0.9541, DIMENSIONLESS, digits=3) == "0.954"
    assert format_quantity(None, SECOND, digits=3) == "–"
    # A figure axis takes the prefix of its largest value; a table column a fixed one.
    assert scaled_unit(BIT_PER_S, 45e6) == ("Mbit/s", 1e-6)
    assert scaled_unit(SECOND, 0.2) == ("ms", 1e3)
    assert scaled_unit(PACKET, 500.0) == ("pkt", 1.0)
    assert display_unit(BIT_PER_S_PER_S) == ("Mbit/s²", 1e-6)
    assert heading(METRICS["power"]) == "power (Mbit/s²)"
    assert heading(METRICS["jain_index"]) == "Jain's index"
    assert heading(METRICS["goodput_bps"], "kbit/s") == "goodput (kbit/s)"
    # Series columns: the catalogue's, or a state variable's unit from its name.
    assert column_quantity("cwnd_pkts") == (QUANTITIES["cwnd_pkts"], 1.0)
    assert column_quantity("goodput_bps") == (METRICS["goodput_bps"], 1.0)
    base_rtt, factor = column_quantity("base_rtt_us")
    assert (base_rtt.label, base_rtt.unit, factor) == ("base RTT", SECOND, 1e-6)
    srv, factor = column_quantity("srv_x256")
    assert (srv.label, srv.unit, factor) == ("srv", DIMENSIONLESS, 1 / 256)
    assert column_quantity("diff")[0].unit == DIMENSIONLESS
