"""The browsing pages in Debian's headless Chromium against a real API server on the test
database: the experiment browser with its sort and filters, a comparison drawing one figure
from two experiments, sharing between teams seen from the other team, the page's export and
bundle links with nothing but its session, and /docs and /redoc rendered in a network namespace
where only loopback exists."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from ccbench import teams
from ccbench.access import Scope
from ccbench.db.session import session_scope
from ccbench.settings import REPO_ROOT
from tests.processes import Api
from tests.services import free_port
from tests.test_api import EXAMPLE, matrix
from tests.test_web import (
    CHROMEDRIVER,
    CHROMIUM,
    chromium,
    console_errors,
    drawn_traces,
    wait_for_figures,
    wait_for_url,
)

needs_chromium = pytest.mark.skipif(
    not (CHROMIUM.exists() and CHROMEDRIVER.exists()),
    reason="needs Debian's chromium and chromium-driver (scripts/install.sh installs them)",
)


@pytest.fixture
def api(tmp_path: Path) -> Iterator[Api]:
    """A real API server on this test session's database."""
    env = {**os.environ, "CCBENCH_STATE_DIR": str(tmp_path / "state")}
    server = Api(free_port(), env, tmp_path / "api.log")
    yield server
    server.kill_hard()


def log_in(driver: Any, url: str, token: str, landing: str) -> None:
    from selenium.webdriver.common.by import By

    driver.get(f"{url}/ui/login?next={quote(landing)}")
    driver.find_element(By.NAME, "token").send_keys(token)
    driver.find_element(By.CSS_SELECTOR, "form[action='/ui/login'] button").click()
    wait_for_url(driver, url + landing)


def rows(driver: Any) -> list[str]:
    """Names in the experiment browser, top to bottom."""
    from selenium.webdriver.common.by import By

    return [r.find_elements(By.TAG_NAME, "td")[3].text.split("\n")[0].removesuffix(" rerun")
            for r in driver.find_elements(By.CSS_SELECTOR, "#experiments tbody tr")]  # fmt: skip


def fetch(driver: Any, url: str, method: str = "GET") -> dict[str, Any]:
    """What the page gets for `url` with its own cookie (as a click on a link does)."""
    result: dict[str, Any] = driver.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "fetch(arguments[0], {method: arguments[1], credentials: 'same-origin',"
        "                     redirect: 'manual'})"
        ".then(async r => { const b = new Uint8Array(await r.arrayBuffer());"
        "  done({status: r.status, type: r.headers.get('content-type'),"
        "        disposition: r.headers.get('content-disposition'), bytes: b.length,"
        "        head: new TextDecoder().decode(b.slice(0, 4000))}); })"
        ".catch(e => done({error: String(e)}));",
        url,
        method,
    )
    return result


def submit(client: Any, token: str, body: dict[str, Any]) -> str:
    response = client.post(
        "/v1/experiments", json=body, headers={"Authorization": f"Bearer {token}"}
    )
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


@needs_chromium
def test_browse_compare_share_and_download_in_chromium(api: Api, unique: str) -> None:
    from fastapi.testclient import TestClient
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    from api.app import app
    from tests.test_api import finish_runs_with

    with session_scope() as session:
        team_a = teams.create_team(session, f"lab-a-{unique}")
        token_a = teams.create_token(session, team_a, "browser")
        team_b = teams.create_team(session, f"lab-b-{unique}")
        token_b = teams.create_token(session, team_b, "browser")
        name_b = team_b.name
    client = TestClient(app)
    sweep = matrix(["reno", "cubic"], ["0.5bdp", "2bdp"], 2)
    sweep.update(name=f"sweep-{unique}", tags=["buffers"])
    sweep_id = submit(client, token_a, sweep)
    finish_runs_with(sweep_id, lambda run: 0.6 if run.axis_values[
        "topology.bottleneck.buffer"] == "0.5bdp" else 0.95)  # fmt: skip
    single = {**EXAMPLE, "name": f"single-{unique}"}
    bottleneck = {"rate": "10Mbit", "delay": "20ms", "buffer": "2bdp"}
    single["topology"] = {"kind": "dumbbell", "bottleneck": bottleneck}
    single_id = submit(client, token_a, single)
    finish_runs_with(single_id, lambda run: 0.9)
    submit(client, token_a, {**EXAMPLE, "name": f"private-{unique}"})
    own_b = submit(client, token_b, {**EXAMPLE, "name": f"b-own-{unique}"})
    shared = client.put(f"/v1/experiments/{sweep_id}/shares", json={"teams": [name_b]},
                        headers={"Authorization": f"Bearer {token_a}"})  # fmt: skip
    assert shared.status_code == 200, shared.text

    driver = chromium()
    try:
        url = api.url
        # Browse: text filter and sort by name, then by utilization (largest first).
        log_in(driver, url, token_a, f"/ui/experiments?q={unique}&sort=name")
        assert rows(driver) == [f"private-{unique}", f"single-{unique}", f"sweep-{unique}"]
        driver.find_element(By.LINK_TEXT, "utilization").click()
        time.sleep(0.3)
        assert "sort=-utilization" in driver.current_url
        # sweep: median of 0.6 x 4 and 0.95 x 4 = 0.775; single 0.9; private has none: last.
        assert rows(driver) == [f"single-{unique}", f"sweep-{unique}", f"private-{unique}"]
        driver.find_element(By.LINK_TEXT, "utilization").click()
        time.sleep(0.3)
        assert rows(driver)[:2] == [f"sweep-{unique}", f"single-{unique}"]
        # Filters through the form: a parameter value, then another in other units and a status.
        form = driver.find_element(By.ID, "filters")
        form.find_element(By.NAME, "param").send_keys("topology.bottleneck.buffer=2bdp")
        form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        time.sleep(0.3)
        # The sort chosen stays: utilization, smallest first.
        assert rows(driver) == [f"sweep-{unique}", f"single-{unique}"]
        form = driver.find_element(By.ID, "filters")
        form.find_element(By.NAME, "param").clear()
        form.find_element(By.NAME, "param").send_keys("topology.bottleneck.delay=0.02s")
        Select(form.find_element(By.NAME, "status")).select_by_value("queued")
        form.find_element(By.CSS_SELECTOR, "button[type=submit]").click()
        time.sleep(0.3)
        assert rows(driver) == [f"private-{unique}"]
        assert driver.find_element(By.ID, "total").text == "1 experiment."
        assert console_errors(driver) == []

        # Compare two experiments: tick both, one figure with a series per experiment.
        driver.get(f"{url}/ui/experiments?q={unique}&sort=name")
        for experiment_id in (sweep_id, single_id):
            driver.find_element(By.CSS_SELECTOR, f"input[value='{experiment_id}']").click()
        driver.find_element(By.CSS_SELECTOR, "#compare-form button").click()
        time.sleep(0.3)
        assert "/ui/compare?" in driver.current_url
        x = driver.find_element(By.NAME, "x")
        x.clear()
        x.send_keys("topology.bottleneck.buffer")
        driver.find_element(By.CSS_SELECTOR, "#cross-form button").click()
        wait_for_figures(driver, 1)
        legend = drawn_traces(driver, "figure-cross")
        # Series in the order of the selection (the listing's, by name), under the legend's
        # title; buffers on a numeric axis, as a matrix's figures draw them.
        assert legend == [f"single-{unique} ({single_id[:8]})",
                          f"sweep-{unique} ({sweep_id[:8]})"], legend  # fmt: skip
        titles = driver.execute_script(
            "const f = document.querySelector('#figure-cross');"
            "return [f.querySelector('.legendtitletext').textContent,"
            " f.querySelector('.xtitle').textContent]")  # fmt: skip
        assert titles == ["experiment", "bottleneck buffer (BDP)"], titles
        points = driver.execute_script(
            "return Array.from(document.querySelectorAll('#figure-cross .scatterlayer .trace'))"
            ".map(t => t.querySelectorAll('.point').length)")  # fmt: skip
        assert points == [1, 2], points  # the single experiment's one buffer, the sweep's two
        table = [r.text for r in driver.find_elements(By.CSS_SELECTOR, "#cross-table tbody tr")]
        assert table == [f"single-{unique} ({single_id[:8]}) 2bdp 0.9 ± 0 1",
                         f"sweep-{unique} ({sweep_id[:8]}) 0.5bdp 0.6 ± 0 4",
                         f"sweep-{unique} ({sweep_id[:8]}) 2bdp 0.95 ± 0 4"], table  # fmt: skip
        # Its permalink draws the same comparison again.
        permalink = driver.find_element(By.ID, "permalink").get_attribute("href")
        driver.get(permalink)
        wait_for_figures(driver, 1)
        assert drawn_traces(driver, "figure-cross") == legend
        assert console_errors(driver) == []

        # Export and bundle links work with the page's session alone.
        driver.get(f"{url}/ui/experiments/{sweep_id}")
        runs_csv = fetch(driver, driver.find_element(By.ID, "export-runs").get_attribute("href"))
        assert runs_csv["status"] == 200 and runs_csv["type"].startswith("text/csv"), runs_csv
        assert runs_csv["head"].startswith("run_id,status,point_index,repetition,seed")
        flows_csv = fetch(driver, driver.find_element(By.ID, "export-flows").get_attribute("href"))
        assert flows_csv["status"] == 200 and "flow,algorithm" in flows_csv["head"]
        driver.find_element(By.CSS_SELECTOR, "#runs tbody tr a").click()
        time.sleep(0.3)
        bundle = fetch(driver, driver.find_element(By.ID, "bundle").get_attribute("href"))
        assert bundle["status"] == 200 and bundle["type"] == "application/gzip", bundle
        assert "ccbench-run-" in bundle["disposition"] and bundle["bytes"] > 500
        assert console_errors(driver) == []

        # Team B: A's shared experiment, marked shared; not A's others; read-only.
        driver.find_element(By.CSS_SELECTOR, "form.logout button").click()
        log_in(driver, url, token_b, f"/ui/experiments?q={unique}&sort=name")
        assert rows(driver) == [f"b-own-{unique}", f"sweep-{unique}"]
        badges = [b.text for b in driver.find_elements(By.CSS_SELECTOR, "#experiments .badge")]
        assert badges == ["shared"]
        driver.find_element(By.LINK_TEXT, f"sweep-{unique}").click()
        time.sleep(0.3)
        assert "shared: read-only" in driver.find_element(By.CSS_SELECTOR, ".ids").text
        assert driver.find_elements(By.ID, "cancel") == []  # no cancel button
        assert driver.find_elements(By.ID, "annotate-form") == []
        refused = fetch(driver, f"/ui/experiments/{sweep_id}/cancel", "POST")
        assert refused["status"] == 403 and "shared with yours read-only" in refused["head"]
        # B may still download A's shared results.
        assert fetch(driver, f"/ui/experiments/{sweep_id}/export.csv")["status"] == 200
        assert fetch(driver, f"/ui/experiments/{own_b}/export.csv")["status"] == 200
        [refusal] = console_errors(driver)  # the cancel refused above, nothing else
        assert f"/ui/experiments/{sweep_id}/cancel" in refusal and "403" in refusal
    finally:
        driver.quit()


@pytest.mark.root
@needs_chromium
@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare (util-linux)")
def test_docs_render_with_only_loopback(tmp_path: Path) -> None:
    """/docs and /redoc in Chromium, the browser and the API alone in a network namespace of
    their own with loopback only: everything they load comes from the API."""
    script = REPO_ROOT / "tests" / "offline_docs.py"
    result = subprocess.run(
        ["unshare", "--net", "--", sys.executable, str(script), str(tmp_path)],
        cwd=REPO_ROOT, capture_output=True, text=True, timeout=180,
    )  # fmt: skip
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    report = json.loads(result.stdout.strip().splitlines()[-1])
    # Nothing but loopback in there: another address has no route at all.
    assert report["interfaces"] == ["lo"] and report["outside"] == "unreachable", report
    swagger, redoc = report["docs"], report["redoc"]
    assert swagger["title"].startswith("ccbench 0."), swagger
    assert swagger["operations"] >= 30, swagger  # one block per documented operation
    assert redoc["title"].startswith("ccbench (0.") and redoc["operations"] >= 30, redoc
    for page in (swagger, redoc):
        assert page["errors"] == [], page
        assert page["resources"] and all(r.startswith(report["url"]) for r in page["resources"])


def test_page_forms_follow_the_token_scope_and_ownership(unique: str) -> None:
    """The experiment page's forms (annotate, pin, share, run again, cancel) through the ASGI
    app with the page's cookie: what they change, and what a read token or another team may
    not."""
    from fastapi.testclient import TestClient

    from api.app import app
    from tests.test_web import logged_in

    with session_scope() as session:
        owner = teams.create_team(session, f"forms-{unique}")
        admin = teams.create_token(session, owner, "admin")
        reader = teams.create_token(session, owner, "read", scope=Scope.read)
        other = teams.create_team(session, f"forms-other-{unique}")
        other_token = teams.create_token(session, other, "admin")
        other_name = other.name
    experiment_id = submit(TestClient(app), admin, {**EXAMPLE, "name": f"forms-{unique}"})
    page = f"/ui/experiments/{experiment_id}"
    client = logged_in(admin)
    done = client.post(f"{page}/annotate", data={"name": "renamed", "tags": "a, b",
                                                 "description": "d", "notes": "n"})  # fmt: skip
    assert done.status_code == 303 and done.headers["location"] == page
    shown = client.get(page).text
    assert "renamed" in shown and "<strong>Notes:</strong> n" in shown
    bad = client.post(f"{page}/annotate", data={"name": "x" * 101})
    assert bad.status_code == 422 and "name:" in bad.text
    assert client.post(f"{page}/pin", data={"pinned": "yes"}).status_code == 303
    assert "★ pinned" in client.get(page).text
    assert client.post(f"{page}/shares", data={"teams": other_name}).status_code == 303
    assert f"Shared read-only with: {other_name}." in client.get(page).text
    again = client.post(f"{page}/rerun", data={"edits": "duration: 7s"})
    assert again.status_code == 303 and again.headers["location"].startswith("/ui/experiments/")
    assert 'Runs <a href="/ui/experiments/' in client.get(again.headers["location"]).text
    wrong = client.post(f"{page}/rerun", data={"edits": "- not a mapping"})
    assert wrong.status_code == 422 and "edits" in wrong.text

    read_only = logged_in(reader)
    for form, data in (("annotate", {"notes": "x"}), ("pin", {}), ("rerun", {}),
                       ("cancel", {}), ("shares", {"teams": ""})):  # fmt: skip
        refused = read_only.post(f"{page}/{form}", data=data)
        assert refused.status_code == 403 and "scope is read" in refused.text, form
    assert "annotate-form" not in read_only.get(page).text  # no form it could not use

    theirs = logged_in(other_token)
    shared_page = theirs.get(page).text
    assert "shared: read-only" in shared_page and "annotate-form" not in shared_page
    assert theirs.post(f"{page}/cancel").status_code == 403
    assert theirs.post(f"{page}/annotate", data={"notes": "x"}).status_code == 403
    assert theirs.get(f"{page}/export.csv").status_code == 200
    assert client.post(f"{page}/cancel").status_code == 303
