"""Orchestration overhead per run: everything `execute_run` spends beyond the experiment's own
duration (claim, sandbox and topology set-up, agent start, teardown, analysis, storage), for the
2-flow dumbbell of the example. Target <= 0.5 s (median; the spread is printed beside it).
Also the sandbox's own set-up and tear-down steps (provenance `sandbox_steps_s`) and how late
the latest flow started against the common start.

Runs the task body in this process against the embedded default database in a temporary state
directory, so broker latency is excluded (measured: ~70 ms per task for the embedded
SQLite broker, ~9 ms for Redis). Needs root and the built agents.

    make bench-orchestration            # 7 runs of 3 s
    python -m bench.orchestration --runs 10 --duration 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from bench.figures import figure as emit
from ccbench import rundir

REPO_ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = REPO_ROOT / "schemas" / "examples" / "dumbbell-reno-vs-cubic.yaml"


def figure(name: str, value: float | None, unit: str, target: str | None = None) -> None:
    emit("orchestration", name, value, unit, target)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=7)
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
    steps: dict[str, list[float]] = {}
    start_late: list[float] = []
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
            provenance, run_dir = dict(row.provenance or {}), Path(row.artifacts_dir or ".")
        if status != "done":
            print(f"run {i} ended {status}: {error}", file=sys.stderr)
            return 1
        overhead = wall - args.duration
        overheads.append(overhead)
        for name, value in timings.items():
            phases.setdefault(name, []).append(float(value))
        for name, value in (provenance.get("sandbox_steps_s") or {}).items():
            steps.setdefault(name, []).append(float(value))
        start_late.append(_latest_start(run_dir, len(spec.flows), provenance))
        print(
            f"run {i}: wall {wall:.3f} s, overhead {overhead:.3f} s, timings {timings}",
            file=sys.stderr,
            flush=True,
        )
    for name, values in sorted(phases.items()):
        figure(f"{name.removesuffix('_s')}_median_s", statistics.median(values), "s")
    for name, values in sorted(steps.items()):
        figure(f"sandbox_step_{name}_median_s", statistics.median(values), "s")
    figure("flow_start_late_max_s", max(start_late), "s")
    figure("overhead_per_run_min_s", min(overheads), "s")
    figure("overhead_per_run_max_s", max(overheads), "s")
    figure("overhead_per_run_median_s", statistics.median(overheads), "s", "<= 0.5")
    return 0


def _latest_start(run_dir: Path, flows: int, provenance: dict[str, Any]) -> float:
    """Seconds between the run's common start and the latest flow's own start (its sender's
    summary `start_ts`): how well the senders started together."""
    common = float(provenance["start_ts"])
    latest = common
    for i in range(flows):
        for line in (run_dir / rundir.sender_log(i)).read_text().splitlines():
            record = json.loads(line)
            if record.get("type") == "summary":
                latest = max(latest, float(record["start_ts"]))
    return latest - common


if __name__ == "__main__":
    sys.exit(main())
