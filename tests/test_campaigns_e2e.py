"""Campaigns end to end, as a deployment runs them: an API server and two workers (whose upkeep
fires the occurrences) on the harness's PostgreSQL and Redis, namespace hosts with their own
sshd reached through the real Ansible path. Two campaigns on the same hosts, three occurrences
each a few seconds apart: six experiments run, never two at once on the hosts (asserted from
the runs' timestamps), each campaign's report has three points per path with median and SIQR,
and its page in headless Chromium draws the over-time figure."""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from ccbench import teams
from ccbench.db.models import Experiment, Run, utcnow
from ccbench.db.session import session_scope
from tests.hoststate import HostState
from tests.processes import Api, Worker
from tests.services import cancel_leftover_runs, free_port
from tests.sshhosts import PREFIX, SshHosts
from tests.test_web import (
    CHROMEDRIVER,
    CHROMIUM,
    chromium,
    console_errors,
    drawn_figures,
    wait_for_figures,
    wait_for_url,
)

pytestmark = [pytest.mark.root, pytest.mark.services]

OCCURRENCES = 3
EVERY_S = 15


@pytest.fixture(scope="module")
def lab() -> Iterator[SshHosts]:
    before = HostState.capture()
    with SshHosts(2, router=True) as hosts:
        yield hosts
    time.sleep(0.5)
    leftovers = HostState.capture().leftovers_since(before)
    assert [problem for problem in leftovers if PREFIX in problem] == []


def campaign(name: str, experiment: dict[str, Any], start: str) -> dict[str, Any]:
    return {"name": name, "experiment": experiment, "hosts": {"pairs": [["h1", "h2"]]},
            "schedule": {"kind": "interval", "every": f"{EVERY_S}s"}, "start": start,
            "count": OCCURRENCES}  # fmt: skip


THROUGH_ROUTER = {
    "name": "via-r1",
    "testbed": {"kind": "hosts", "router": "r1"},
    "topology": {"kind": "dumbbell",
                 "bottleneck": {"rate": "20Mbit", "delay": "10ms", "buffer": "1bdp"}},
    "flows": [{"algorithm": "cubic"}],
    "duration": "3s",
    "measurement": {"skip_start": "0.5s"},
}  # fmt: skip
PLAIN_PATH = {
    "name": "plain",
    "testbed": {"kind": "hosts"},
    "topology": {"kind": "path", "rate": "1Gbit"},
    "flows": [{"algorithm": "reno"}],
    "duration": "3s",
    "measurement": {"skip_start": "0.5s"},
}


@pytest.mark.skipif(
    not (CHROMIUM.exists() and CHROMEDRIVER.exists()) or shutil.which("unshare") is None,
    reason="needs Debian's chromium and chromium-driver (scripts/install.sh installs them)",
)
def test_two_campaigns_share_hosts_without_overlap_and_report_over_time(
    lab: SshHosts, tmp_path: Path, unique: str
) -> None:
    from selenium.webdriver.common.by import By

    cancel_leftover_runs()
    with session_scope() as session:
        token = teams.create_token(session, teams.create_team(session, f"camp-{unique}"), "e2e")
    headers = {"Authorization": f"Bearer {token}"}
    api = Api(free_port(), dict(os.environ), tmp_path / "api.log")
    workers = [Worker(tmp_path / f"worker-{i}.log", worker_id=f"camp-{unique}-{i}")
               for i in range(2)]  # fmt: skip
    driver = None
    try:
        client = httpx.Client(base_url=api.url, headers=headers, timeout=30)
        for host in lab.hosts.values():
            assert client.post("/v1/hosts", json=host.registration()).status_code == 201
        start = (utcnow() + timedelta(seconds=5)).isoformat()
        ids = []
        for name, experiment in (("router", THROUGH_ROUTER), ("path", PLAIN_PATH)):
            made = client.post("/v1/campaigns", json=campaign(name, experiment, start))
            assert made.status_code == 201, made.text
            ids.append(made.json()["id"])
        deadline = time.monotonic() + 300
        while True:
            with session_scope() as session:
                runs = list(session.scalars(select(Run).join(Experiment).where(
                    Experiment.campaign_id.in_(ids))))  # fmt: skip
                session.expunge_all()
            if len(runs) == 2 * OCCURRENCES and all(r.status in ("done", "failed") for r in runs):
                break
            assert time.monotonic() < deadline, [(r.status, r.error) for r in runs]
            time.sleep(1)
        assert [r.error for r in runs if r.status != "done"] == []
        # Never two runs on the hosts at once: each started after the previous one ended.
        spans = sorted((r.started_at, r.finished_at) for r in runs)
        for (_, ended), (started, _) in zip(spans, spans[1:], strict=False):
            assert ended is not None and started is not None and ended <= started, spans
        for campaign_id in ids:
            report = client.get(f"/v1/campaigns/{campaign_id}/report",
                                params={"metric": "goodput_bps"}).json()  # fmt: skip
            values = [p["value"] for p in report["occurrences"]]
            assert len(values) == OCCURRENCES and all(v and v > 1e6 for v in values), report
            (series,) = report["series"]
            assert series["path"] == "h1->h2" and series["n"] == OCCURRENCES
            assert series["median"] > 1e6 and series["siqr"] is not None
            shown = client.get(f"/v1/campaigns/{campaign_id}").json()
            assert (shown["state"], shown["fired"], shown["failed"]) == ("finished", 3, 0)

        driver = chromium()
        driver.get(f"{api.url}/ui/campaigns/{ids[0]}")
        driver.find_element(By.NAME, "token").send_keys(token)
        driver.find_element(By.CSS_SELECTOR, "form[action='/ui/login'] button").click()
        wait_for_url(driver, f"{api.url}/ui/campaigns/{ids[0]}")
        wait_for_figures(driver, 2)
        drawn = drawn_figures(driver)
        assert drawn["goodput over time"] == OCCURRENCES, drawn
        assert "goodput by time of day" in drawn
        rows = driver.find_elements(By.CSS_SELECTOR, "#occurrences tbody tr")
        assert len(rows) == OCCURRENCES and all("fired" in r.text for r in rows)
        assert console_errors(driver) == []
    finally:
        if driver is not None:
            driver.quit()
        for worker in workers:
            worker.stop()
        api.kill_hard()
        cancel_leftover_runs()
