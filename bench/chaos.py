"""Crashes and fuzzing, counted: the API SIGKILLed at random instants during matrix submissions
(PostgreSQL + Redis and the embedded default), a cancelled 10,000-run matrix against another
team's run, workers SIGKILLed during BPF and kernel-TCP runs, and the API fuzzed from its
OpenAPI document. It runs the suite's own chaos tests with more repetitions and prints what
they measured. Needs root (the runs are real).

    make bench-chaos     # 20 submissions per stack, 20 worker kills per runtime, 50 fuzz examples
    python -m bench.chaos --submissions 40 --worker-kills 40 --fuzz-examples 100
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ElementTree
from pathlib import Path
from typing import Any

from bench.figures import figure as emit

REPO_ROOT = Path(__file__).resolve().parent.parent
TESTS = [
    "tests/test_chaos.py",
    "tests/test_fuzz_api.py",
    "tests/test_worker.py::test_runs_killed_mid_run_end_done_on_retry_and_leave_nothing",
]


def figure(name: str, value: float | None, unit: str, target: str | None = None) -> None:
    emit("chaos", name, value, unit, target)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--submissions", type=int, default=20, help="API kills per stack")
    parser.add_argument("--worker-kills", type=int, default=20, help="per runtime (BPF, kernel)")
    parser.add_argument("--fuzz-examples", type=int, default=50, help="per API operation")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        print("bench-chaos needs root (real runs in network namespaces)", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="ccbench-bench-chaos-"))
    report, junit = work / "report.jsonl", work / "junit.xml"
    env = dict(os.environ, CCBENCH_CHAOS_REPORT=str(report),
               CCBENCH_CHAOS_SUBMISSIONS=str(args.submissions),
               CCBENCH_CHAOS_WORKER_KILLS=str(args.worker_kills),
               CCBENCH_FUZZ_EXAMPLES=str(args.fuzz_examples))  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={junit}",
         *[t for t in TESTS if (REPO_ROOT / t.split("::")[0]).exists()]],
        cwd=REPO_ROOT, env=env, check=False,
    )  # fmt: skip
    lines = (
        [json.loads(line) for line in report.read_text().splitlines()] if report.exists() else []
    )
    summarize(lines, ElementTree.parse(junit).getroot() if junit.exists() else None)
    return done.returncode


def summarize(lines: list[dict[str, Any]], junit: ElementTree.Element | None) -> None:
    kills = [line for line in lines if line["test"] == "api_kills"]
    for line in kills:
        print(f"# API kills on {line['stack']}: {line['tally']}")
    figure("api_kills_survived", sum(k["kills"] for k in kills), "kills")
    figure("runs_lost", sum(k["runs_expected"] - k["runs_stored"] for k in kills), "runs", "== 0")
    figure("runs_stuck", sum(k["runs_stuck"] for k in kills), "runs", "== 0")
    figure("runs_not_done", sum(k["runs_stored"] - k["runs_done"] for k in kills), "runs", "== 0")
    for line in lines:
        if line["test"] == "worker_kills":
            figure(f"worker_kills_{line['kind']}", line["kills"], "kills")
            figure(f"worker_kill_runs_done_{line['kind']}", line["runs_done"], "runs",
                   f"== {line['runs']}")  # fmt: skip
        if line["test"] == "worker_kill_leftovers":
            figure("worker_kill_leftovers", line["leftovers"], "items", "== 0")
        if line["test"] == "cancelled_matrix":
            figure("other_team_start_after_cancel", line["other_team_start_s"], "s", "< 2")
    fuzz = [line for line in lines if line["test"] == "fuzz"]
    figure("fuzz_requests", sum(f["requests"] for f in fuzz), "requests")
    figure("fuzz_server_errors", sum(f["server_errors"] for f in fuzz), "responses", "== 0")
    if junit is not None:
        suites = [junit, *junit.iter("testsuite")]
        failures = max(int(s.get("failures", 0)) + int(s.get("errors", 0)) for s in suites)
        figure("failed_tests", failures, "tests", "== 0")


if __name__ == "__main__":
    sys.exit(main())
