"""Orchestration overhead per run: everything `execute_run` spends beyond the experiment's own
duration (claim, sandbox and topology set-up, agent start, teardown, analysis, storage), for the
2-flow dumbbell of the example. Target <= 2 s.

Runs the task body in this process against the embedded default database in a temporary state
directory, so broker latency is excluded (measured: ~70 ms per task for the embedded
SQLite broker, ~9 ms for Redis). Needs root and the built agents.

    make bench-orchestration            # 5 runs of 3 s
    python -m bench.orchestration --runs 10 --duration 5
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import yaml

from bench.figures import figure as emit

REPO_ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = REPO_ROOT / "schemas" / "examples" / "dumbbell-reno-vs-cubic.yaml"


def figure(name: str, value: float | None, unit: str, target: str | None = None) -> None:
    emit("orchestration", name, value, unit, target)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--duration", type=float, default=3.0, help="experiment seconds per run")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        print("bench-orchestration needs root (network namespaces)", file=sys.stderr)
        return 2
    state = tempfile.mkdtemp(prefix="ccbench-bench-")
    os.environ["CCBENCH_STATE_DIR"] = state
    os.environ.pop("CCBENCH_DATABASE_URL", None)

    from ccbench.db.migrate import upgrade
    from ccbench.db.models import Run, Team
    from ccbench.db.session import session_scope
    from ccbench.experiments import create_experiment
    from ccbench.settings import get_settings
    from ccbench.teams import create_team
    from schemas import ExperimentSpec
    from workers.lifecycle import execute

    get_settings.cache_clear()
    upgrade(get_settings().effective_database_url)
    raw = yaml.safe_load(EXAMPLE.read_text())
    raw.update(duration=f"{args.duration:g}s", measurement={"skip_start": "0s"})
    spec = ExperimentSpec.model_validate(raw)
    with session_scope() as session:
        team_id = create_team(session, "bench").id
    overheads: list[float] = []
    phases: dict[str, list[float]] = {}
    for i in range(args.runs):
        with session_scope() as session:
            team = session.get(Team, team_id)
            assert team is not None
            _, [run] = create_experiment(session, team, spec, run_limit=1)
            run_id = run.id
        started = time.monotonic()
        status = execute(run_id, worker_id="bench")
        wall = time.monotonic() - started
        with session_scope() as session:
            row = session.get(Run, run_id)
            assert row is not None
            timings, error = dict(row.timings), row.error
        if status != "done":
            print(f"run {i} ended {status}: {error}", file=sys.stderr)
            return 1
        overhead = wall - args.duration
        overheads.append(overhead)
        for name, value in timings.items():
            phases.setdefault(name, []).append(float(value))
        print(
            f"run {i}: wall {wall:.3f} s, overhead {overhead:.3f} s, timings {timings}",
            file=sys.stderr,
            flush=True,
        )
    for name, values in sorted(phases.items()):
        figure(f"{name.removesuffix('_s')}_median_s", statistics.median(values), "s")
    figure("overhead_per_run_max_s", max(overheads), "s")
    figure("overhead_per_run_median_s", statistics.median(overheads), "s", "<= 2")
    return 0


if __name__ == "__main__":
    sys.exit(main())
