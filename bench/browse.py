"""Browsing at scale (issue 19), part of `make bench-report`: the listing with filters over
100,000 runs and a comparison across 10 experiments of 1,000 runs, through the real API stack
on PostgreSQL, timed over repeated requests (p50, p95 and the slowest).

The database holds 20 teams' experiments: 10 matrices of 1,000 runs (2 algorithms x 10
buffers x 50 repetitions) and 3,600 matrices of 25 runs (5 buffers x 5 repetitions) — 100,000
runs; 70% of them done with results, 15% failed, 15% queued; tags, delays, rates and creation
dates (over a year) vary; every team shares a tenth of its experiments with team 0 and makes a
twentieth public. Team 0 browses."""

from __future__ import annotations

import random
import statistics
import sys
import time
from collections.abc import Callable
from datetime import timedelta
from typing import Any

from sqlalchemy import insert, select, update

from bench.figures import p95

TEAMS = 20
BIG = 10  # experiments of 1,000 runs: the comparison's
SMALL = 3_600  # experiments of 25 runs
REQUESTS = 20
TAGS = ["fairness", "buffers", "paper", "satellite", "rtt", "draft", "lab", "internet"]
PAIRS = [("reno", "cubic"), ("cubic", "bbr"), ("reno", "bbr"), ("reno", "reno")]
DELAYS = ["10ms", "20ms", "50ms", "135ms"]


def _matrix(name: str, i: int, big: bool) -> dict[str, Any]:
    pair = PAIRS[i % len(PAIRS)]
    bottleneck = {"rate": "100Mbit" if i % 3 == 0 else "10Mbit", "delay": DELAYS[i % 4]}
    flows = [{"algorithm": pair[0]}, {"algorithm": pair[1]}]
    base = {"name": name, "topology": {"kind": "dumbbell", "bottleneck": bottleneck},
            "flows": flows, "duration": "20s"}  # fmt: skip
    rng = random.Random(i)
    matrix: dict[str, Any] = {"kind": "matrix", "name": name, "base": base, "seed": i,
                              "tags": rng.sample(TAGS, rng.randint(0, 3))}  # fmt: skip
    if big:
        matrix["axes"] = [
            {"path": "flows[*].algorithm", "values": ["reno", "cubic"]},
            {"path": "topology.bottleneck.buffer",
             "values": [f"{b}pkt" for b in range(10, 110, 10)]},
        ]  # fmt: skip
        matrix["repetitions"] = 50
    else:
        matrix["axes"] = [{"path": "topology.bottleneck.buffer",
                           "values": ["0.25bdp", "0.5bdp", "1bdp", "2bdp", "4bdp"]}]  # fmt: skip
        matrix["repetitions"] = 5
    return matrix


def _result(rng: random.Random) -> dict[str, Any]:
    from schemas import AggregateMetrics, AppliedConditions, RunResult

    empty = {name: None for name in AggregateMetrics.model_fields}
    aggregate = AggregateMetrics(**{**empty, "utilization": rng.uniform(0.5, 1.0),
                                    "jain_index": rng.uniform(0.6, 1.0),
                                    "goodput_bps": rng.uniform(4e6, 9.6e6)})  # fmt: skip
    applied = AppliedConditions(rate_bps=10e6, delay_s=0.02, base_rtt_s=0.04, buffer_pkts=33,
                                buffer_bytes=None, delay_mechanism="emulator",
                                measured_min_rtt_s=0.0404, measured_rate_bps=10e6)  # fmt: skip
    return RunResult(aggregate=aggregate, applied=applied, checks=[]).model_dump(mode="json")


FATES = ["done", "failed", "queued"]


def _finish(session: Any, experiment_id: str, fate: str, rng: random.Random, flows: bool) -> None:
    """Give the experiment's runs an outcome (as workers would), then refresh it."""
    from ccbench.db.models import FlowResult, Run, utcnow
    from ccbench.db.runs import refresh_experiment_status

    run_ids = session.scalars(select(Run.id).where(Run.experiment_id == experiment_id)).all()
    if fate == "done":
        rows = [{"id": r, "status": "done", "aggregate": _result(rng), "finished_at": utcnow()}
                for r in run_ids]  # fmt: skip
        session.execute(update(Run), rows)
    elif fate == "failed":
        error = "congestion control 'vegas' is not available on this host"
        rows = [{"id": r, "status": "failed", "finished_at": utcnow(), "error": error}
                for r in run_ids]  # fmt: skip
        session.execute(update(Run), rows)
    if flows:
        session.execute(insert(FlowResult), [
            {"run_id": r, "flow_index": f, "algorithm": "reno",
             "metrics": {"goodput_bps": rng.uniform(2e6, 5e6), "rtt_mean_s": 0.05}}
            for r in run_ids for f in (0, 1)])  # fmt: skip
    refresh_experiment_status(session, experiment_id)


def populate() -> tuple[str, list[str]]:
    """Store the teams and experiments; team 0's token and the big experiments' ids."""
    from ccbench.db.models import Experiment, ExperimentPin, Grant, utcnow
    from ccbench.db.session import session_scope
    from ccbench.experiments import create_experiment
    from ccbench.teams import create_team, create_token
    from schemas import MatrixSpec

    started = time.perf_counter()
    rng = random.Random(19)
    with session_scope() as session:
        teams = [create_team(session, f"browse-{k}") for k in range(TEAMS)]
        token = create_token(session, teams[0], "bench")
        team_ids = [t.id for t in teams]
    big_ids: list[str] = []
    ids: list[str] = []
    for i in range(BIG + SMALL):
        big = i < BIG
        with session_scope() as session:
            team = session.get(type(teams[0]), team_ids[0 if big else i % TEAMS])
            assert team is not None
            spec = MatrixSpec.model_validate(_matrix(f"{'cmp' if big else 'sweep'}-{i}", i, big))
            experiment, _ = create_experiment(session, team, spec, run_limit=10_000)
            ids.append(experiment.id)
            if big:
                big_ids.append(experiment.id)
            experiment.created_at = utcnow() - timedelta(days=rng.uniform(0, 365))
        if i % 500 == 0:
            print(f"  {i} experiments stored ({time.perf_counter() - started:.0f} s)",
                  file=sys.stderr)  # fmt: skip
    with session_scope() as session:
        for n, experiment_id in enumerate(ids):
            fate = "done" if n < BIG else rng.choices(FATES, [70, 15, 15])[0]
            _finish(session, experiment_id, fate, rng, flows=n < BIG)
            owner = session.scalar(select(Experiment.team_id).where(Experiment.id == experiment_id))
            if owner != team_ids[0] and n % 10 == 0:
                session.add(Grant(resource_kind="experiment", resource_id=experiment_id,
                                  owner_team_id=owner, grantee_team_id=team_ids[0]))  # fmt: skip
            elif owner != team_ids[0] and n % 20 == 5:
                session.add(Grant(resource_kind="experiment", resource_id=experiment_id,
                                  owner_team_id=owner, grantee_team_id=None))  # fmt: skip
            if n % 180 == 3:
                session.add(ExperimentPin(team_id=team_ids[0], experiment_id=experiment_id))
            if n % 200 == 0:
                session.commit()
    runs = _count_runs()
    print(f"stored {len(ids)} experiments, {runs} runs in {time.perf_counter() - started:.0f} s",
          file=sys.stderr)  # fmt: skip
    return token, big_ids


def _count_runs() -> int:
    from sqlalchemy import func

    from ccbench.db.models import Run
    from ccbench.db.session import session_scope

    with session_scope() as session:
        return session.scalar(select(func.count()).select_from(Run)) or 0


def _timed(call: Callable[[], Any], requests: int = REQUESTS) -> list[float]:
    call()  # warm: the first request compiles queries and fills caches
    out = []
    for _ in range(requests):
        t = time.perf_counter()
        call()
        out.append(time.perf_counter() - t)
    return out


LISTINGS: list[tuple[str, dict[str, Any]]] = [
    ("default", {}),
    ("tag_algorithm", {"tag": "paper", "algorithm": "bbr"}),
    ("param_status", {"param": "topology.bottleneck.delay=50ms", "status": "done"}),
    ("text_sort_metric", {"q": "sweep-1", "sort": "-utilization"}),
    (
        "dates_access_sort",
        {"created_after": "2000-01-01T00:00:00Z", "access": "shared", "sort": "name"},
    ),  # fmt: skip
    (
        "param_units_page",
        {"param": "topology.bottleneck.rate=0.1Gbit", "page": 3, "sort": "-created"},
    ),  # fmt: skip
]


def measure(token: str, big_ids: list[str], emit: Callable[..., None]) -> None:
    from fastapi.testclient import TestClient

    from api.app import app

    client = TestClient(app)
    headers = {"Authorization": f"Bearer {token}"}
    runs = _count_runs()
    every: list[float] = []
    for name, params in LISTINGS:

        def listing(params: dict[str, Any] = params) -> Any:
            response = client.get("/v1/experiments", params=params, headers=headers)
            assert response.status_code == 200, response.text
            return response.json()

        body = listing()
        assert body["items"], (name, body)
        values = _timed(listing)
        every += values
        print(f"  list {name}: {body['total']} experiments match, p50 "
              f"{statistics.median(values) * 1e3:.0f} ms, p95 {p95(values) * 1e3:.0f} ms",
              file=sys.stderr)  # fmt: skip
    print(f"  listing over {runs} runs: {len(every)} requests", file=sys.stderr)
    emit("list_filtered_100k_runs_p50", statistics.median(every) * 1e3, "ms")
    emit("list_filtered_100k_runs_p95", p95(every) * 1e3, "ms", "<= 300")
    emit("list_filtered_100k_runs_max", max(every) * 1e3, "ms")

    for scope, metric in (("aggregate", "utilization"), ("flow", "goodput_bps")):
        params = {"experiment": big_ids, "metric": metric, "scope": scope,
                  "x": "topology.bottleneck.buffer", "by": "flows[*].algorithm"}  # fmt: skip

        def compare(params: dict[str, Any] = params) -> Any:
            response = client.get("/v1/compare", params=params, headers=headers)
            assert response.status_code == 200, response.text
            return response.json()

        body = compare()
        assert sum(e["runs"] for e in body["experiments"]) == 10_000, body["experiments"]
        assert [len(s["points"]) for s in body["series"]] == [10, 10], body["series"]
        values = _timed(compare)
        name = "compare_10x1000_runs" + ("" if scope == "aggregate" else "_per_flow")
        emit(f"{name}_p50", statistics.median(values) * 1e3, "ms")
        emit(f"{name}_p95", p95(values) * 1e3, "ms", "<= 500" if scope == "aggregate" else None)
        emit(f"{name}_max", max(values) * 1e3, "ms")


def run(emit: Callable[..., None]) -> None:
    token, big_ids = populate()
    measure(token, big_ids, emit)
