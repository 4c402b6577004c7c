"""Every figure type, for a run and for a matrix whose results are stored as a worker stores
them (the database on the test PostgreSQL, read back through the API): the figure objects'
labels with units, axis types, series, bins and values, in the model, in matplotlib and in
Plotly — not pixels; and the files, named by axis values, in PNG, SVG and PDF. The stored
series are made so that the right bins are known exactly (a flow at 5 Mbit/s, a stall)."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from api.app import app
from ccbench.db.models import FlowResult, Run, RunSeries
from ccbench.db.session import session_scope
from ccbench.errors import ValidationFailed
from ccbench.plots.axes import matrix_axis, short_names, value_text
from ccbench.plots.figures import FORMATS, draw, write_experiment_figures, write_figure
from ccbench.plots.matrix import (
    box_figure_data,
    comparison_figure_data,
    cross_comparison_figure_data,
    experiment_figure_data,
    scheme_figure_data,
)
from ccbench.plots.model import FigureData, Trace, log_scale
from ccbench.plots.run import parse_bin, run_figure_data
from ccbench.plots.web import plotly_figure
from schemas import AggregateMetrics, AppliedConditions, FlowMetrics, RunResult
from schemas.metrics import KEY_METRICS
from tests.test_api import EXAMPLE, auth, matrix

DT = 0.01  # the agents' sampling interval
END = 10.0
APPLIED = AppliedConditions(
    rate_bps=10e6, delay_s=0.02, base_rtt_s=0.04, buffer_pkts=33, buffer_bytes=None,
    delay_mechanism="nfqueue", measured_min_rtt_s=0.0404, measured_rate_bps=9.99e6,
    link_mechanism="emulator", queue_source="emulator_log",
)  # fmt: skip


@pytest.fixture
def client() -> TestClient:
    return TestClient(app)


def ticks(start: float, end: float) -> list[float]:
    """Sample times every DT in (start, end]."""
    return [round(start + DT * k, 6) for k in range(1, round((end - start) / DT) + 1)]


def receiver(times: list[float], rate_bps: Callable[[float], float]) -> dict[str, list[Any]]:
    """A flow's stored goodput series: each sample's bytes at rate_bps(t) over the DT before."""
    total, counter, rates = 0.0, [], []
    for t in times:
        total += rate_bps(t) * DT / 8
        counter.append(round(total))
        rates.append(rate_bps(t))
    return {"t_s": times, "goodput_bps": rates, "bytes_received": counter}


def run_series() -> dict[str, dict[str, list[Any]]]:
    """Flow 0 (reno) receives 5 Mbit/s from 0 to 10 s; flow 1 (cubic) from 2 s, silent from 5 s
    to 6 s, 5 Mbit/s otherwise; each sender sends 4% more (retransmissions)."""
    flow0 = ticks(0.0, END)
    flow1 = [t for t in ticks(2.0, END) if not 5.0 < t <= 6.0]
    series = {
        "flow-0.goodput": receiver(flow0, lambda t: 5e6),
        "flow-1.goodput": receiver(flow1, lambda t: 5e6),
        "queue": {
            "t_s": flow0,
            "qlen_pkts": [k % 34 for k in range(len(flow0))],
            "drops": [k // 34 for k in range(len(flow0))],
            "queue_delay_s": [(k % 34) * 0.0012 if k % 34 else None for k in range(len(flow0))],
        },
        "fairness": {"t_s": [float(k) for k in range(3, 11)], "jain_index": [0.9] * 8},
        "flow-0.cc_state": {"t_s": flow0[::4], "base_rtt_us": [40_400] * len(flow0[::4])},
    }
    for i, times in enumerate((flow0, flow1)):
        sent = receiver(times, lambda t: 5.2e6)["bytes_received"]
        series[f"flow-{i}.tcp_info"] = {
            "t_s": times,
            "cwnd_pkts": [10 + k % 20 for k in range(len(times))],
            "ssthresh_pkts": [None] * 50 + [15] * (len(times) - 50),
            "srtt_s": [0.040 + 0.0005 * (k % 20) for k in range(len(times))],
            "bytes_sent": sent,
        }
    return series


def store(run_id: str, aggregate: dict[str, Any], flows: list[dict[str, Any]],
          series: dict[str, dict[str, list[Any]]] | None = None) -> None:  # fmt: skip
    """Results of a finished run, stored as the worker stores them."""
    empty = {name: None for name in AggregateMetrics.model_fields}
    with session_scope() as session:
        run = session.get(Run, run_id)
        assert run is not None
        run.status = "done"
        run.aggregate = RunResult(
            aggregate=AggregateMetrics(**{**empty, **aggregate}), applied=APPLIED, checks=[]
        ).model_dump(mode="json")
        for i, given in enumerate(flows):
            blank = {n: None for n, f in FlowMetrics.model_fields.items() if f.is_required()}
            flow = FlowMetrics(**{**blank, "flow": i, "bytes_received": 0, **given})
            metrics = flow.model_dump(mode="json", exclude={"flow", "algorithm"})
            session.add(
                FlowResult(run_id=run_id, flow_index=i, algorithm=flow.algorithm, metrics=metrics)
            )
        for name, data in (series or {}).items():
            session.add(RunSeries(run_id=run_id, name=name, data=data))


def submitted(client: TestClient, token: str, spec: dict[str, Any]) -> tuple[str, list[Run]]:
    created = client.post("/v1/experiments", json=spec, headers=auth(token))
    assert created.status_code == 201, created.text
    experiment_id = created.json()["id"]
    with session_scope() as session:
        runs = list(session.scalars(select(Run).where(Run.experiment_id == experiment_id)))
        session.expunge_all()
    return experiment_id, runs


@pytest.fixture
def stored_run(client: TestClient, team_token: tuple[str, str]) -> dict[str, Any]:
    """GET /v1/runs/{id} of a run of the example (reno vs cubic, 10 Mbit/s, 40 ms, 1 BDP)."""
    spec = copy.deepcopy(EXAMPLE)
    spec["measurement"] = {"skip_start": "2s"}
    spec["duration"] = "10s"
    _, [run] = submitted(client, team_token[1], spec)
    store(run.id, {"goodput_bps": 7.5e6}, [
        {"algorithm": "reno", "goodput_bps": 5e6, "rtt_p95_s": 0.049},
        {"algorithm": "cubic", "goodput_bps": 5e6, "rtt_p95_s": 0.049},
    ], run_series())  # fmt: skip
    detail = client.get(f"/v1/runs/{run.id}", headers=auth(team_token[1]))
    assert detail.status_code == 200
    return dict(detail.json())


def by_name(figures: list[FigureData]) -> dict[str, FigureData]:
    return {f.name: f for f in figures}


def at(trace: Trace, x: float) -> float | None:
    """The trace's y at x (a bin's centre)."""
    [y] = [y for xi, y in zip(trace.x, trace.y, strict=True) if abs(xi - x) < 1e-6]
    return y


def test_run_figures_bin_goodput_per_rtt_with_aggregate_and_link_rate(
    stored_run: dict[str, Any],
) -> None:
    figures = by_name(run_figure_data(stored_run))
    assert list(figures) == [
        "goodput", "throughput", "cwnd", "cwnd_queue", "rtt", "rtt_vs_cwnd", "queue",
        "fairness", "rtt_cdf", "queue_delay_cdf", "goodput_cdf", "state_base_rtt_us",
    ]  # fmt: skip
    goodput = figures["goodput"]
    assert goodput.title == "goodput per RTT (40 ms)"
    assert goodput.subtitle == "reno vs cubic · 10 Mbit/s · RTT 40 ms · buffer 33 pkt (1 BDP)"
    assert (goodput.x.label, goodput.y.label) == ("time (s)", "goodput (Mbit/s)")
    names = [t.name for t in goodput.traces]
    assert names == ["flow 0 reno", "flow 1 cubic", "aggregate", "link rate 10 Mbit/s"]
    flow0, flow1, total, link = goodput.traces
    # One bin per RTT: 250 bins of 40 ms over 10 s, drawn at their centres.
    assert len(flow0.x) == 250 and flow0.x[:2] == [pytest.approx(0.02), pytest.approx(0.06)]
    assert all(y == pytest.approx(5.0) for y in flow0.y)
    # Flow 1: nothing before it starts, a stall that stays a stall, 5 Mbit/s otherwise.
    assert at(flow1, 1.98) is None and at(flow1, 2.02) == pytest.approx(5.0)
    assert at(flow1, 5.5) == 0.0 and at(flow1, 7.02) == pytest.approx(5.0)
    assert at(total, 3.02) == pytest.approx(10.0) and at(total, 1.02) == pytest.approx(5.0)
    assert (total.style, link.style, link.y) == ("aggregate", "reference", [10.0, 10.0])
    assert figures["throughput"].traces[0].y[100] == pytest.approx(5.2)

    # Any interval: per second, 10 bins.
    per_second = by_name(run_figure_data(stored_run, parse_bin("1s")))["goodput"]
    assert per_second.title == "goodput per 1 s"
    assert per_second.traces[0].y == [pytest.approx(5.0)] * 10
    assert per_second.traces[1].y[5] == pytest.approx(0.0)  # the silent second
    with pytest.raises(ValidationFailed, match="bin: 5 ms is finer than the stored samples"):
        run_figure_data(stored_run, parse_bin("5ms"))
    with pytest.raises(ValidationFailed, match="bin: 'a while'"):
        parse_bin("a while")


def test_run_figures_other_types(stored_run: dict[str, Any]) -> None:
    figures = by_name(run_figure_data(stored_run))
    cwnd = figures["cwnd"]
    assert cwnd.y.label == "cwnd (pkt)"
    assert [t.style for t in cwnd.traces] == ["line", "line", "dashed", "dashed"]
    assert cwnd.traces[3].colour == cwnd.traces[1].colour  # ssthresh in its flow's colour
    # cwnd above the queue, sharing time (seed 001 Fig. 5).
    panels = figures["cwnd_queue"].panels
    assert [p.y.label for p in panels] == ["cwnd (pkt)", "queue (pkt)"]
    rtt = figures["rtt"]
    assert rtt.y.label == "smoothed RTT (ms)" and rtt.traces[0].y[0] == pytest.approx(40.0)
    assert rtt.traces[-1].name == "base RTT 40 ms" and rtt.traces[-1].y == [40.0, 40.0]
    assert figures["rtt_vs_cwnd"].x.label == "cwnd (pkt)"
    queue = {t.name: t for t in figures["queue"].traces}
    assert queue["queue"].style == "step" and queue["buffer 33 pkt"].y == [33, 33]
    assert len(queue["drops"].x) == 29  # every increase of the cumulative drops
    assert figures["fairness"].title == "Jain's index per 1 s"
    # CDFs over the measurement window (after the 2 s skipped at the start).
    rtt_cdf = figures["rtt_cdf"]
    assert (rtt_cdf.x.label, rtt_cdf.y.label, rtt_cdf.y.range) == (
        "smoothed RTT (ms)", "CDF", (0.0, 1.0))  # fmt: skip
    first = rtt_cdf.traces[0]
    assert len(first.x) == 800 and first.y[-1] == 1.0 and first.x == sorted(first.x)
    delay = figures["queue_delay_cdf"]
    assert delay.x.label == "queueing delay (ms)" and max(delay.traces[0].x) == pytest.approx(39.6)
    goodput_cdf = figures["goodput_cdf"]
    assert goodput_cdf.title == "goodput per RTT (40 ms): CDF (after 2 s)"
    assert len(goodput_cdf.traces[0].x) == 200  # 8 s of 40 ms bins
    state = figures["state_base_rtt_us"]
    assert state.title == "controller state: base RTT" and state.y.label == "base RTT (ms)"
    assert state.traces[0].y[0] == pytest.approx(40.4)


def test_run_figures_drawn_by_matplotlib_and_plotly(
    stored_run: dict[str, Any], tmp_path: Path
) -> None:
    figures = by_name(run_figure_data(stored_run))
    fig = draw(figures["goodput"])
    [ax] = fig.axes
    assert (ax.get_xlabel(), ax.get_ylabel()) == ("time (s)", "goodput (Mbit/s)")
    assert fig.get_suptitle() == "goodput per RTT (40 ms)"
    assert [line.get_linestyle() for line in ax.get_lines()] == ["-", "-", "-", ":"]
    assert [t.get_text() for t in fig.legends[0].get_texts()] == [
        "flow 0 reno", "flow 1 cubic", "aggregate", "link rate 10 Mbit/s"]  # fmt: skip
    # No offset or x1e6 on the ticks: the label carries the prefix.
    fig.canvas.draw()
    assert ax.yaxis.get_offset_text().get_text() == ""
    two = draw(figures["cwnd_queue"])
    assert [a.get_ylabel() for a in two.axes] == ["cwnd (pkt)", "queue (pkt)"]

    page = plotly_figure(figures["cwnd_queue"])
    assert page["layout"]["yaxis2"]["title"]["text"] == "queue (pkt)"
    assert {t["yaxis"] for t in page["data"]} == {"y", "y2"}
    goodput = plotly_figure(figures["goodput"])
    assert goodput["layout"]["title"]["subtitle"]["text"].startswith("reno vs cubic")
    assert [t["line"].get("dash") for t in goodput["data"]] == [None, None, None, "dot"]

    # Every file figure in PNG, SVG and PDF.
    written = write_figure(figures["goodput"], tmp_path / "goodput")
    assert [p.name for p in written] == [f"goodput.{f}" for f in FORMATS]
    heads = {p.suffix: p.read_bytes()[:8] for p in written}
    assert heads[".png"].startswith(b"\x89PNG") and heads[".pdf"].startswith(b"%PDF")
    assert b"<svg" in (tmp_path / "goodput.svg").read_bytes()[:400]
    # The text stays text in SVG (svg.fonttype none): the label is searchable.
    assert b"goodput (Mbit/s)" in (tmp_path / "goodput.svg").read_bytes()


def test_matrix_axes_are_numeric_with_units_or_categories() -> None:
    buffer = matrix_axis("topology.bottleneck.buffer", ["0.25bdp", "1bdp", "4bdp"], "buffer")
    assert (buffer.label, buffer.unit, buffer.number("4bdp"), buffer.text("0.25bdp")) == (
        "bottleneck buffer", "BDP", 4.0, "0.25 BDP")  # fmt: skip
    rate = matrix_axis("topology.bottleneck.rate", ["1Mbit", "10Mbit", "100Mbit"], "rate")
    assert rate.unit == "bit/s" and rate.text("10Mbit") == "10 Mbit/s"
    assert matrix_axis("flows[*].algorithm", ["reno", "cubic"], "algorithm").unit is None
    mixed = matrix_axis("topology.bottleneck.buffer", ["25pkt", "1bdp"], "buffer")
    assert mixed.unit is None  # packets and BDP fractions: categories
    flows = matrix_axis("flows", [[{"algorithm": "reno"}], [{"algorithm": "reno"}] * 4], "flows")
    assert (flows.label, flows.number([{}] * 4), flows.text([{"algorithm": "reno"}] * 4)) == (
        "number of flows", 4.0, "4 × reno")  # fmt: skip
    # Mixed flows read as their mix (a 50-flow value once read "tfrc + reno + tfrc + ...").
    half = [{"algorithm": "tfrc", "agent": "userspace"}, {"algorithm": "reno"}] * 25
    assert value_text(half) == "25 tfrc + 25 reno" == flows.text(half)
    assert matrix_axis("flows[1].start", ["0s", "5s"], "start").label == "flow 1 start"
    assert short_names(["flows[0].algorithm", "flows[1].algorithm", "duration"]) == {
        "flows[0].algorithm": "flows0.algorithm",
        "flows[1].algorithm": "flows1.algorithm",
        "duration": "duration",
    }
    # Log scale where values span decades evenly in log terms; not for 1..10 flows.
    assert log_scale([0.25, 1, 4]) and log_scale([5, 10, 20, 50, 100, 200])
    assert not log_scale([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]) and not log_scale([1, 2, 4])


def buffer_sweep(client: TestClient, token: str) -> tuple[str, dict[str, Any]]:
    """A stored matrix: reno and cubic x 0.25, 1, 4 BDP x 3 repetitions; utilization grows with
    the buffer, cubic a bit more; each flow's goodput and p95 RTT vary per repetition. One run
    (reno, 1 BDP, the second repetition) has time series."""
    spec = matrix(["reno", "cubic"], ["0.25bdp", "1bdp", "4bdp"], 3)
    experiment_id, runs = submitted(client, token, spec)
    for run in runs:
        buffer = {"0.25bdp": 0, "1bdp": 1, "4bdp": 2}[run.axis_values["topology.bottleneck.buffer"]]
        cubic = run.axis_values["flows[*].algorithm"] == "cubic"
        utilization = 0.7 + 0.1 * buffer + (0.05 if cubic else 0) + 0.01 * run.repetition
        goodput = 9.6e6 * utilization
        rtt = 0.04 * (1 + [0.25, 1, 4][buffer]) + 0.002 * run.repetition
        aggregate = {"utilization": utilization, "goodput_bps": goodput, "power": goodput / rtt}
        store(run.id, aggregate, [
            {"algorithm": "cubic" if cubic else "reno", "goodput_bps": goodput * share,
             "rtt_p95_s": rtt * (1 + 0.05 * k)}
            for k, share in enumerate((0.45 + 0.02 * run.repetition, 0.55 - 0.02 * run.repetition))
        ], run_series() if (buffer, cubic, run.repetition) == (1, False, 1) else None)  # fmt: skip
    report = client.get(f"/v1/experiments/{experiment_id}/report", headers=auth(token))
    return experiment_id, dict(report.json())


def compare(client: TestClient, token: str, experiment_id: str, **params: str) -> dict[str, Any]:
    response = client.get(
        f"/v1/experiments/{experiment_id}/compare", params=params, headers=auth(token)
    )
    assert response.status_code == 200, response.text
    return dict(response.json())


def test_matrix_figures(client: TestClient, team_token: tuple[str, str], tmp_path: Path) -> None:
    token = team_token[1]
    experiment_id, report = buffer_sweep(client, token)
    submission = client.get(f"/v1/experiments/{experiment_id}", headers=auth(token)).json()[
        "submission"
    ]
    buffer, algorithm = "topology.bottleneck.buffer", "flows[*].algorithm"

    # Metric against buffer per algorithm (seed 000 Figs. 5-9): a numeric, logarithmic axis.
    numeric = comparison_figure_data(
        compare(client, token, experiment_id, metric="utilization", x=buffer, by=algorithm), report
    )
    assert numeric.name == "utilization_vs_buffer_by_algorithm"
    assert numeric.title == "utilization against bottleneck buffer"
    assert numeric.subtitle == "median ± SIQR, n = 3"
    assert (numeric.x.label, numeric.x.scale, numeric.y.label) == (
        "bottleneck buffer (BDP)", "log", "utilization")  # fmt: skip
    assert (numeric.legend_title, [t.name for t in numeric.traces]) == (
        "algorithm", ["reno", "cubic"])  # fmt: skip
    reno = numeric.traces[0]
    assert reno.x == [0.25, 1.0, 4.0] and reno.y == pytest.approx([0.71, 0.81, 0.91])
    assert reno.error == pytest.approx([0.005] * 3)
    assert numeric.x.ticks == (0.25, 1.0, 4.0)  # a tick at each value of the matrix
    drawn = draw(numeric).axes[0]
    assert drawn.get_xscale() == "log" and drawn.get_xlabel() == "bottleneck buffer (BDP)"
    assert [t.get_text() for t in drawn.get_xticklabels()] == ["0.25", "1", "4"]
    assert [c.lines[0].get_linestyle() for c in drawn.containers] == ["-", "-"]  # a trend
    x_axis = plotly_figure(numeric)["layout"]["xaxis"]
    assert (x_axis["type"], x_axis["ticktext"]) == ("log", ["0.25", "1", "4"])

    # Against the algorithm: categories, grouped points, no lines between them.
    power = comparison_figure_data(
        compare(client, token, experiment_id, metric="power", x=algorithm, by=buffer), report
    )
    assert (power.x.scale, power.x.categories) == ("category", ("reno", "cubic"))
    assert power.y.label == "power (Mbit/s²)"
    assert [t.name for t in power.traces] == ["0.25 BDP", "1 BDP", "4 BDP"]
    drawn = draw(power).axes[0]
    assert [c.lines[0].get_linestyle() for c in drawn.containers] == ["None"] * 3
    offsets = [list(c.lines[0].get_xdata()) for c in drawn.containers]
    assert offsets[0][0] < offsets[1][0] < offsets[2][0] < 1  # side by side around "reno"
    page = plotly_figure(power)
    assert page["layout"]["xaxis"]["type"] == "category"
    assert page["layout"]["scattermode"] == "group"
    assert {t["mode"] for t in page["data"]} == {"markers"}

    # Box plots over the repetitions.
    box = box_figure_data(report, "utilization", buffer, algorithm)
    assert box.name == "utilization_box_vs_buffer_by_algorithm"
    assert box.x.categories == ("0.25 BDP", "1 BDP", "4 BDP")
    assert [len(s) for s in box.traces[0].samples or []] == [3, 3, 3]
    drawn_box = draw(box).axes[0]
    assert len(drawn_box.patches) == 6  # 2 algorithms x 3 buffers
    assert plotly_figure(box)["data"][0]["type"] == "box"

    # Per scheme, one figure per buffer (Pantheon's throughput-delay, with ellipses).
    schemes = by_name(scheme_figure_data(report))
    assert sorted(schemes) == sorted(
        f"{kind}_buffer-{b}" for kind in ("throughput_delay", "goodput_cdf")
        for b in ("0.25bdp", "1bdp", "4bdp"))  # fmt: skip
    scatter = schemes["throughput_delay_buffer-1bdp"]
    assert scatter.subtitle == "bottleneck buffer 1 BDP"
    assert (scatter.x.label, scatter.x.reversed, scatter.y.label) == (
        "RTT p95 (ms)", True, "goodput (Mbit/s)")  # fmt: skip
    points = [t for t in scatter.traces if t.style == "markers"]
    ellipses = [t for t in scatter.traces if t.style == "outline"]
    # A point per run: the scheme's flows' goodput summed, their p95 RTTs averaged.
    assert [t.name for t in points] == ["reno", "cubic"]
    assert points[0].y == pytest.approx([7.68, 7.776, 7.872])
    assert points[0].x == pytest.approx([82.0, 84.05, 86.1])
    assert [t.legend for t in ellipses] == [False, False]
    # The ellipse is centred on the scheme's mean.
    mean_x = sum(points[0].x) / 3
    assert (max(ellipses[0].x) + min(ellipses[0].x)) / 2 == pytest.approx(mean_x)
    assert draw(scatter).axes[0].xaxis_inverted()
    assert plotly_figure(scatter)["layout"]["xaxis"]["autorange"] == "reversed"
    goodput_cdf = schemes["goodput_cdf_buffer-1bdp"]
    assert [len(t.x) for t in goodput_cdf.traces] == [6, 6] and goodput_cdf.y.label == "CDF"

    # Files: every figure in three formats, named by axis values, not run-1 .. run-18.
    runs = {r["run_id"]: client.get(f"/v1/runs/{r['run_id']}", headers=auth(token)).json()
            for r in report["runs"]}  # fmt: skip
    comparisons = [
        compare(client, token, experiment_id, metric=m.name, x=buffer, by=algorithm)
        for m in KEY_METRICS
    ]
    figures = experiment_figure_data(report, comparisons, submission)
    # The conditions the matrix keeps (its base less what the axes vary).
    assert figures[0].subtitle == "10 Mbit/s · RTT 40 ms · median ± SIQR, n = 3"
    # (SVG only here, the fastest: every format is written by the test above and by
    # `ccbench report --plot` in tests/test_stack.py.)
    written = write_experiment_figures(report, runs, comparisons, tmp_path, submission, ["svg"])
    names = {p.name for p in written}
    run_files = {n for n in names if n.startswith("algorithm-reno_buffer-1bdp_rep2_")}
    assert len(run_files) == 12 and "algorithm-reno_buffer-1bdp_rep2_goodput.svg" in names
    assert {"utilization_vs_buffer_by_algorithm.svg", "power_box_vs_buffer_by_algorithm.svg",
            "throughput_delay_buffer-4bdp.svg"} <= names  # fmt: skip
    # Jain's index and the queue were not stored: their figures are left out.
    assert not any(n.startswith(("jain_index", "queue_mean_pkts")) for n in names)
    assert len(names) == len(written) == len(run_files) + 2 * 3 + 6
    assert all(p.stat().st_size > 0 for p in written)


def test_number_of_flows_is_a_numeric_axis(client: TestClient, team_token: tuple[str, str]) -> None:
    """Jain's index against the number of flows per algorithm (seed 001 Fig. 15)."""
    token = team_token[1]
    spec = matrix(["reno", "cubic"], ["1bdp"], 1)
    spec["axes"] = [
        {"path": "flows", "values": [[{"algorithm": "reno"}] * n for n in (1, 2, 4, 8)]},
        {"path": "flows[*].algorithm", "values": ["reno", "cubic"]},
    ]
    experiment_id, runs = submitted(client, token, spec)
    for run in runs:
        n = len(run.axis_values["flows"])
        store(run.id, {"jain_index": 1 - 0.02 * n}, [])
    report = client.get(f"/v1/experiments/{experiment_id}/report", headers=auth(token)).json()
    figure = comparison_figure_data(
        compare(client, token, experiment_id, metric="jain_index", x="flows",
                by="flows[*].algorithm"), report)  # fmt: skip
    assert figure.name == "jain_index_vs_flows_by_algorithm"
    assert (figure.x.label, figure.x.scale, figure.y.label) == (
        "number of flows", "linear", "Jain's index")  # fmt: skip
    assert figure.traces[0].x == [1.0, 2.0, 4.0, 8.0]
    assert figure.traces[0].y == pytest.approx([0.98, 0.96, 0.92, 0.84])


def cross_compare(client: TestClient, token: str, **params: Any) -> dict[str, Any]:
    response = client.get("/v1/compare", params=params, headers=auth(token))
    assert response.status_code == 200, response.text
    return dict(response.json())


def test_comparison_across_experiments_on_the_matrix_model(
    client: TestClient, team_token: tuple[str, str]
) -> None:
    """GET /v1/compare drawn as a matrix's comparison is: buffers (quantities as the spec writes
    them) on a numeric log axis in BDP, SI spec values (delays) in ms, experiments and
    algorithms as categories; series named as the matrix's legends or by experiment."""
    token = team_token[1]
    sweep_id, _ = buffer_sweep(client, token)
    single = copy.deepcopy(EXAMPLE)
    single["topology"]["bottleneck"]["delay"] = "80ms"
    single_id, [run] = submitted(client, token, single)
    store(run.id, {"utilization": 0.5}, [])

    buffer, algorithm = "topology.bottleneck.buffer", "flows[*].algorithm"
    by_algorithm = cross_comparison_figure_data(
        cross_compare(client, token, experiment=[sweep_id], metric="utilization", x=buffer,
                      by=algorithm))  # fmt: skip
    assert by_algorithm.name == "utilization_vs_buffer_by_algorithm"
    assert (by_algorithm.x.label, by_algorithm.x.scale) == ("bottleneck buffer (BDP)", "log")
    assert by_algorithm.x.ticks == (0.25, 1.0, 4.0)
    assert [t.name for t in by_algorithm.traces] == ["reno", "cubic"]
    assert by_algorithm.traces[0].x == [0.25, 1.0, 4.0]
    assert by_algorithm.traces[0].y == pytest.approx([0.71, 0.81, 0.91])
    assert by_algorithm.traces[0].error == pytest.approx([0.005] * 3)
    by_buffer = cross_comparison_figure_data(cross_compare(
        client, token, experiment=[sweep_id], metric="power", x=algorithm, by=buffer))  # fmt: skip
    assert (by_buffer.x.scale, by_buffer.x.categories) == ("category", ("reno", "cubic"))
    assert [t.name for t in by_buffer.traces] == ["0.25 BDP", "1 BDP", "4 BDP"]
    assert by_buffer.y.label == "power (Mbit/s²)"

    # Two experiments against a spec field that is no axis of either: a series each.
    delay = cross_comparison_figure_data(cross_compare(
        client, token, experiment=[sweep_id, single_id], metric="utilization",
        x="topology.bottleneck.delay"))  # fmt: skip
    assert (delay.x.label, delay.x.scale) == ("bottleneck delay (ms)", "linear")
    assert [t.x for t in delay.traces] == [[20.0], [80.0]]
    assert delay.legend_title == "experiment" and delay.traces[1].y == [0.5]
    assert delay.traces[1].name == f"{single['name']} ({single_id[:8]})"
    drawn = draw(delay).axes[0]
    assert drawn.get_xlabel() == "bottleneck delay (ms)"
    page = plotly_figure(delay)
    assert page["layout"]["xaxis"]["title"]["text"] == "bottleneck delay (ms)"
    assert [t["name"] for t in page["data"]] == [t.name for t in delay.traces]
    # Per experiment on x: categories by name and short id, the experiments in the subtitle.
    categories = cross_comparison_figure_data(cross_compare(
        client, token, experiment=[sweep_id, single_id], metric="utilization",
        x="experiment", by=""))  # fmt: skip
    assert categories.x.scale == "category" and len(categories.x.categories) == 2
    assert categories.subtitle.startswith(f"api-matrix ({sweep_id[:8]}), api-test (")
