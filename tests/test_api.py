"""The REST API against a real PostgreSQL (and Redis as the broker): validation errors name the
field, teams are isolated, pagination and filters, matrices expand, cancellation, limits."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select

from api.app import app
from ccbench.db.models import Experiment, Run
from ccbench.db.session import session_scope

EXAMPLE: dict[str, Any] = {
    "schema_version": 1,
    "name": "api-test",
    "tags": ["api"],
    "testbed": {"kind": "mininet"},
    "topology": {
        "kind": "dumbbell",
        "bottleneck": {"rate": "10Mbit", "delay": "20ms", "buffer": "1bdp"},
    },
    "flows": [{"algorithm": "reno"}, {"algorithm": "cubic"}],
    "duration": "5s",
}


def matrix(algorithms: list[str], buffers: list[str], repetitions: int) -> dict[str, Any]:
    return {
        "kind": "matrix",
        "schema_version": 1,
        "name": "api-matrix",
        "base": copy.deepcopy(EXAMPLE),
        "axes": [
            {"path": "flows[*].algorithm", "values": algorithms},
            {"path": "topology.bottleneck.buffer", "values": buffers},
        ],
        "combine": "product",
        "repetitions": repetitions,
        "order": {"shuffle": True, "seed": 3},
    }


@pytest.fixture
def client() -> TestClient:
    return TestClient(app)


def auth(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def count_experiments(team_name: str) -> int:
    from ccbench.db.models import Team

    with session_scope() as session:
        return (
            session.scalar(
                select(func.count())
                .select_from(Experiment)
                .join(Team, Team.id == Experiment.team_id)
                .where(Team.name == team_name)
            )
            or 0
        )


def test_create_single_experiment(client: TestClient, team_token: tuple[str, str]) -> None:
    _, token = team_token
    response = client.post("/v1/experiments", json=EXAMPLE, headers=auth(token))
    assert response.status_code == 201, response.text
    body = response.json()
    assert body["run_count"] == 1 and body["status"] == "queued" and body["kind"] == "experiment"
    detail = client.get(f"/v1/experiments/{body['id']}", headers=auth(token)).json()
    assert [r["status"] for r in detail["runs"]] == ["queued"]
    run = client.get(f"/v1/runs/{detail['runs'][0]['id']}", headers=auth(token)).json()
    # Stored normalised: SI units.
    assert run["spec"]["topology"]["bottleneck"]["rate"] == 10e6
    assert run["spec"]["topology"]["bottleneck"]["delay"] == pytest.approx(0.020)


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda s: s["flows"][1].__setitem__("algorithm", "renoo"), "flows.1.algorithm"),
        (lambda s: s["topology"]["bottleneck"].__setitem__("rate", "10Mbt"), "topology"),
        (lambda s: s.__setitem__("duration", "-1s"), "duration"),
        (lambda s: s.__setitem__("flowz", []), "flowz"),
    ],
)
def test_validation_error_names_the_field(
    client: TestClient, team_token: tuple[str, str], mutate: Any, field: str
) -> None:
    team, token = team_token
    spec = copy.deepcopy(EXAMPLE)
    mutate(spec)
    response = client.post("/v1/experiments", json=spec, headers=auth(token))
    assert response.status_code == 422, response.text
    body = response.json()
    assert body["error"] == "validation_error"
    fields = [e["field"] for e in body["errors"]]
    assert any(f.startswith(field) for f in fields), fields
    assert all(e["reason"] for e in body["errors"])
    assert count_experiments(team) == 0


def test_validator_messages_come_without_pydantic_prefix(
    client: TestClient, team_token: tuple[str, str]
) -> None:
    _, token = team_token
    spec = copy.deepcopy(EXAMPLE)
    spec["topology"]["bottleneck"]["delay"] = 20
    body = client.post("/v1/experiments", json=spec, headers=auth(token)).json()
    [delay] = [e for e in body["errors"] if e["field"] == "topology.bottleneck.delay"]
    assert delay["reason"] == "20 has no unit: add one, e.g. 20ms", delay
    assert not any("Value error" in e["reason"] for e in body["errors"]), body


def test_bad_rate_error_names_full_path(client: TestClient, team_token: tuple[str, str]) -> None:
    _, token = team_token
    spec = copy.deepcopy(EXAMPLE)
    spec["topology"]["bottleneck"]["rate"] = "10Mbt"
    body = client.post("/v1/experiments", json=spec, headers=auth(token)).json()
    rate_errors = [e for e in body["errors"] if e["field"].endswith("bottleneck.rate")]
    assert rate_errors and "10Mbt" in rate_errors[0]["reason"], body


def test_teams_cannot_see_each_other(client: TestClient, unique: str) -> None:
    from ccbench import teams

    with session_scope() as session:
        token_a = teams.create_token(session, teams.create_team(session, f"a-{unique}"), "t")
        token_b = teams.create_token(session, teams.create_team(session, f"b-{unique}"), "t")
    created = client.post("/v1/experiments", json=EXAMPLE, headers=auth(token_a)).json()
    exp_id = created["id"]
    run_id = client.get(f"/v1/experiments/{exp_id}", headers=auth(token_a)).json()["runs"][0]["id"]
    for path in (
        f"/v1/experiments/{exp_id}",
        f"/v1/experiments/{exp_id}/report",
        f"/v1/runs/{run_id}",
    ):
        assert client.get(path, headers=auth(token_b)).status_code == 404, path
        assert client.get(path, headers=auth(token_a)).status_code == 200, path
    assert client.post(f"/v1/experiments/{exp_id}/cancel", headers=auth(token_b)).status_code == 404
    listing = client.get("/v1/experiments", headers=auth(token_b)).json()
    assert listing["total"] == 0 and listing["items"] == []


def test_auth_required(client: TestClient) -> None:
    assert client.get("/v1/experiments").status_code == 401
    response = client.get("/v1/experiments", headers=auth("ccb_wrong"))
    assert response.status_code == 401
    assert "invalid" in response.json()["message"]


def test_pagination_and_filters(client: TestClient, team_token: tuple[str, str]) -> None:
    _, token = team_token
    ids = []
    for i in range(5):
        spec = copy.deepcopy(EXAMPLE)
        spec["name"] = f"page-{i}"
        spec["tags"] = ["even"] if i % 2 == 0 else ["odd"]
        ids.append(client.post("/v1/experiments", json=spec, headers=auth(token)).json()["id"])
    first = client.get("/v1/experiments?page=1&page_size=2", headers=auth(token)).json()
    second = client.get("/v1/experiments?page=2&page_size=2", headers=auth(token)).json()
    third = client.get("/v1/experiments?page=3&page_size=2", headers=auth(token)).json()
    assert first["total"] == 5
    seen = [e["id"] for page in (first, second, third) for e in page["items"]]
    assert sorted(seen) == sorted(ids) and len(set(seen)) == 5
    assert [len(p["items"]) for p in (first, second, third)] == [2, 2, 1]
    even = client.get("/v1/experiments?tag=even", headers=auth(token)).json()
    assert even["total"] == 3
    named = client.get("/v1/experiments?name=page-4", headers=auth(token)).json()
    assert [e["name"] for e in named["items"]] == ["page-4"]
    queued = client.get("/v1/experiments?status=queued", headers=auth(token)).json()
    assert queued["total"] == 5
    assert client.get("/v1/experiments?status=done", headers=auth(token)).json()["total"] == 0
    bad = client.get("/v1/experiments?page=0", headers=auth(token))
    assert bad.status_code == 422 and bad.json()["errors"][0]["field"] == "page"


def test_id_prefixes_find_experiments_and_runs(client: TestClient, unique: str) -> None:
    from ccbench import teams

    with session_scope() as session:
        team = teams.create_team(session, f"prefix-{unique}")
        token = teams.create_token(session, team, "t")
        other = teams.create_token(session, teams.create_team(session, f"other-{unique}"), "t")
    # 17 experiments: two share their first hex digit at least (pigeonhole).
    ids = [
        client.post("/v1/experiments", json=EXAMPLE, headers=auth(token)).json()["id"]
        for _ in range(17)
    ]
    shared = next(i[0] for i in ids if sum(j[0] == i[0] for j in ids) > 1)
    found = client.get(f"/v1/experiments?id_prefix={shared}", headers=auth(token)).json()
    assert sorted(e["id"] for e in found["items"]) == sorted(i for i in ids if i[0] == shared)
    one = client.get(f"/v1/experiments?id_prefix={ids[0][:12]}", headers=auth(token)).json()
    assert [e["id"] for e in one["items"]] == [ids[0]]
    # Another team's prefix finds nothing; LIKE's wildcards are plain characters.
    assert client.get(f"/v1/experiments?id_prefix={ids[0]}", headers=auth(other)).json() == {
        "items": [], "total": 0, "page": 1, "page_size": 50
    }  # fmt: skip
    wild = client.get("/v1/experiments?id_prefix=%25", headers=auth(token)).json()
    assert wild["total"] == 0
    too_long = client.get(f"/v1/experiments?id_prefix={'a' * 33}", headers=auth(token))
    assert too_long.status_code == 422 and too_long.json()["errors"][0]["field"] == "id_prefix"

    # Runs: the team's, by prefix, by experiment, by status.
    runs = client.get("/v1/runs?page_size=200", headers=auth(token)).json()
    assert runs["total"] == 17 and {r["experiment_id"] for r in runs["items"]} == set(ids)
    run_id = runs["items"][0]["id"]
    by_prefix = client.get(f"/v1/runs?id_prefix={run_id[:10]}", headers=auth(token)).json()
    assert [r["id"] for r in by_prefix["items"]] == [run_id]
    of_one = client.get(f"/v1/runs?experiment_id={ids[3]}", headers=auth(token)).json()
    assert [r["experiment_id"] for r in of_one["items"]] == [ids[3]]
    assert client.get("/v1/runs?status=done", headers=auth(token)).json()["total"] == 0
    assert client.get(f"/v1/runs?id_prefix={run_id}", headers=auth(other)).json()["total"] == 0
    bogus = client.get("/v1/runs?status=bogus", headers=auth(token))
    assert bogus.status_code == 422 and bogus.json()["errors"][0]["field"] == "status"


def test_matrix_expands_to_runs_and_grouped_report(
    client: TestClient, team_token: tuple[str, str]
) -> None:
    _, token = team_token
    body = matrix(["reno", "cubic"], ["0.5bdp", "1bdp", "2bdp"], 2)
    created = client.post("/v1/experiments", json=body, headers=auth(token))
    assert created.status_code == 201, created.text
    assert created.json()["run_count"] == 12
    detail = client.get(f"/v1/experiments/{created.json()['id']}", headers=auth(token)).json()
    runs = detail["runs"]
    assert len(runs) == 12
    points = {(r["point_index"], r["repetition"]) for r in runs}
    assert len(points) == 12
    combos = {
        (
            str(r["axis_values"]["flows[*].algorithm"]),
            str(r["axis_values"]["topology.bottleneck.buffer"]),
        )
        for r in runs
    }
    assert len(combos) == 6
    report = client.get(f"/v1/experiments/{detail['id']}/report", headers=auth(token)).json()
    assert len(report["runs"]) == 12
    assert len(report["groups"]) == 6
    # Nothing ran yet: each group has 2 repetitions, none finished.
    assert all(g["runs"] == 2 and g["n"] == 0 for g in report["groups"])
    assert {tuple(sorted(g["axis_values"].items())) for g in report["groups"]} == {
        tuple(sorted(r["axis_values"].items())) for r in runs
    }


def test_matrix_over_limit_is_refused_before_storing(
    client: TestClient, team_token: tuple[str, str]
) -> None:
    team, token = team_token
    body = matrix(["reno", "cubic"], [f"{i}pkt" for i in range(1, 101)], 100)  # 20,000 runs
    response = client.post("/v1/experiments", json=body, headers=auth(token))
    assert response.status_code == 422, response.text
    assert "20,000" in response.json()["message"] or "20000" in response.json()["message"]
    assert count_experiments(team) == 0


def test_cancel_queued_experiment_then_conflict(
    client: TestClient, team_token: tuple[str, str]
) -> None:
    _, token = team_token
    exp_id = client.post("/v1/experiments", json=EXAMPLE, headers=auth(token)).json()["id"]
    cancelled = client.post(f"/v1/experiments/{exp_id}/cancel", headers=auth(token))
    assert cancelled.status_code == 200 and cancelled.json()["status"] == "cancelled"
    with session_scope() as session:
        statuses = session.scalars(select(Run.status).where(Run.experiment_id == exp_id)).all()
    assert statuses == ["cancelled"]
    again = client.post(f"/v1/experiments/{exp_id}/cancel", headers=auth(token))
    assert again.status_code == 409 and "already cancelled" in again.json()["message"]


def test_unknown_ids_are_404(client: TestClient, team_token: tuple[str, str]) -> None:
    _, token = team_token
    assert client.get("/v1/experiments/nope", headers=auth(token)).status_code == 404
    assert client.get("/v1/runs/nope", headers=auth(token)).status_code == 404


def test_openapi_documents_the_endpoints(client: TestClient) -> None:
    paths = client.get("/openapi.json").json()["paths"]
    for path in (
        "/v1/experiments",
        "/v1/experiments/{experiment_id}",
        "/v1/experiments/{experiment_id}/cancel",
        "/v1/experiments/{experiment_id}/report",
        "/v1/runs/{run_id}",
    ):
        assert path in paths, path


def finish_runs_with(experiment_id: str, utilization: Any) -> None:
    """Store results on the experiment's runs as a worker would (status done, a summary and
    one flow each), with utilization = utilization(axis_values, repetition)."""
    from ccbench.db.models import FlowResult, RunSeries
    from ccbench.db.runs import refresh_experiment_status
    from schemas import AggregateMetrics, AppliedConditions, RunResult

    empty = {name: None for name in AggregateMetrics.model_fields}
    with session_scope() as session:
        for run in session.scalars(select(Run).where(Run.experiment_id == experiment_id)):
            aggregate = AggregateMetrics(**{**empty, "utilization": utilization(run)})
            applied = AppliedConditions(
                rate_bps=10e6,
                delay_s=0.02,
                base_rtt_s=0.04,
                buffer_pkts=33,
                buffer_bytes=None,
                delay_mechanism=None,
                measured_min_rtt_s=None,
                measured_rate_bps=None,
            )
            run.status = "done"
            run.aggregate = RunResult(aggregate=aggregate, applied=applied, checks=[]).model_dump(
                mode="json"
            )
            session.add(
                FlowResult(
                    run_id=run.id,
                    flow_index=0,
                    algorithm="reno",
                    metrics={
                        "goodput_bps": 5e6,
                        "throughput_bps": None,
                        "rtt_mean_s": 0.05,
                        "rtt_p95_s": None,
                        "rtt_min_s": None,
                        "retransmits": 3,
                        "bytes_received": 1000,
                    },
                )
            )
            session.add(
                RunSeries(
                    run_id=run.id,
                    name="flow-0.tcp_info",
                    data={"t_s": [0.0, 0.5], "cwnd_pkts": [10, 20], "srtt_s": [0.04, None]},
                )
            )
        session.flush()
        refresh_experiment_status(session, experiment_id)  # as a worker does after each run


def test_compare_metric_against_axes_and_export_csv(
    client: TestClient, team_token: tuple[str, str]
) -> None:
    _, token = team_token
    body = matrix(["reno", "cubic"], ["0.5bdp", "1bdp", "2bdp"], 2)
    exp_id = client.post("/v1/experiments", json=body, headers=auth(token)).json()["id"]
    buffers = {"0.5bdp": 0.5, "1bdp": 0.8, "2bdp": 0.9}

    def utilization(run: Run) -> float:
        base = buffers[run.axis_values["topology.bottleneck.buffer"]]
        bonus = 0.05 if run.axis_values["flows[*].algorithm"] == "cubic" else 0.0
        return base + bonus + 0.02 * run.repetition

    finish_runs_with(exp_id, utilization)
    response = client.get(
        f"/v1/experiments/{exp_id}/compare",
        params={
            "metric": "utilization",
            "x": "topology.bottleneck.buffer",
            "by": "flows[*].algorithm",
        },
        headers=auth(token),
    )
    assert response.status_code == 200, response.text
    series = {s["by"]: {p["x"]: p for p in s["points"]} for s in response.json()["series"]}
    assert set(series) == {"reno", "cubic"}
    point = series["cubic"]["1bdp"]
    # Repetitions 0.85 and 0.87: median 0.86, SIQR (Q3 - Q1) / 2 = 0.005.
    assert point["n"] == 2 and point["median"] == pytest.approx(0.86)
    assert point["siqr"] == pytest.approx(0.005)
    assert series["reno"]["0.5bdp"]["median"] == pytest.approx(0.51)

    from ccbench.plots.figures import comparison_figure

    figure = comparison_figure(response.json())
    axes = figure.axes[0]
    drawn = {c.get_label(): list(c.lines[0].get_ydata()) for c in axes.containers}
    assert drawn["cubic"] == pytest.approx([0.56, 0.86, 0.96])
    assert axes.get_xlabel() == "bottleneck buffer (BDP)"
    assert list(axes.containers[0].lines[0].get_xdata()) == [0.5, 1.0, 2.0]  # a numeric axis

    bad = client.get(
        f"/v1/experiments/{exp_id}/compare",
        params={"metric": "utilisation", "x": "rate"},
        headers=auth(token),
    )
    assert bad.status_code == 422
    assert {e["field"] for e in bad.json()["errors"]} == {"metric", "x"}

    runs_csv = client.get(f"/v1/experiments/{exp_id}/export.csv", headers=auth(token))
    assert runs_csv.status_code == 200 and runs_csv.headers["content-type"].startswith("text/csv")
    lines = runs_csv.text.strip().splitlines()
    assert len(lines) == 13
    header = lines[0].split(",")
    assert header[:5] == ["run_id", "status", "point_index", "repetition", "seed"]
    assert "topology.bottleneck.buffer" in header and "utilization" in header
    flows_csv = (
        client.get(
            f"/v1/experiments/{exp_id}/export.csv", params={"table": "flows"}, headers=auth(token)
        )
        .text.strip()
        .splitlines()
    )
    assert len(flows_csv) == 13 and "goodput_bps" in flows_csv[0].split(",")

    import io

    import pyarrow.parquet as pq

    parquet = client.get(
        f"/v1/experiments/{exp_id}/export.parquet", params={"table": "runs"}, headers=auth(token)
    )
    assert parquet.status_code == 200
    table = pq.read_table(io.BytesIO(parquet.content))
    assert table.num_rows == 12
    assert table.schema.field("utilization").type == "double"
    assert table.schema.field("repetition").type == "int64"
    assert sorted(set(table.column("topology.bottleneck.buffer").to_pylist())) == [
        "0.5bdp",
        "1bdp",
        "2bdp",
    ]
    # Time series in long form: (run, series, variable, t_s, value), axes as columns.
    series_csv = client.get(
        f"/v1/experiments/{exp_id}/export.csv", params={"table": "series"}, headers=auth(token)
    ).text.splitlines()
    header = series_csv[0].split(",")
    assert header[-4:] == ["series", "variable", "t_s", "value"]
    assert "flows[*].algorithm" in header
    assert len(series_csv) == 1 + 12 * 4  # 12 runs x 2 variables x 2 samples
    assert series_csv[1].split(",")[-4:] == ["flow-0.tcp_info", "cwnd_pkts", "0.0", "10.0"]
    assert series_csv[4].split(",")[-4:] == ["flow-0.tcp_info", "srtt_s", "0.5", ""]
    parquet = client.get(
        f"/v1/experiments/{exp_id}/export.parquet", params={"table": "series"}, headers=auth(token)
    )
    table = pq.read_table(io.BytesIO(parquet.content))
    assert table.num_rows == 48 and table.schema.field("value").type == "double"
    bad_table = client.get(
        f"/v1/experiments/{exp_id}/export.csv", params={"table": "packets"}, headers=auth(token)
    )
    assert bad_table.status_code == 422 and "table" in bad_table.text


def test_two_runs_finishing_at_once_leave_the_experiment_done(
    client: TestClient, team_token: tuple[str, str]
) -> None:
    """Two workers finish the last two runs in concurrent transactions: whichever refreshes
    the experiment second must count the first's run as done (it waits for the first's lock
    and counts after it). It used to count first and leave the experiment `running` for good."""
    import threading
    import time

    from sqlalchemy import text, update

    from ccbench.db.runs import refresh_experiment_status, transition
    from ccbench.db.session import engine_for
    from ccbench.runstate import RunStatus
    from ccbench.settings import get_settings

    _, token = team_token
    exp_id = client.post(
        "/v1/experiments", json=matrix(["reno"], ["1bdp"], 2), headers=auth(token)
    ).json()["id"]
    with session_scope() as session:
        first, second = session.scalars(
            select(Run.id).where(Run.experiment_id == exp_id).order_by(Run.order_index)
        ).all()
        session.execute(update(Run).where(Run.experiment_id == exp_id).values(status="analyzing"))
    engine = engine_for(get_settings().effective_database_url)
    if engine.dialect.name != "postgresql":
        pytest.skip("SQLite serializes writers: no two transactions interleave")
    holding = threading.Event()

    def finish_first() -> None:
        with session_scope() as session:
            assert transition(session, first, RunStatus.done)
            refresh_experiment_status(session, exp_id)  # holds the experiment's row lock
            holding.set()
            with engine.connect() as watcher:  # commit only once the other one waits for it
                deadline = time.monotonic() + 30
                while not watcher.execute(
                    text("SELECT count(*) FROM pg_locks WHERE NOT granted")
                ).scalar():
                    assert time.monotonic() < deadline, "the second refresh never waited"
                    time.sleep(0.02)

    thread = threading.Thread(target=finish_first)
    thread.start()
    assert holding.wait(30)
    with session_scope() as session:
        assert transition(session, second, RunStatus.done)
        refresh_experiment_status(session, exp_id)  # waits for the first's commit
    thread.join(30)
    with session_scope() as session:
        experiment = session.get(Experiment, exp_id)
        assert experiment is not None
        assert (experiment.status, experiment.status_counts) == ("done", {"done": 2})
