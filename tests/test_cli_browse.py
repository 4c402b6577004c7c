"""The browsing commands as a user runs them (`ccbench list` with the browser's filters,
`compare` across experiments and of one matrix, `annotate`, `pin`, `share`, `rerun`,
`bundle`, `tokens create --scope`) against a real API server on the test database, with id
prefixes wherever an id goes."""

from __future__ import annotations

import copy
import os
import subprocess
from collections.abc import Iterator
from datetime import date, timedelta
from pathlib import Path

import pytest
import yaml

from ccbench import teams
from ccbench.db.session import session_scope
from tests.processes import Api
from tests.services import free_port, run_cli
from tests.test_api import EXAMPLE, finish_runs_with, matrix


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Api]:
    env = {**os.environ, "CCBENCH_STATE_DIR": str(tmp_path / "api-state")}
    server = Api(free_port(), env, tmp_path / "api.log")
    yield server
    server.kill_hard()


def cli_env(tmp_path: Path, api: Api, token: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("CCBENCH_DATABASE_URL", "CCBENCH_BROKER_URL")}  # fmt: skip
    env.update(CCBENCH_STATE_DIR=str(tmp_path / "cli-state"), CCBENCH_API_URL=api.url,
               CCBENCH_TOKEN=token)  # fmt: skip
    return env


def ok(env: dict[str, str], *args: str) -> str:
    result = run_cli(env, *args)
    assert result.returncode == 0, (args, result.stdout, result.stderr)
    return result.stdout


def test_cli_browses_shares_compares_reruns_and_bundles(
    tmp_path: Path, api: Api, unique: str
) -> None:
    with session_scope() as session:
        team_a = teams.create_team(session, f"cli-a-{unique}")
        admin_a = teams.create_token(session, team_a, "cli")
        team_b = teams.create_team(session, f"cli-b-{unique}")
        admin_b = teams.create_token(session, team_b, "cli")
        name_a, name_b = team_a.name, team_b.name
    a, b = cli_env(tmp_path, api, admin_a), cli_env(tmp_path, api, admin_b)

    sweep = matrix(["reno", "cubic"], ["1bdp", "2bdp"], 1)
    sweep.update(name=f"sweep-{unique}", tags=["buffers"])
    (tmp_path / "sweep.yaml").write_text(yaml.safe_dump(sweep))
    sweep_id = ok(a, "submit", str(tmp_path / "sweep.yaml")).split()[1]
    finish_runs_with(sweep_id, lambda run: 0.9 if run.axis_values[
        "topology.bottleneck.buffer"] == "2bdp" else 0.7)  # fmt: skip
    other = copy.deepcopy(EXAMPLE)
    other.update(name=f"vegas-{unique}", tags=[])
    other["flows"] = [{"algorithm": "vegas"}, {"algorithm": "reno"}]
    (tmp_path / "other.yaml").write_text(yaml.safe_dump(other))
    other_id = ok(a, "submit", str(tmp_path / "other.yaml")).split()[1]

    # list: filters, sort, markers; ids shown as prefixes that every command takes.
    listed = run_cli(a, "list", "--text", unique, "--sort", "name")
    lines = listed.stdout.splitlines()
    assert lines[1].split()[:4] == [sweep_id[:8], f"sweep-{unique}", "done", "4"], lines
    assert lines[2].split()[:4] == [other_id[:8], f"vegas-{unique}", "queued", "1"], lines
    assert "4 done" in lines[1] and f"{name_a} " in lines[1] and "reno" in lines[1]
    assert " 0.8 " in lines[1]  # the median utilization of 0.7, 0.7, 0.9, 0.9
    assert listed.stderr.strip() == "1-2 of 2 experiment(s)"
    descending = ok(a, "list", "--text", unique, "--sort", "name", "--desc").splitlines()
    assert [line.split()[1] for line in descending[1:]] == [f"vegas-{unique}", f"sweep-{unique}"]
    vegas_only = ok(a, "list", "--algorithm", "vegas", "--text", unique)
    assert f"vegas-{unique}" in vegas_only and f"sweep-{unique}" not in vegas_only
    by_param = ok(a, "list", "--param", "topology.bottleneck.buffer=2bdp", "--text", unique)
    assert f"sweep-{unique}" in by_param and f"vegas-{unique}" not in by_param
    # Both statuses; a date includes its whole day (local time), a later one nothing.
    both = ok(a, "list", "--text", unique, "--status", "done", "--status", "queued")
    assert f"sweep-{unique}" in both and f"vegas-{unique}" in both
    today, tomorrow = date.today().isoformat(), (date.today() + timedelta(days=1)).isoformat()
    assert f"sweep-{unique}" in ok(a, "list", "--text", unique, "--until", today)
    assert f"sweep-{unique}" in ok(a, "list", "--text", unique, "--since", today)
    assert ok(a, "list", "--text", unique, "--since", tomorrow) == ""
    metric = ok(a, "list", "--text", unique, "--metric", "power", "--sort", "name")
    assert "power" in metric.splitlines()[0] and "utilization" not in metric.splitlines()[0]
    assert "status" in ok(a, "list", "--status", "done", "--json")
    bogus = run_cli(a, "list", "--metric", "bogus")
    assert bogus.returncode == 2 and "bogus: not an aggregate metric" in bogus.stderr
    when = run_cli(a, "list", "--since", "yesterday")
    assert when.returncode == 2 and "'yesterday' is neither a date" in when.stderr

    # annotate and pin, by prefix.
    annotated = ok(a, "annotate", sweep_id[:8], "--add-tag", "paper", "--notes", "for fig 3")
    assert "tags buffers, paper" in annotated and "for fig 3" in annotated
    ok(a, "pin", other_id[:8])
    assert ok(a, "list", "--pinned").splitlines()[1].split()[:2] == ["*", other_id[:8]]
    assert ok(a, "list", "--text", unique).splitlines()[1].split()[:2] == ["*", other_id[:8]]

    # share with B: B lists it marked shared, cannot cancel it, compares it with its own.
    shared = ok(a, "share", sweep_id[:8], "--team", name_b)
    assert f"shared read-only with {name_b}" in shared
    seen = ok(b, "list")
    [row] = [line for line in seen.splitlines() if f"sweep-{unique}" in line]
    assert f" {name_a} (shared) " in row, seen
    assert f"vegas-{unique}" not in seen
    assert f"sweep-{unique}" in ok(b, "list", "--access", "shared")
    assert f"sweep-{unique}" not in ok(b, "list", "--access", "own")
    refused = run_cli(b, "cancel", sweep_id[:8])
    assert refused.returncode == 1 and "shared with yours read-only" in refused.stderr
    single = copy.deepcopy(EXAMPLE)
    single.update(name=f"b-{unique}")
    single["topology"]["bottleneck"]["buffer"] = "2bdp"
    (tmp_path / "single.yaml").write_text(yaml.safe_dump(single))
    single_id = ok(b, "submit", str(tmp_path / "single.yaml")).split()[1]
    finish_runs_with(single_id, lambda run: 0.85)
    figure = str(tmp_path / "cmp.svg")
    compared = ok(b, "compare", sweep_id[:8], single_id[:8], "--metric", "utilization",
                  "--x", "topology.bottleneck.buffer", "--plot", figure)  # fmt: skip
    assert f"experiment = sweep-{unique} ({sweep_id[:8]})" in compared, compared
    assert "topology.bottleneck.buffer=2bdp: 0.9 ± 0 (n=2)" in compared
    assert "topology.bottleneck.buffer=2bdp: 0.85 ± 0 (n=1)" in compared
    assert f"(team {name_a} (shared)): 4 runs" in compared
    assert f"page: {api.url}/ui/compare?experiment={sweep_id}&experiment={single_id}" in compared
    drawn = (tmp_path / "cmp.svg").read_text()
    assert drawn.startswith("<?xml") and f"sweep-{unique} ({sweep_id[:8]})" in drawn
    # One experiment's matrix, as main's `compare EXPERIMENT --x AXIS --by AXIS` was: a series
    # per algorithm, its points the repetitions of each matrix point; or one of its points.
    matrix_view = ok(b, "compare", sweep_id[:6], "--metric", "utilization", "--x",
                     "topology.bottleneck.buffer", "--by", "flows[*].algorithm")  # fmt: skip
    assert "flows[*].algorithm = cubic" in matrix_view, matrix_view
    assert "topology.bottleneck.buffer=1bdp: 0.7 ± 0 (n=1)" in matrix_view
    one_point = ok(b, "compare", "--point", f"{sweep_id[:8]}:0", "--run", api_run_id(single_id)[:8],
                   "--metric", "utilization", "--x", "experiment")  # fmt: skip
    assert "(n=1)" in one_point and one_point.count("): 1 run\n") == 2, one_point
    per_flow = run_cli(b, "compare", sweep_id[:8], "--metric", "utilization", "--per-flow",
                       "--x", "flow")  # fmt: skip
    assert per_flow.returncode == 2 and "'utilization' is not a flow metric" in per_flow.stderr
    nothing = run_cli(b, "compare", "--metric", "utilization", "--x", "experiment")
    assert nothing.returncode == 2 and "give experiments" in nothing.stderr

    # rerun A's shared experiment into B, with an edit.
    rerun = ok(b, "rerun", sweep_id[:8], "--set", "repetitions=2")
    assert f"running {sweep_id} again" in rerun and "8 run(s) queued" in rerun
    bad = run_cli(b, "rerun", sweep_id[:8], "--set", "base.duration=20")
    assert bad.returncode == 1 and "base.duration" in bad.stderr and "no unit" in bad.stderr

    # bundle: downloaded by run id prefix, its checksums verify with sha256sum.
    run_id = api_run_id(sweep_id)
    bundled = ok(b, "bundle", run_id[:10], "-o", str(tmp_path / "run.tar.gz"))
    assert "sha256sum -c SHA256SUMS" in bundled
    (tmp_path / "out").mkdir()
    subprocess.run(["tar", "xzf", str(tmp_path / "run.tar.gz"), "-C", str(tmp_path / "out")],
                   check=True)  # fmt: skip
    checked = subprocess.run(["sha256sum", "-c", "SHA256SUMS"], cwd=tmp_path / "out" /
                             f"ccbench-run-{run_id}", capture_output=True, text=True)  # fmt: skip
    assert checked.returncode == 0 and "spec.json: OK" in checked.stdout, checked

    # tokens: a read token made with --scope read reads, but cannot submit.
    made = run_cli(a, "tokens", "create", "reader", "--scope", "read")
    assert made.returncode == 0 and "read token" in made.stderr, made.stderr
    reader = cli_env(tmp_path, api, made.stdout.strip())
    assert f"sweep-{unique}" in ok(reader, "list")
    denied = run_cli(reader, "submit", str(tmp_path / "other.yaml"))
    assert denied.returncode == 1 and "scope is read" in denied.stderr
    assert " read " in ok(a, "tokens", "list")


def api_run_id(experiment_id: str) -> str:
    from sqlalchemy import select

    from ccbench.db.models import Run

    with session_scope() as session:
        return str(session.scalars(select(Run.id).where(Run.experiment_id == experiment_id)
                                   .order_by(Run.order_index)).first())  # fmt: skip
