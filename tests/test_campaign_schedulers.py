"""Two scheduler processes (`ccbench scheduler`) against one PostgreSQL fire a dense campaign's
occurrences in real time: every instant exactly once, none lost, while one of them is SIGKILLed
and restarted mid-way."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from ccbench import teams
from ccbench.campaigns import manage
from ccbench.db.models import Campaign, CampaignOccurrence, Experiment, Host, utcnow
from ccbench.db.session import session_scope
from ccbench.settings import REPO_ROOT
from schemas.campaign import CampaignSpec
from tests.processes import CCBENCH
from tests.services import cancel_leftover_runs

pytestmark = pytest.mark.services

OCCURRENCES = 20


def scheduler(log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "CCBENCH_DISPATCH_INTERVAL_S": "0.2"}
    with log.open("ab") as out:
        proc = subprocess.Popen([*CCBENCH, "scheduler"], cwd=REPO_ROOT, env=env, stdout=out,
                                stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
    deadline = time.monotonic() + 30
    while "scheduler ready" not in log.read_text(errors="replace"):
        assert proc.poll() is None, log.read_text()[-2000:]
        assert time.monotonic() < deadline, "scheduler not ready in 30 s"
        time.sleep(0.1)
    return proc


def fired(campaign_id: str) -> list[tuple[str, str]]:
    with session_scope() as session:
        return [(o.due_at.isoformat(), o.state) for o in session.scalars(
            select(CampaignOccurrence).where(CampaignOccurrence.campaign_id == campaign_id)
            .order_by(CampaignOccurrence.due_at))]  # fmt: skip


def test_two_schedulers_fire_each_occurrence_once_while_one_is_killed(
    tmp_path: Path, unique: str
) -> None:
    with session_scope() as session:
        team = teams.create_team(session, f"sched-{unique}")
        for name in ("s1", "s2"):
            session.add(Host(team_id=team.id, name=name, address="127.0.0.1"))
        session.flush()
        start = utcnow() + timedelta(seconds=8)  # both schedulers are up by then
        spec = CampaignSpec.model_validate({
            "name": "dense", "hosts": {"pairs": [["s1", "s2"]]},
            "schedule": {"kind": "interval", "every": "1s"}, "start": start.isoformat(),
            "count": OCCURRENCES,
            "experiment": {"name": "x", "testbed": {"kind": "hosts"}, "duration": "1s",
                           "topology": {"kind": "path", "rate": "1Gbit"},
                           "flows": [{"algorithm": "reno"}]},
        })  # fmt: skip
        campaign_id = manage.create_campaign(session, team, spec).id
    one, two = scheduler(tmp_path / "one.log"), scheduler(tmp_path / "two.log")
    restarted = None
    try:
        deadline = time.monotonic() + 90
        while len(fired(campaign_id)) < OCCURRENCES // 3:
            assert time.monotonic() < deadline, fired(campaign_id)
            time.sleep(0.1)
        os.killpg(one.pid, signal.SIGKILL)  # mid-way, perhaps inside a transaction
        one.wait(10)
        time.sleep(2)
        restarted = scheduler(tmp_path / "one-again.log")
        while len(fired(campaign_id)) < OCCURRENCES:
            assert time.monotonic() < deadline, fired(campaign_id)
            time.sleep(0.2)
        time.sleep(1.5)  # a duplicate would come now, if ever
    finally:
        for proc in (one, two, restarted):
            if proc is not None and proc.poll() is None:
                proc.terminate()
                proc.wait(30)
        cancel_leftover_runs()
    occurrences = fired(campaign_id)
    expected = [((start + timedelta(seconds=k)).isoformat(), "fired") for k in range(OCCURRENCES)]
    assert occurrences == expected
    with session_scope() as session:
        row = session.get(Campaign, campaign_id)
        assert row is not None and (row.state, row.fired, row.missed) == ("finished", 20, 0)
        experiments = session.scalars(select(Experiment.occurrence_id).where(
            Experiment.campaign_id == campaign_id)).all()  # fmt: skip
        assert len(experiments) == len(set(experiments)) == OCCURRENCES
    # The processes' own account: each occurrence fired by exactly one of them (a log line
    # is written only once its transaction's work is done; a commit that failed would show).
    logs = "".join((tmp_path / name).read_text()
                   for name in ("one.log", "two.log", "one-again.log"))  # fmt: skip
    lines = [line for line in logs.splitlines() if f"campaign {campaign_id}: occurrence" in line]
    said = sorted(line.split("occurrence ")[1].split(" fired")[0] for line in lines)
    assert said == [at for at, _ in expected] or (
        # the killed process may have logged a fire whose commit never happened
        set(said) == {at for at, _ in expected} and len(said) == OCCURRENCES + 1
    ), said
    assert "Traceback" not in logs, logs[-3000:]
