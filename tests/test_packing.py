"""Packing runs (workers/packing.py): the host's CPU budget and its ledger, the cost model, and
a real worker that runs several short runs at once within the budget, never more, records how
many ran beside each, and re-runs alone a run whose load-sensitive checks failed."""

from __future__ import annotations

import copy
import os
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.app import app
from ccbench.analysis.checks import LOAD_SENSITIVE_CHECKS
from ccbench.db.models import Run
from ccbench.db.session import session_scope
from schemas import ExperimentSpec
from tests.hoststate import HostState
from tests.processes import Worker
from tests.services import cancel_leftover_runs
from workers import packing


def test_runs_fit_the_budget_in_the_order_they_asked(tmp_path: Path) -> None:
    ledger = packing.PackingLedger(tmp_path / "packing.json")
    t = time.time()
    assert ledger.try_admit("a", 0.4, 1.0, exclusive=False, asked_at=t)
    assert ledger.try_admit("b", 0.4, 1.0, exclusive=False, asked_at=t + 1)
    # 0.4 + 0.4 + 0.4 > 1.0: c waits, and d (cheaper, later) may not pass it.
    assert not ledger.try_admit("c", 0.4, 1.0, exclusive=False, asked_at=t + 2)
    assert not ledger.try_admit("d", 0.1, 1.0, exclusive=False, asked_at=t + 3)
    admission_a = packing.Admission(ledger, "a", 0.4, 1.0, False, t, t)
    assert admission_a.beside() == ["b"]
    admission_a.release()
    assert ledger.try_admit("c", 0.4, 1.0, exclusive=False, asked_at=t + 2)
    assert ledger.try_admit("d", 0.1, 1.0, exclusive=False, asked_at=t + 3)
    holders = ledger_entries(ledger)["holders"]
    assert sum(h["cost"] for h in holders.values()) == pytest.approx(0.9)
    assert sorted(h["run"] for h in holders.values()) == ["b", "c", "d"]
    # b saw a leave and c and d come: all three ran beside it at some moment.
    assert packing.Admission(ledger, "b", 0.4, 1.0, False, t, t).beside() == ["a", "c", "d"]


def test_a_costly_run_runs_alone_and_an_exclusive_one_on_an_empty_host(tmp_path: Path) -> None:
    ledger = packing.PackingLedger(tmp_path / "packing.json")
    t = time.time()
    assert ledger.try_admit("big", 3.0, 1.0, exclusive=False, asked_at=t)  # alone: admitted
    assert not ledger.try_admit("small", 0.1, 1.0, exclusive=False, asked_at=t + 1)
    packing.Admission(ledger, "big", 3.0, 1.0, False, t, t).release()
    assert ledger.try_admit("small", 0.1, 1.0, exclusive=False, asked_at=t + 1)
    assert not ledger.try_admit("rerun", 0.1, 1.0, exclusive=True, asked_at=t + 2)
    packing.Admission(ledger, "small", 0.1, 1.0, False, t, t).release()
    assert ledger.try_admit("rerun", 0.1, 1.0, exclusive=True, asked_at=t + 2)
    assert not ledger.try_admit("next", 0.1, 1.0, exclusive=False, asked_at=t + 3)


def test_a_dead_process_holds_no_budget(tmp_path: Path) -> None:
    """A pool process killed while it held the budget (or waited for it) leaves no entry."""
    path = tmp_path / "packing.json"
    child = os.fork()
    if child == 0:  # pragma: no cover - the child's exit status says how it went
        ok = packing.PackingLedger(path).try_admit("dead", 1.0, 1.0, False, time.time())
        os._exit(0 if ok else 1)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    ledger = packing.PackingLedger(path)
    assert [h["run"] for h in ledger_entries(ledger)["holders"].values()] == ["dead"]
    assert ledger.try_admit("alive", 1.0, 1.0, exclusive=False, asked_at=time.time())
    assert [h["run"] for h in ledger_entries(ledger)["holders"].values()] == ["alive"]


def test_a_run_that_finds_no_room_in_time_gives_up_its_place(tmp_path: Path) -> None:
    ledger = packing.PackingLedger(tmp_path / "packing.json")
    assert ledger.admit("a", 1.0, 1.0, exclusive=False, wait_s=0) is not None
    assert ledger.admit("b", 0.5, 1.0, exclusive=False, wait_s=0.3, poll_s=0.05) is None
    assert ledger_entries(ledger)["waiting"] == {}


def test_a_run_no_longer_wanted_gives_up_its_place_when_next_asked(tmp_path: Path) -> None:
    ledger = packing.ledger_at(tmp_path / "packing.json")
    assert ledger.admit("a", 1.0, 1.0, exclusive=False, wait_s=0) is not None
    asked: list[float] = []

    def still_wanted() -> bool:
        asked.append(time.monotonic())
        return len(asked) < 3

    gave_up = ledger.admit("b", 0.5, 1.0, exclusive=False, wait_s=600, poll_s=0.01,
                           still_wanted=still_wanted, ask_every_s=0.05)  # fmt: skip
    assert gave_up is None and len(asked) == 3
    assert ledger_entries(ledger)["waiting"] == {}  # nobody waits behind it any more


def test_a_wait_that_fails_leaves_no_place_in_the_queue(tmp_path: Path) -> None:
    ledger = packing.ledger_at(tmp_path / "packing.json")
    assert ledger.admit("a", 1.0, 1.0, exclusive=False, wait_s=0) is not None

    def broken() -> bool:
        raise RuntimeError("the database is gone")

    with pytest.raises(RuntimeError, match="database is gone"):
        ledger.admit("b", 0.5, 1.0, exclusive=False, wait_s=600, poll_s=0.01,
                     still_wanted=broken, ask_every_s=0.0)  # fmt: skip
    assert ledger_entries(ledger)["waiting"] == {}


@pytest.mark.services
def test_a_run_waiting_for_room_is_cancelled_with_its_experiment(
    tmp_path: Path, client: TestClient, team_token: tuple[str, str]
) -> None:
    """A queued run waits for the host's budget (another run holds all of it); its experiment
    is cancelled meanwhile (the API cancels its queued runs at once): the wait ends within a
    second or so, the run no longer queued, not after pack_wait_s with its place held."""
    from ccbench.settings import Settings
    from workers import lifecycle

    cancel_leftover_runs()
    settings = Settings(pack_ledger=tmp_path / "packing.json", pack_wait_s=120)
    ledger = packing.host_ledger(settings)
    holder = ledger.admit("other", 99.0, 1.0, exclusive=True, wait_s=0)
    assert holder is not None
    _, token = team_token
    headers = {"Authorization": f"Bearer {token}"}
    [run_id] = submit(client, token, submission(RATE, DURATION, FLOWS, "packing-cancel"))
    with session_scope() as session:
        experiment_id = session.get(Run, run_id).experiment_id  # type: ignore[union-attr]
    outcome: list[str] = []

    def wait_for_room() -> None:
        outcome.append(str(lifecycle.admit(run_id, settings)))

    waiting = threading.Thread(target=wait_for_room)
    waiting.start()
    try:
        deadline = time.monotonic() + 30
        while not ledger_entries(ledger).get("waiting"):
            assert time.monotonic() < deadline, "the run never asked for room"
            time.sleep(0.05)
        cancelled = client.post(f"/v1/experiments/{experiment_id}/cancel", headers=headers)
        assert cancelled.is_success, cancelled.text
        waiting.join(timeout=60)  # pack_wait_s is 120 s: ended by the cancellation
        assert not waiting.is_alive()
    finally:
        holder.release()
        waiting.join(timeout=60)
    assert outcome == ["not queued"]
    with session_scope() as session:
        assert session.get(Run, run_id).status == "cancelled"  # type: ignore[union-attr]
    assert ledger_entries(ledger)["waiting"] == {}


def test_the_cost_grows_with_the_rates_and_the_kind_of_flows() -> None:
    def cost(rate: str, flow: dict[str, Any], duration: str = "20s") -> float:
        return packing.predicted_cost_cores(spec(rate, duration, [flow, flow]))

    kernel = {"algorithm": "reno"}
    assert cost("10Mbit", kernel) < cost("20Mbit", kernel) < cost("100Mbit", kernel)
    # The fixed part is spread over the duration.
    assert cost("10Mbit", kernel, "60s") < cost("10Mbit", kernel, "20s")
    userspace = {"algorithm": "reno", "agent": "userspace"}
    assert cost("20Mbit", kernel) < cost("20Mbit", userspace)
    assert all(v > 0 for v in packing.RUN_COSTS.agent_us_per_packet.values())
    assert all(v > 0 for v in packing.RUN_COSTS.emulator_us_per_packet.values())


def test_each_flow_costs_its_own_share_whatever_its_rate() -> None:
    """Fifty userspace flows at 1.5 Mbit/s (seed 004's Fig. 2) cost far more than two: their
    agents' timers, not their packets (the bottleneck's rate is the same)."""
    userspace = {"algorithm": "reno", "agent": "userspace"}
    two = packing.predicted_cost_cores(spec("1.5Mbit", "120s", [userspace] * 2))
    fifty = packing.predicted_cost_cores(spec("1.5Mbit", "120s", [userspace] * 50))
    per_flow = packing.RUN_COSTS.flow_cores["userspace"]
    assert per_flow > 0 and all(v > 0 for v in packing.RUN_COSTS.flow_cores.values())
    assert fifty - two == pytest.approx(48 * per_flow)


def ledger_entries(ledger: packing.PackingLedger) -> dict[str, Any]:
    with ledger.file.open() as entries:
        return copy.deepcopy(entries)


def spec(rate: str, duration: str, flows: list[dict[str, Any]]) -> ExperimentSpec:
    return ExperimentSpec.model_validate(submission(rate, duration, flows, "packing"))


def submission(rate: str, duration: str, flows: list[dict[str, Any]], name: str) -> dict[str, Any]:
    return {
        "name": name,
        "topology": {
            "kind": "dumbbell",
            "bottleneck": {"rate": rate, "delay": "5ms", "buffer": "1bdp"},
        },
        "flows": flows,
        "duration": duration,
        "measurement": {"skip_start": "0.5s"},
    }


# --- a real worker --------------------------------------------------------------------------

RUNS = 4
FLOWS = [{"algorithm": "reno"}, {"algorithm": "cubic"}]
RATE, DURATION = "2Mbit", "3s"


@pytest.fixture
def client() -> TestClient:
    return TestClient(app)


def submit(client: TestClient, token: str, body: dict[str, Any]) -> list[str]:
    headers = {"Authorization": f"Bearer {token}"}
    created = client.post("/v1/experiments", json=body, headers=headers)
    assert created.status_code == 201, created.text
    detail = client.get(f"/v1/experiments/{created.json()['id']}", headers=headers).json()
    return [r["id"] for r in detail["runs"]]


def wait_final(run_ids: list[str], timeout_s: float) -> dict[str, Run]:
    deadline = time.monotonic() + timeout_s
    while True:
        with session_scope() as session:
            rows = {r.id: r for r in session.query(Run).filter(Run.id.in_(run_ids))}
            for row in rows.values():
                session.expunge(row)
        if all(r.status in ("done", "failed", "cancelled") for r in rows.values()):
            return rows
        assert time.monotonic() < deadline, {r.id: r.status for r in rows.values()}
        time.sleep(0.3)


@pytest.fixture
def packing_worker(tmp_path: Path) -> Iterator[tuple[Worker, float, float]]:
    """A worker of 4 processes whose budget holds two of this test's runs but not three."""
    cost = packing.predicted_cost_cores(spec(RATE, DURATION, FLOWS))
    cpus = os.cpu_count() or 1
    budget = 2.5 * cost
    cancel_leftover_runs()
    env = {**os.environ, "CCBENCH_PACK_CPU_SHARE": repr(budget / cpus),
           "CCBENCH_PACK_LEDGER": str(tmp_path / "packing.json")}  # fmt: skip
    worker = Worker(tmp_path / "worker.log", env, concurrency=4)
    yield worker, cost, budget
    worker.stop()


@pytest.mark.root
@pytest.mark.services
def test_a_worker_packs_runs_within_its_budget_and_records_who_ran_beside(
    packing_worker: tuple[Worker, float, float],
    client: TestClient,
    team_token: tuple[str, str],
) -> None:
    """Four 3 s runs on a worker of four processes whose budget holds two at once: two run
    at a time (their recorded intervals overlap), never three (the costs of the runs running
    at any instant stay within the budget), and each run records the runs beside it."""
    worker, cost, budget = packing_worker
    host_state = HostState.capture()
    _, token = team_token
    body = {
        "kind": "matrix",
        "name": "packing",
        "base": submission(RATE, DURATION, FLOWS, "packing"),
        "axes": [{"path": "topology.bottleneck.rate", "values": [RATE]}],
        "repetitions": RUNS,
    }
    run_ids = submit(client, token, body)
    rows = wait_final(run_ids, timeout_s=120)
    assert {r.status for r in rows.values()} == {"done"}, {r.id: r.error for r in rows.values()}
    intervals: dict[str, tuple[float, float]] = {}
    for row in rows.values():
        record = row.provenance["packing"]
        assert record["cost_cores"] == pytest.approx(cost, rel=1e-3)
        assert record["budget_cores"] == pytest.approx(budget, rel=1e-3)
        assert row.finished_at is not None
        intervals[row.id] = (record["admitted_at"], record["released_at"])
    # At each moment a run was admitted, the runs then running (by their recorded intervals,
    # which lie inside the time they held the budget) cost no more than the budget.
    peak = 0
    for start, _ in intervals.values():
        running = [r for r, (a, b) in intervals.items() if a <= start < b]
        peak = max(peak, len(running))
        assert len(running) * cost <= budget + 1e-9, running
    assert peak == 2, intervals  # they overlapped: packed, two at a time
    for row in rows.values():
        a, b = intervals[row.id]
        overlapping = {r for r, (c, d) in intervals.items() if r != row.id and c < b and a < d}
        beside = set(row.provenance["packing"]["beside"])
        assert overlapping <= beside, (row.id, overlapping, beside)
        assert row.runs_beside == len(beside) == row.provenance["packing"]["runs_beside"]
        assert row.load_reruns == 0 or row.provenance["packing"]["load_reruns"]
    assert sum(r.runs_beside or 0 for r in rows.values()) >= 2
    # The API's run output carries it.
    headers = {"Authorization": f"Bearer {token}"}
    some = next(iter(rows.values()))
    shown = client.get(f"/v1/runs/{some.id}", headers=headers).json()
    assert shown["runs_beside"] == some.runs_beside and shown["load_reruns"] == some.load_reruns
    assert HostState.capture().leftovers_since(host_state) == []
    assert worker.proc.poll() is None


@pytest.mark.root
@pytest.mark.services
def test_a_run_whose_load_checks_fail_runs_again_alone_once(
    tmp_path: Path, client: TestClient, team_token: tuple[str, str]
) -> None:
    """CPU burners of the idle scheduling class keep both CPUs busy while a run runs: its
    host_cpu check fails (load), so it is queued again and runs alone (exclusive); the burners
    still run, the re-run fails the check again, and with one re-run allowed the run ends
    done with the failed check in its report and both attempts' records in its provenance."""
    cancel_leftover_runs()
    env = {**os.environ, "CCBENCH_PACK_LOAD_RERUNS": "1",
           "CCBENCH_PACK_LEDGER": str(tmp_path / "packing.json")}  # fmt: skip
    burners = [
        subprocess.Popen(["chrt", "--idle", "0", "sh", "-c", "while :; do :; done"])
        for _ in range(os.cpu_count() or 1)
    ]
    worker = Worker(tmp_path / "worker.log", env, concurrency=2)
    try:
        _, token = team_token
        [run_id] = submit(client, token, submission(RATE, DURATION, FLOWS, "packing-rerun"))
        row = wait_final([run_id], timeout_s=90)[run_id]
    finally:
        for burner in burners:
            burner.kill()
            burner.wait()
        worker.stop()
    assert row.status == "done", row.error
    assert row.attempt == 2 and row.load_reruns == 1
    [earlier] = row.provenance["packing"]["load_reruns"]
    assert earlier["attempt"] == 1 and "host_cpu" in earlier["checks"]
    assert set(earlier["checks"]) <= LOAD_SENSITIVE_CHECKS
    assert row.provenance["packing"]["exclusive"] is True
    failed = {c["name"] for c in row.aggregate["checks"] if not c["ok"]}
    assert "host_cpu" in failed  # bounded: the second attempt's result stands
