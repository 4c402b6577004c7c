"""Scale-out: the wall time of one 12-run matrix (5 s runs, one reno flow at 10 Mbit/s) on one
worker "machine" and on three (each a network namespace with its own state directory, as in
tests/test_scale_out.py), against the same PostgreSQL, Redis and API. Needs root.

On this 2-core VM three workers share two cores: the runs themselves mostly wait (5 s of
emulated traffic costs a few % of a core), so the ratio shows how much of the per-run
set-up and tear-down (CPU-bound) the three workers overlap.

    make bench-scale
    python -m bench.scale --runs 12 --duration 5
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from bench.figures import figure as emit


def figure(name: str, value: float | None, unit: str, target: str | None = None) -> None:
    emit("scale", name, value, unit, target)


def wall_time(workers: int, runs: int, duration_s: float, work: Path) -> float:
    from tests.scaleout import Lab, matrix

    with Lab(work, workers=workers, tag=f"b{workers}") as lab, lab.client() as api:
        started = time.monotonic()
        made = api.post("/v1/experiments", json=matrix(runs, f"{duration_s:g}s"))
        made.raise_for_status()
        detail = lab.wait_final(made.json()["id"], timeout_s=runs * (duration_s + 30))
        wall = time.monotonic() - started
        counts = detail["status_counts"]
        if counts != {"done": runs}:
            raise SystemExit(f"{workers} worker(s): not every run finished: {counts}")
        print(f"# {workers} worker(s): {runs} runs in {wall:.1f} s", flush=True)
        return wall


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=12)
    parser.add_argument("--duration", type=float, default=5.0, help="seconds per run")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        print("bench-scale needs root (network namespaces)", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="ccbench-bench-scale-"))
    one = wall_time(1, args.runs, args.duration, work / "one")
    three = wall_time(3, args.runs, args.duration, work / "three")
    figure("matrix_wall_time_1_worker", one, "s")
    figure("matrix_wall_time_3_workers", three, "s")
    figure("speedup_3_workers", one / three, "ratio")
    figure("cores", os.cpu_count() or 0, "cores")
    return 0


if __name__ == "__main__":
    sys.exit(main())
