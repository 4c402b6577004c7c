"""Campaigns against the real databases (PostgreSQL and the embedded SQLite default), with an
injected clock: occurrences fire exactly once (also with concurrent ticks), catch-up policies,
pause/resume/edit, a host gone at an occurrence, group meshes; the API's refusals; the report
and its exports; and host reservations, which keep two runs off one host."""

from __future__ import annotations

import io
import os
import re
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest
import yaml
from fastapi.testclient import TestClient
from sqlalchemy import delete, func, select, update

from api.app import app
from ccbench import teams, workerpool
from ccbench.campaigns import manage
from ccbench.campaigns.firing import GRACE_S, tick
from ccbench.db.migrate import upgrade
from ccbench.db.models import (
    Campaign,
    CampaignOccurrence,
    Experiment,
    Host,
    HostGroup,
    HostGroupMember,
    HostReservation,
    Run,
    Team,
)
from ccbench.db.runs import transition
from ccbench.db.session import session_scope
from ccbench.dispatch import dispatch
from ccbench.reaper import reap_stale_runs
from ccbench.runstate import RunStatus
from ccbench.settings import get_settings
from schemas.campaign import CampaignSpec
from tests.processes import Api
from tests.services import cancel_leftover_runs, free_port, run_cli

pytestmark = pytest.mark.services

# A Monday noon, years ahead: creation's "not in the past" checks pass whatever the real clock.
T0 = datetime(2031, 1, 6, 12, 0, tzinfo=UTC)
EXPERIMENT: dict[str, Any] = {
    "name": "path",
    "testbed": {"kind": "hosts"},
    "topology": {"kind": "path", "rate": "100Mbit"},
    "flows": [{"algorithm": "reno"}],
    "duration": "5s",
}


@pytest.fixture(params=["postgresql", "sqlite"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    saved = os.environ.get("CCBENCH_DATABASE_URL")
    if request.param == "sqlite":
        os.environ["CCBENCH_DATABASE_URL"] = f"sqlite:///{tmp_path / 'campaigns.sqlite'}"
        get_settings.cache_clear()
        upgrade(get_settings().effective_database_url)
    yield request.param
    if request.param == "postgresql":
        cancel_leftover_runs()  # nothing of ours waits for another test's workers
    if saved is None:
        os.environ.pop("CCBENCH_DATABASE_URL", None)
    else:
        os.environ["CCBENCH_DATABASE_URL"] = saved
    get_settings.cache_clear()


@pytest.fixture
def team(database: str, unique: str) -> Iterator[str]:
    """A team with hosts h1-h3 (site a, b, b) in a group `lab`; its id. Its campaigns are
    stopped afterwards: the next test's ticks see only its own."""
    team_id = _team_with_hosts(unique)
    yield team_id
    with session_scope() as session:
        session.execute(update(Campaign).where(Campaign.team_id == team_id)
                        .values(state="stopped", next_due_at=None))  # fmt: skip


def _team_with_hosts(unique: str) -> str:
    with session_scope() as session:
        made = teams.create_team(session, f"camp-{unique}")
        group = HostGroup(team_id=made.id, name="lab")
        session.add(group)
        for name, site in (("h1", "a"), ("h2", "b"), ("h3", "b")):
            host = Host(team_id=made.id, name=name, address="127.0.0.1", labels={"site": site})
            session.add(host)
            session.flush()
            session.add(HostGroupMember(group_id=group.id, host_id=host.id))
        return made.id


def campaign(team_id: str, **fields: Any) -> str:
    document = {"name": "c", "experiment": EXPERIMENT, "hosts": {"pairs": [["h1", "h2"]]},
                "schedule": {"kind": "interval", "every": "1h"}, "start": T0.isoformat(),
                **fields}  # fmt: skip
    with session_scope() as session:
        owner = session.get(Team, team_id)
        assert owner is not None
        return manage.create_campaign(session, owner, CampaignSpec.model_validate(document)).id


def state(campaign_id: str) -> Campaign:
    with session_scope() as session:
        row = session.get(Campaign, campaign_id)
        assert row is not None
        session.expunge(row)
        return row


def occurrences(campaign_id: str) -> list[tuple[datetime, str]]:
    with session_scope() as session:
        return [(o.due_at, o.state) for o in session.scalars(
            select(CampaignOccurrence).where(CampaignOccurrence.campaign_id == campaign_id)
            .order_by(CampaignOccurrence.due_at))]  # fmt: skip


def experiments_of(campaign_id: str) -> list[Experiment]:
    with session_scope() as session:
        found = list(session.scalars(
            select(Experiment).where(Experiment.campaign_id == campaign_id)
            .order_by(Experiment.created_at, Experiment.path)))  # fmt: skip
        session.expunge_all()
        return found


def test_each_occurrence_fires_once_at_its_time(team: str) -> None:
    made = campaign(team, count=3, repetitions=2)
    assert state(made).next_due_at == T0
    assert tick(T0 - timedelta(seconds=1)).fired == []  # not yet
    assert len(tick(T0).fired) == 1
    assert tick(T0).fired == [] and tick(T0 + timedelta(minutes=30)).fired == []  # once
    assert len(tick(T0 + timedelta(hours=1, seconds=5)).fired) == 1  # a few seconds late
    assert len(tick(T0 + timedelta(hours=2)).fired) == 1
    assert occurrences(made) == [(T0 + timedelta(hours=h), "fired") for h in range(3)]
    row = state(made)
    assert (row.state, row.next_due_at, row.fired) == ("finished", None, 3)
    assert tick(T0 + timedelta(hours=3)).fired == []
    # Each occurrence is an ordinary experiment of the path, with its repetitions.
    found = experiments_of(made)
    assert [(e.path, e.run_count, e.status) for e in found] == [("h1->h2", 2, "queued")] * 3
    with session_scope() as session:
        runs = list(session.scalars(select(Run).where(Run.experiment_id == found[0].id)))
        assert {r.spec["flows"][0]["src"] for r in runs} == {"h1"}
        assert len({r.seed for r in runs}) == 2  # each repetition its own recorded seed


def test_concurrent_ticks_fire_an_occurrence_once(team: str) -> None:
    made = campaign(team, hosts={"group": "lab", "mesh": True})
    results: list[int] = []
    errors: list[BaseException] = []

    def racer() -> None:
        try:
            results.append(len(tick(T0 + timedelta(seconds=1)).fired))
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=racer) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and sorted(results) == [0, 0, 0, 0, 0, 1], (errors, results)
    assert occurrences(made) == [(T0, "fired")]
    assert sorted(e.path for e in experiments_of(made)) == [
        "h1->h2", "h1->h3", "h2->h1", "h2->h3", "h3->h1", "h3->h2"]  # fmt: skip


def test_missed_occurrences_follow_the_catch_up_policy_never_a_burst(team: str) -> None:
    every = {"kind": "interval", "every": "10min"}
    skip = campaign(team, schedule=every)
    once = campaign(team, schedule=every, catch_up="run_once")
    assert len(tick(T0).fired) == 2
    # Every scheduler was down for an hour: six instants passed, the last 5 minutes ago.
    late = T0 + timedelta(hours=1, minutes=5)
    result = tick(late)
    assert len(result.fired) == 1 and result.missed == 6 + 5
    assert [s for _, s in occurrences(skip)] == ["fired"] + ["missed"] * 6
    assert [s for _, s in occurrences(once)] == ["fired"] + ["missed"] * 5 + ["fired"]
    assert occurrences(once)[-1][0] == T0 + timedelta(hours=1)  # the latest instant, once
    assert len(experiments_of(once)) == 2 and len(experiments_of(skip)) == 1
    assert state(skip).next_due_at == state(once).next_due_at == T0 + timedelta(minutes=70)
    # Within the grace period an instant is on time, not missed.
    on_time = T0 + timedelta(minutes=70, seconds=GRACE_S - 1)
    assert len(tick(on_time).fired) == 2


def test_pause_resume_and_edit_take_effect_from_now(team: str) -> None:
    made = campaign(team, schedule={"kind": "interval", "every": "10min"})
    assert len(tick(T0).fired) == 1
    with session_scope() as session:
        row = session.get(Campaign, made)
        assert row is not None
        manage.pause(row)
    assert tick(T0 + timedelta(minutes=30)).fired == []
    with session_scope() as session:
        row = session.get(Campaign, made)
        assert row is not None
        manage.resume(row, now=T0 + timedelta(minutes=35))
    # The instants passed while paused were not run nor recorded as missed.
    assert state(made).next_due_at == T0 + timedelta(minutes=40)
    assert len(tick(T0 + timedelta(minutes=40)).fired) == 1
    assert [s for _, s in occurrences(made)] == ["fired", "fired"]
    with session_scope() as session:  # a cron schedule from now on
        row = session.get(Campaign, made)
        assert row is not None
        manage.reschedule(session, row, {"schedule": {"kind": "cron", "expression": "0 15 * * *"}},
                          now=T0 + timedelta(minutes=41))  # fmt: skip
    assert state(made).next_due_at == T0.replace(hour=15)
    with session_scope() as session:
        row = session.get(Campaign, made)
        assert row is not None
        manage.stop(row)
    assert tick(T0 + timedelta(days=2)).fired == [] and state(made).state == "stopped"


def test_a_host_gone_at_an_occurrence_fails_it_by_name_and_the_campaign_goes_on(
    team: str,
) -> None:
    made = campaign(team, hosts={"pairs": [["h1", "h2"], ["h1", "h3"]]})
    assert len(tick(T0).fired) == 1
    with session_scope() as session:
        session.execute(delete(Host).where(Host.team_id == team, Host.name == "h3"))
    result = tick(T0 + timedelta(hours=1))
    assert result.fired == [] and result.failed == 1
    with session_scope() as session:
        failed = session.scalars(select(CampaignOccurrence).where(
            CampaignOccurrence.campaign_id == made,
            CampaignOccurrence.state == "failed")).one()  # fmt: skip
        assert failed.error is not None and "h3" in failed.error, failed.error
    row = state(made)
    assert (row.state, row.failed, row.next_due_at) == ("active", 1, T0 + timedelta(hours=2))
    assert len(experiments_of(made)) == 2  # nothing of the failed occurrence was stored


def test_a_group_mesh_is_read_at_each_occurrence(team: str) -> None:
    made = campaign(team, hosts={"labels": {"site": "b"}, "mesh": True})
    tick(T0)
    assert sorted(e.path for e in experiments_of(made)) == ["h2->h3", "h3->h2"]
    with session_scope() as session:
        session.add(Host(team_id=team, name="h4", address="127.0.0.1", labels={"site": "b"}))
    tick(T0 + timedelta(hours=1))
    assert len(experiments_of(made)) == 2 + 6


def test_random_schedule_fires_its_count_per_day_inside_its_windows(team: str) -> None:
    schedule = {"kind": "random", "per_day": 3, "timezone": "Europe/Paris",
                "windows": [{"start": "09:00", "end": "12:00"}]}  # fmt: skip
    start = datetime(2031, 1, 6, tzinfo=UTC)
    made = campaign(team, schedule=schedule, start=start.isoformat(), seed=11)
    now = start
    while now < start + timedelta(days=2):
        tick(now)
        now += timedelta(minutes=1)
    fired = occurrences(made)
    assert [s for _, s in fired] == ["fired"] * 6
    # Paris is UTC+1 in January: 09:00-12:00 local is 08:00-11:00 UTC.
    assert all(8 <= at.hour < 11 for at, _ in fired), fired
    assert len({at.time() for at, _ in fired}) == 6  # never the same times of day twice


def api() -> TestClient:
    return TestClient(app)


def token_of(team_id: str) -> dict[str, str]:
    with session_scope() as session:
        owner = session.get(Team, team_id)
        assert owner is not None
        return {"Authorization": f"Bearer {teams.create_token(session, owner, 'campaigns')}"}


@pytest.mark.parametrize(
    ("change", "field", "reason"),
    [
        ({"schedule": {"kind": "cron", "expression": "* * 32 * *"}}, "schedule.cron.expression",
         "not a cron"),
        ({"schedule": {"kind": "random", "per_day": 1,
                       "windows": [{"start": "08:00", "end": "08:00"}]}},
         "schedule.random.windows.0", "zero length"),
        ({"schedule": {"kind": "interval", "every": "3s"}}, "schedule.every",
         "shorter than the experiment's runs"),
        ({"start": "2031-02-01T00:00:00Z", "stop": "2031-01-01T00:00:00Z"}, "stop", "after start"),
        ({"hosts": {"pairs": [["h1", "nowhere"]]}}, "hosts.pairs", "nowhere"),
        ({"hosts": {"labels": {"site": "mars"}, "mesh": True}}, "hosts.labels", "no path"),
        ({"hosts": {"group": "nope", "mesh": True}}, "hosts.group", "no such host group"),
        ({"experiment": {**EXPERIMENT, "flows": [{"algorithm": "warp"}]}},
         "experiment.flows.0.algorithm", "should be 'reno'"),
    ],
)  # fmt: skip
def test_bad_campaigns_are_refused_naming_the_field_and_nothing_is_stored(
    team: str, change: dict[str, Any], field: str, reason: str
) -> None:
    headers = token_of(team)
    body = {"name": "bad", "experiment": EXPERIMENT, "hosts": {"pairs": [["h1", "h2"]]},
            "schedule": {"kind": "interval", "every": "1h"}, **change}  # fmt: skip
    refused = api().post("/v1/campaigns", json=body, headers=headers)
    assert refused.status_code == 422, refused.text
    errors = refused.json()["errors"]
    assert any(e["field"] == field and reason in e["reason"] for e in errors), errors
    assert api().get("/v1/campaigns", headers=headers).json()["total"] == 0


def test_the_api_creates_lists_edits_and_stops_a_campaign(team: str) -> None:
    headers = token_of(team)
    body = {"name": "api", "experiment": EXPERIMENT, "hosts": {"pairs": [["h1", "h2"]]},
            "schedule": {"kind": "cron", "expression": "0 */6 * * *"}, "count": 4}  # fmt: skip
    made = api().post("/v1/campaigns", json=body, headers=headers)
    assert made.status_code == 201, made.text
    campaign_id = made.json()["id"]
    assert made.headers["location"] == f"/v1/campaigns/{campaign_id}"
    shown = made.json()
    assert shown["state"] == "active" and len(shown["upcoming"]) == 4  # the count's four
    upcoming = [datetime.fromisoformat(at) for at in shown["upcoming"]]
    gaps = {b - a for a, b in zip(upcoming, upcoming[1:], strict=False)}
    assert gaps == {timedelta(hours=6)}
    listed = api().get("/v1/campaigns?state=active", headers=headers).json()
    assert [c["id"] for c in listed["items"]] == [campaign_id]
    assert api().get("/v1/campaigns?state=bogus", headers=headers).status_code == 422
    edited = api().patch(f"/v1/campaigns/{campaign_id}", headers=headers,
                         json={"schedule": {"kind": "interval", "every": "1d"}})  # fmt: skip
    assert edited.status_code == 200, edited.text
    assert edited.json()["spec"]["schedule"]["every"] == 86400.0
    bad_edit = api().patch(f"/v1/campaigns/{campaign_id}", headers=headers,
                           json={"schedule": {"kind": "interval", "every": "1s"}})  # fmt: skip
    assert bad_edit.status_code == 422 and bad_edit.json()["errors"][0]["field"] == "schedule.every"
    assert api().post(f"/v1/campaigns/{campaign_id}/resume", headers=headers).status_code == 409
    assert (
        api().post(f"/v1/campaigns/{campaign_id}/pause", headers=headers).json()["state"]
        == "paused"
    )
    assert (
        api().post(f"/v1/campaigns/{campaign_id}/resume", headers=headers).json()["state"]
        == "active"
    )
    assert (
        api().post(f"/v1/campaigns/{campaign_id}/stop", headers=headers).json()["state"]
        == "stopped"
    )
    assert api().post(f"/v1/campaigns/{campaign_id}/stop", headers=headers).status_code == 409
    other = token_of(_other_team())
    assert api().get(f"/v1/campaigns/{campaign_id}", headers=other).status_code == 404


def _other_team() -> str:
    with session_scope() as session:
        return teams.create_team(session, f"other-{os.urandom(4).hex()}").id


def finish_runs(experiment_id: str, values: list[float], metric: str = "goodput_bps") -> None:
    """Mark an occurrence's runs done with these metric values, as a worker's analysis would
    store them (the report's arithmetic is under test here, not the measurement)."""
    with session_scope() as session:
        runs = list(session.scalars(select(Run).where(Run.experiment_id == experiment_id)
                                    .order_by(Run.order_index)))  # fmt: skip
        assert len(runs) == len(values)
        for run, value in zip(runs, values, strict=True):
            run.status = "done"
            run.aggregate = {"aggregate": {metric: value}}


def test_report_gives_each_occurrence_and_the_median_and_siqr_per_path_and_window(
    team: str,
) -> None:
    headers = token_of(team)
    # Occurrences at 06:00, 12:00, 18:00 and 00:00 UTC: one per quarter of the day.
    made = campaign(team, schedule={"kind": "interval", "every": "6h"},
                    start=T0.replace(hour=6).isoformat(), repetitions=2)  # fmt: skip
    for k in range(4):
        tick(T0.replace(hour=6) + timedelta(hours=6 * k))
    tick(T0.replace(hour=6) + timedelta(hours=29))  # five hours late: missed
    values = [[10e6, 12e6], [20e6, 22e6], [30e6, 34e6], [5e6, 7e6]]
    for experiment, pair in zip(experiments_of(made), values, strict=True):
        finish_runs(experiment.id, pair)
    report = api().get(f"/v1/campaigns/{made}/report?metric=goodput_bps", headers=headers)
    assert report.status_code == 200, report.text
    body = report.json()
    assert [(p["state"], p["value"]) for p in body["occurrences"]] == [
        ("fired", 11e6), ("fired", 21e6), ("fired", 32e6), ("fired", 6e6),
        ("missed", None)]  # fmt: skip
    (series,) = body["series"]
    # Medians of 6, 11, 21, 32 (Mbit/s): 16; quartiles 9.75 and 23.75 (linear): SIQR 7.
    assert series["path"] == "h1->h2" and series["n"] == 4
    assert series["median"] == pytest.approx(16e6)
    assert series["siqr"] == pytest.approx(7e6)
    by_window = {w["window"]: (w["n"], w["median"]) for w in series["windows"]}
    assert by_window == {"00:00-06:00": (1, 6e6), "06:00-12:00": (1, 11e6),
                         "12:00-18:00": (1, 21e6), "18:00-00:00": (1, 32e6)}  # fmt: skip
    refused = api().get(f"/v1/campaigns/{made}/report?metric=nonsense", headers=headers)
    assert refused.status_code == 422 and refused.json()["errors"][0]["field"] == "metric"
    refused = api().get(f"/v1/campaigns/{made}/report?by=flows", headers=headers)
    assert refused.status_code == 422 and refused.json()["errors"][0]["field"] == "by"
    # The export: a row per run with its occurrence's time, and one for the missed one.
    text = api().get(f"/v1/campaigns/{made}/export.csv", headers=headers).text
    lines = text.splitlines()
    assert lines[0].startswith("occurrence_due_at,occurrence_state,path,experiment_id,run_id")
    assert len(lines) == 1 + 8 + 1
    assert lines[1].startswith(T0.replace(hour=6).isoformat())
    parquet = api().get(f"/v1/campaigns/{made}/export.parquet", headers=headers).content
    table = pq.read_table(io.BytesIO(parquet))
    assert str(table.schema.field("occurrence_due_at").type).startswith("timestamp")
    assert table.num_rows == 9 and table.column("goodput_bps").to_pylist()[:2] == [10e6, 12e6]


def test_report_splits_paths_by_a_matrix_axis(team: str) -> None:
    headers = token_of(team)
    matrix = {"kind": "matrix", "name": "algos", "base": EXPERIMENT,
              "axes": [{"path": "flows[0].algorithm", "values": ["reno", "cubic"]}]}  # fmt: skip
    made = campaign(team, experiment=matrix)
    tick(T0)
    tick(T0 + timedelta(hours=1))
    for experiment in experiments_of(made):
        with session_scope() as session:
            for run in session.scalars(select(Run).where(Run.experiment_id == experiment.id)):
                run.status = "done"
                value = 1.0 if run.axis_values["flows[0].algorithm"] == "reno" else 2.0
                run.aggregate = {"aggregate": {"utilization": value}}
    body = api().get(f"/v1/campaigns/{made}/report?metric=utilization&by=flows[0].algorithm",
                     headers=headers).json()  # fmt: skip
    assert {(s["group"], s["n"], s["median"]) for s in body["series"]} == {
        ("cubic", 2, 2.0), ("reno", 2, 1.0)}  # fmt: skip


LAB = workerpool.Capabilities(testbeds=["hosts"], congestion_controls=["reno", "cubic"])


def submit(team_id: str, hosts: tuple[str, str]) -> str:
    from ccbench.experiments import create_experiment
    from schemas import ExperimentSpec

    spec = {**EXPERIMENT, "flows": [{"algorithm": "reno", "src": hosts[0], "dst": hosts[1]}]}
    with session_scope() as session:
        owner = session.get(Team, team_id)
        assert owner is not None
        experiment, _ = create_experiment(session, owner, ExperimentSpec.model_validate(spec),
                                          run_limit=10)  # fmt: skip
        return experiment.id


def run_of(experiment_id: str) -> Run:
    with session_scope() as session:
        run = session.scalars(select(Run).where(Run.experiment_id == experiment_id)).one()
        session.expunge(run)
        return run


def reserved(team_id: str) -> dict[str, str]:
    with session_scope() as session:
        return {h: r for h, r in session.execute(
            select(HostReservation.host, HostReservation.run_id)
            .where(HostReservation.team_id == team_id))}  # fmt: skip


def test_two_runs_never_hold_one_host(team: str, unique: str) -> None:
    worker = f"lab-{unique}"
    cancel_leftover_runs()
    with session_scope() as session:
        workerpool.register(session, worker, "default", LAB, 4, "test")
    try:
        first, second, third = (submit(team, ("h1", "h2")), submit(team, ("h2", "h3")),
                                submit(team, ("h3", "h1")))  # fmt: skip
        assert dispatch(get_settings()) == 1  # all three share hosts: one goes
        a, b, c = run_of(first), run_of(second), run_of(third)
        assert a.dispatched_at is not None and reserved(team) == {"h1": a.id, "h2": a.id}
        assert b.dispatched_at is None and b.progress["waiting"] == (
            f"waiting for hosts: h2 in use by run {a.id}"
        )
        assert c.progress["waiting"] == f"waiting for hosts: h1 in use by run {a.id}"
        # It runs; its worker dies; the reaper queues it again: its hosts are free meanwhile.
        with session_scope() as session:
            assert transition(session, a.id, RunStatus.provisioning, attempt=1,
                              worker_id=worker, heartbeat_at=T0 - timedelta(days=3650))  # fmt: skip
        assert dispatch(get_settings()) == 0  # still held while it runs
        reaped = reap_stale_runs(get_settings())
        assert [(r.run_id, r.action) for r in reaped if r.run_id == a.id] == [(a.id, "requeued")]
        assert set(reserved(team).values()) <= {b.id, c.id}
        # Cancelling a queued run that holds its hosts frees them at once.
        with session_scope() as session:
            session.execute(update(Run).where(Run.id.in_([a.id])).values(dispatched_at=None))
        dispatch(get_settings())
        holder = set(reserved(team).values())
        assert len(holder) == 1
        held_by = holder.pop()
        experiment_of = {a.id: first, b.id: second, c.id: third}[held_by]
        headers = token_of(team)
        assert api().post(f"/v1/experiments/{experiment_of}/cancel",
                          headers=headers).status_code == 200  # fmt: skip
        assert held_by not in reserved(team).values()
        # A run that ends releases its hosts: the next one goes.
        dispatch(get_settings())
        (holder_id,) = set(reserved(team).values())
        with session_scope() as session:
            assert transition(session, holder_id, RunStatus.provisioning, attempt=1,
                              worker_id=worker, heartbeat_at=datetime.now(UTC))  # fmt: skip
            for target in (RunStatus.running, RunStatus.collecting, RunStatus.analyzing,
                           RunStatus.done):  # fmt: skip
                assert transition(session, holder_id, target)
        assert holder_id not in reserved(team).values()
        assert dispatch(get_settings()) == 1
        with session_scope() as session:
            queued_waiting = session.scalar(select(func.count()).select_from(Run).where(
                Run.status == "queued", Run.dispatched_at.is_(None)))  # fmt: skip
        assert queued_waiting == 0
    finally:
        with session_scope() as session:
            workerpool.stopped(session, worker)


def test_a_shared_campaign_is_read_only_for_the_other_team(team: str) -> None:
    """Campaigns share as experiments do (ccbench.sharing): the other team reads the campaign,
    its report and its occurrences' experiments, marked shared; it cannot change it."""
    made = campaign(team, count=2)
    tick(T0)
    [experiment] = experiments_of(made)
    owner = token_of(team)
    other = _other_team()
    reader = token_of(other)
    with session_scope() as session:
        other_name = session.get(Team, other).name  # type: ignore[union-attr]
    assert api().get(f"/v1/campaigns/{made}", headers=reader).status_code == 404
    assert api().get(f"/v1/experiments/{experiment.id}", headers=reader).status_code == 404
    shared = api().put(f"/v1/campaigns/{made}/shares", json={"teams": [other_name]},
                       headers=owner)  # fmt: skip
    assert shared.status_code == 200 and shared.json()["teams"] == [other_name], shared.text

    seen = api().get("/v1/campaigns", headers=reader).json()["items"]
    assert [(c["id"], c["access"]) for c in seen] == [(made, "shared")]
    assert api().get(f"/v1/campaigns/{made}/report", headers=reader).status_code == 200
    listed = api().get("/v1/experiments", params={"access": "shared"}, headers=reader).json()
    assert [(e["id"], e["access"]) for e in listed["items"]] == [(experiment.id, "shared")]
    assert api().get(f"/v1/experiments/{experiment.id}", headers=reader).status_code == 200
    for method, path in (("POST", f"/v1/campaigns/{made}/pause"),
                         ("POST", f"/v1/campaigns/{made}/stop"),
                         ("PATCH", f"/v1/campaigns/{made}"),
                         ("PUT", f"/v1/campaigns/{made}/shares"),
                         ("POST", f"/v1/experiments/{experiment.id}/cancel")):  # fmt: skip
        body = {} if method != "POST" else None
        refused = api().request(method, path, json=body, headers=reader)
        assert refused.status_code == 403, (method, path, refused.text)
    # Its page and the page's export link, with the other team's login.
    from tests.test_web import logged_in

    page = logged_in(reader["Authorization"].split()[1])
    assert "shared: read-only" in page.get(f"/ui/campaigns/{made}").text
    export = page.get(f"/ui/campaigns/{made}/export.csv")
    assert export.status_code == 200 and export.text.startswith("occurrence_due_at,"), export.text
    # Unshared: gone again, with its experiments.
    api().put(f"/v1/campaigns/{made}/shares", json={}, headers=owner)
    assert api().get(f"/v1/campaigns/{made}", headers=reader).status_code == 404
    assert api().get(f"/v1/experiments/{experiment.id}", headers=reader).status_code == 404


def test_the_cli_creates_shows_edits_reports_and_stops_a_campaign(
    unique: str, tmp_path: Path
) -> None:
    """`ccbench campaign ...` against a real API server, as a user types it (id prefixes)."""
    team_id = _team_with_hosts(unique)
    token = token_of(team_id)["Authorization"].removeprefix("Bearer ")
    server = Api(free_port(), dict(os.environ), tmp_path / "api.log")
    env = {**os.environ, "CCBENCH_API_URL": server.url, "CCBENCH_TOKEN": token,
           "CCBENCH_STATE_DIR": str(tmp_path / "client"), "COLUMNS": "200"}  # fmt: skip
    spec = tmp_path / "campaign.yaml"
    spec.write_text(yaml.safe_dump({
        "name": f"cli-{unique}", "experiment": EXPERIMENT, "hosts": {"pairs": [["h1", "h2"]]},
        "schedule": {"kind": "interval", "every": "6h"}, "start": T0.replace(hour=6).isoformat(),
        "count": 6, "repetitions": 2}))  # fmt: skip
    try:
        created = run_cli(env, "campaign", "create", str(spec))
        assert created.returncode == 0, created.stderr
        assert "schedule: every 6h" in created.stdout and ": active" in created.stdout
        campaign_id = created.stdout.split()[1]
        prefix = campaign_id[:6]
        listed = run_cli(env, "campaign", "list")
        assert listed.returncode == 0, listed.stderr
        assert campaign_id[:8] in listed.stdout and "every 6h" in listed.stdout
        # Shared by prefix with another team: its list shows it marked, its changes refused.
        other = _other_team()
        with session_scope() as session:
            other_name = session.get(Team, other).name  # type: ignore[union-attr]
        other_env = {**env, "CCBENCH_TOKEN": token_of(other)["Authorization"].split()[1]}
        shared = run_cli(env, "share", "--campaign", prefix, "--team", other_name)
        assert f"shared read-only with {other_name}" in shared.stdout, shared.stderr
        seen = run_cli(other_env, "campaign", "list").stdout
        assert f"{campaign_id[:8]}  cli-{unique}" in seen and "(shared)" in seen, seen
        paused = run_cli(other_env, "campaign", "pause", prefix)
        assert paused.returncode == 1 and "shared with yours read-only" in paused.stderr
        for k in range(4):
            tick(T0.replace(hour=6) + timedelta(hours=6 * k))
        values = [[10e6, 12e6], [20e6, 22e6], [30e6, 34e6], [5e6, 7e6]]
        for experiment, pair in zip(experiments_of(campaign_id), values, strict=True):
            finish_runs(experiment.id, pair)
        report = run_cli(env, "campaign", "report", prefix)
        assert report.returncode == 0, report.stderr
        # The per-path summary (medians 6, 11, 21, 32 Mbit/s: 16 ± 7), then each occurrence.
        assert re.search(r"h1->h2\s+all\s+4\s+16 ± 7 Mbit/s", report.stdout), report.stdout
        assert re.search(r"06:00-12:00\s+1\s+11 ± 0 Mbit/s", report.stdout), report.stdout
        assert len(re.findall(r"fired\s+h1->h2", report.stdout)) == 4, report.stdout
        shown = run_cli(env, "campaign", "show", prefix)
        assert "fired 4, missed 0, failed 0" in shown.stdout, shown.stdout + shown.stderr
        edited = run_cli(env, "campaign", "edit", prefix, "--every", "12h", "--count", "none")
        assert edited.returncode == 0 and "schedule: every 12h" in edited.stdout, edited.stderr
        assert state(campaign_id).spec.get("count") is None
        both = run_cli(env, "campaign", "edit", prefix, "--every", "1h", "--cron", "0 * * * *")
        assert both.returncode == 1 and "give one of --every, --cron" in both.stderr
        refused = run_cli(env, "campaign", "edit", prefix, "--every", "1s")
        assert refused.returncode == 1 and "schedule.every" in refused.stderr, refused.stderr
        assert state(campaign_id).spec["schedule"]["every"] == 12 * 3600  # nothing lost
        for verb, shown_state in (("pause", "paused"), ("resume", "active"), ("stop", "stopped")):
            changed = run_cli(env, "campaign", verb, prefix)
            assert changed.returncode == 0 and changed.stdout.strip().endswith(shown_state), (
                changed.stdout + changed.stderr
            )
        exported = run_cli(env, "campaign", "export", prefix)
        assert exported.stdout.startswith("occurrence_due_at,"), exported.stderr
        assert len(exported.stdout.splitlines()) == 1 + 8
        unknown = run_cli(env, "campaign", "show", "fffffff")
        assert unknown.returncode == 1
        assert "no campaign of your team or shared with it has an id starting with fffffff" in (
            unknown.stderr
        )
    finally:
        server.kill_hard()
        with session_scope() as session:
            session.execute(update(Campaign).where(Campaign.team_id == team_id)
                            .values(state="stopped", next_due_at=None))  # fmt: skip
