"""The report of a 1,000-run matrix from PostgreSQL (issue: reports): GET
/v1/experiments/{id}/report and /compare through the real API stack, timed over repeated
requests; prints p50 and p95 (target p95 <= 500 ms). Then browsing at scale (bench/browse.py):
the listing with filters over 100,000 runs (target p95 <= 300 ms) and a comparison across 10
experiments of 1,000 runs (target p95 <= 500 ms). Starts its own PostgreSQL (and Redis) as the
test harness does.

    make bench-report
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time

from bench import browse
from bench.figures import figure as emit
from bench.figures import p95

REQUESTS = 30


def figure(name: str, value: float | None, unit: str, target: str | None = None) -> None:
    emit("report", name, value, unit, target)


def main() -> int:
    from tests.services import start_services

    services = start_services()
    try:
        os.environ["CCBENCH_DATABASE_URL"] = services.database_url
        os.environ["CCBENCH_BROKER_URL"] = services.redis_url
        os.environ["CCBENCH_STATE_DIR"] = tempfile.mkdtemp(prefix="ccbench-bench-report-")
        return run()
    finally:
        services.stop()


def run() -> int:
    from fastapi.testclient import TestClient
    from sqlalchemy import select

    from api.app import app
    from ccbench.db.migrate import upgrade
    from ccbench.db.models import FlowResult, Run
    from ccbench.db.session import session_scope
    from ccbench.experiments import create_experiment
    from ccbench.settings import get_settings
    from ccbench.teams import create_team, create_token
    from schemas import AggregateMetrics, AppliedConditions, MatrixSpec, RunResult

    get_settings.cache_clear()
    upgrade(get_settings().effective_database_url)
    matrix = MatrixSpec.model_validate({
        "kind": "matrix", "name": "bench-report",
        "base": {"name": "b", "topology": {"kind": "dumbbell", "bottleneck": {
            "rate": "10Mbit", "delay": "20ms"}},
            "flows": [{"algorithm": "reno"}, {"algorithm": "cubic"}], "duration": "20s"},
        "axes": [{"path": "flows[*].algorithm", "values": ["reno", "cubic"]},
                 {"path": "topology.bottleneck.buffer",
                  "values": [f"{b}pkt" for b in range(10, 110, 10)]}],
        "repetitions": 50,
    })  # fmt: skip
    started = time.perf_counter()
    with session_scope() as session:
        team = create_team(session, "bench")
        token = create_token(session, team, "bench")
        experiment, runs = create_experiment(session, team, matrix, run_limit=10_000)
        experiment_id = experiment.id
    empty = {name: None for name in AggregateMetrics.model_fields}
    with session_scope() as session:
        for i, run in enumerate(session.scalars(select(Run).where(
                Run.experiment_id == experiment_id))):  # fmt: skip
            aggregate = AggregateMetrics(
                **{
                    **empty,
                    "utilization": 0.9 + (i % 10) / 100,
                    "jain_index": 0.95,
                    "goodput_bps": 9.5e6,
                }
            )
            applied = AppliedConditions(rate_bps=10e6, delay_s=0.02, base_rtt_s=0.04,
                                        buffer_pkts=33, buffer_bytes=None,
                                        delay_mechanism="emulator", measured_min_rtt_s=0.0404,
                                        measured_rate_bps=10e6)  # fmt: skip
            run.status = "done"
            run.aggregate = RunResult(aggregate=aggregate, applied=applied,
                                       checks=[]).model_dump(mode="json")  # fmt: skip
            for flow in (0, 1):
                session.add(FlowResult(run_id=run.id, flow_index=flow, algorithm="reno",
                                       metrics={"goodput_bps": 4.7e6, "throughput_bps": 4.8e6,
                                                "rtt_mean_s": 0.06, "rtt_p95_s": 0.07,
                                                "rtt_min_s": 0.0404, "retransmits": 30,
                                                "bytes_received": 11_000_000}))  # fmt: skip
    print(f"stored {len(runs)} runs in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    client = TestClient(app)
    headers = {"Authorization": f"Bearer {token}"}
    timings: dict[str, list[float]] = {"report": [], "compare": []}
    for _ in range(REQUESTS):
        for name, path, params in (
            ("report", f"/v1/experiments/{experiment_id}/report", {}),
            ("compare", f"/v1/experiments/{experiment_id}/compare",
             {"metric": "utilization", "x": "topology.bottleneck.buffer",
              "by": "flows[*].algorithm"}),
        ):  # fmt: skip
            t = time.perf_counter()
            response = client.get(path, params=params, headers=headers)
            timings[name].append(time.perf_counter() - t)
            assert response.status_code == 200, response.text
    body = client.get(f"/v1/experiments/{experiment_id}/report", headers=headers).json()
    assert len(body["runs"]) == 1000 and len(body["groups"]) == 20
    for name, values in timings.items():
        figure(f"{name}_1000_runs_p50", statistics.median(values) * 1e3, "ms")
        figure(f"{name}_1000_runs_p95", p95(values) * 1e3, "ms", "<= 500")
    browse.run(figure)
    return 0


if __name__ == "__main__":
    sys.exit(main())
