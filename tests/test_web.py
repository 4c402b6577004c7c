"""The result pages (/ui): login, experiment list, experiment report with its comparison figure,
run report with its figures. Server-side behaviour through the ASGI app on the test database;
the pages themselves in Debian's headless Chromium against a real embedded stack that ran a
real matrix, with no console error allowed."""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from fastapi.testclient import TestClient

from api.app import app
from ccbench.settings import REPO_ROOT
from tests.hoststate import HostState
from tests.services import free_port
from tests.test_api import auth, finish_runs_with, matrix
from tests.test_stack import ccbench, embedded_env


def logged_in(token: str) -> TestClient:
    client = TestClient(app, follow_redirects=False)
    response = client.post("/ui/login", data={"token": token, "next": "/ui/experiments"})
    assert response.status_code == 303 and response.headers["location"] == "/ui/experiments"
    return client


def figure_data(html: str) -> list[dict[str, Any]]:
    """The Plotly figures a page carries, as the browser script will read them."""
    blocks = re.findall(r'<script type="application/json"[^>]*>(.*?)</script>', html, re.S)
    return [json.loads(b.replace("<\\/", "</")) for b in blocks]


def test_pages_need_a_login_and_refuse_a_bad_token(team_token: tuple[str, str]) -> None:
    client = TestClient(app, follow_redirects=False)
    response = client.get("/ui/experiments?status=done")
    assert response.status_code == 303
    assert response.headers["location"] == "/ui/login?next=/ui/experiments%3Fstatus%3Ddone"

    refused = client.post("/ui/login", data={"token": "ccb_wrong", "next": "/ui/experiments"})
    assert refused.status_code == 401 and "token: invalid, revoked or expired" in refused.text
    assert "ccbench_token" not in refused.headers.get("set-cookie", "")
    empty = client.post("/ui/login", data={"token": ""})
    assert empty.status_code == 401 and "token: missing" in empty.text

    # The login never redirects off-site.
    outside = client.post("/ui/login", data={"token": team_token[1], "next": "//evil.example/"})
    assert outside.status_code == 303 and outside.headers["location"] == "/ui/"
    assert "httponly" in outside.headers["set-cookie"].lower()

    client = logged_in(team_token[1])
    assert client.get("/ui/experiments").status_code == 200
    assert client.post("/ui/logout").status_code == 303
    assert client.get("/ui/experiments").status_code == 303


def test_experiment_pages_show_the_matrix_and_escape_names(
    team_token: tuple[str, str], unique: str
) -> None:
    api = TestClient(app)
    spec = matrix(["reno", "cubic"], ["0.5bdp", "1bdp"], 1)
    spec["name"] = f"<script>alert(1)</script>-{unique}"
    created = api.post("/v1/experiments", json=spec, headers=auth(team_token[1]))
    assert created.status_code == 201, created.text
    experiment_id = created.json()["id"]
    finish_runs_with(experiment_id, lambda run: 0.5 if run.axis_values[
        "topology.bottleneck.buffer"] == "0.5bdp" else 0.9)  # fmt: skip

    client = logged_in(team_token[1])
    listing = client.get("/ui/experiments", params={"name": unique})
    assert listing.status_code == 200
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in listing.text
    assert "<script>alert(1)" not in listing.text
    assert f'href="/ui/experiments/{experiment_id}"' in listing.text
    assert "default-src 'self'" in listing.headers["content-security-policy"]

    page = client.get(f"/ui/experiments/{experiment_id}")
    assert page.status_code == 200
    figure, box, *per_scheme = figure_data(page.text)
    # Defaults: utilization against the first axis, a series per value of the second, with
    # human labels: the algorithms as categories, the buffers in legend entries.
    assert figure["layout"]["xaxis"]["title"]["text"] == "algorithm"
    assert figure["layout"]["xaxis"]["type"] == "category"
    assert figure["layout"]["legend"]["title"]["text"] == "bottleneck buffer"
    series = {t["name"]: t["y"] for t in figure["data"]}
    assert series == {"0.5 BDP": [0.5, 0.5], "1 BDP": [0.9, 0.9]}
    assert {t["type"] for t in box["data"]} == {"box"}
    # Per buffer: the per-flow goodput CDF per scheme (no p95 RTT stored: no scatter).
    assert [f["name"] for f in per_scheme] == [
        "goodput_cdf_buffer-0.5bdp",
        "goodput_cdf_buffer-1bdp",
    ]
    assert page.text.count('href="/ui/runs/') == 4

    chosen = client.get(
        f"/ui/experiments/{experiment_id}",
        params={"metric": "utilization", "x": "topology.bottleneck.buffer", "by": ""},
    )
    figure = figure_data(chosen.text)[0]
    # Buffers as numbers on a numeric axis (BDP fractions).
    assert [(t["name"], t["x"], t["y"]) for t in figure["data"]] == [
        ("all runs", [0.5, 1.0], [0.5, 0.9])
    ]
    assert figure["layout"]["xaxis"]["title"]["text"] == "bottleneck buffer (BDP)"
    assert figure["layout"]["xaxis"]["type"] == "linear"

    wrong = client.get(f"/ui/experiments/{experiment_id}", params={"metric": "utilisation"})
    assert wrong.status_code == 422
    assert "metric: unknown metric &#39;utilisation&#39;" in wrong.text
    assert figure_data(wrong.text) == []

    run_id = re.findall(r'href="/ui/runs/([^"]+)"', page.text)[0]
    run_page = client.get(f"/ui/runs/{run_id}")
    assert run_page.status_code == 200 and "utilization" in run_page.text
    # The run stored a tcp_info series: its figures are drawn, and the page says that a built-in
    # controller has no state trace.
    names = {f["layout"]["title"]["text"] for f in figure_data(run_page.text)}
    assert {"cwnd and ssthresh", "smoothed RTT"} <= names, names
    assert "No controller state recorded" in run_page.text
    # Units in tables: each value with its SI prefix, the flows' columns in their headers.
    assert re.search(r"<th[^>]*>utilization</th><td[^>]*>0\.[59]</td>", run_page.text)
    assert re.search(r"<th[^>]*>rate</th><td[^>]*>10 Mbit/s</td>", run_page.text)
    assert re.search(r"<th[^>]*>base RTT</th><td[^>]*>40 ms</td>", run_page.text)
    assert "goodput (Mbit/s)</th>" in run_page.text
    bad_bin = client.get(f"/ui/runs/{run_id}", params={"bin": "1ms"})
    assert bad_bin.status_code == 422 and "bin: 1 ms is finer than the stored samples" in (
        bad_bin.text)  # fmt: skip

    missing = client.get("/ui/runs/no-such-run")
    assert missing.status_code == 404 and "run no-such-run not found" in missing.text
    assert missing.headers["content-type"].startswith("text/html")


def test_other_teams_pages_are_404(team_token: tuple[str, str], unique: str) -> None:
    from ccbench import teams
    from ccbench.db.session import session_scope

    with session_scope() as session:
        other = teams.create_token(session, teams.create_team(session, f"other-{unique}"), "t")
    created = TestClient(app).post(
        "/v1/experiments", json=matrix(["reno"], ["1bdp"], 1), headers=auth(team_token[1])
    )
    experiment_id = created.json()["id"]
    response = logged_in(other).get(f"/ui/experiments/{experiment_id}")
    assert response.status_code == 404 and "not found" in response.text


CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")


def chromium() -> Any:
    """Debian's Chromium, headless, driven by Debian's chromedriver, with the browser console
    log readable. Nothing is downloaded (SE_OFFLINE); background networking is off."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (
        "--headless=new",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-dev-shm-usage",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--window-size=1280,2000",
    ):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)


def wait_for_figures(driver: Any, expected: int, timeout_s: float = 30) -> None:
    deadline = time.monotonic() + timeout_s
    while driver.execute_script("return document.body.dataset.figuresDrawn") != str(expected):
        assert time.monotonic() < deadline, (
            f"figures not drawn on {driver.current_url}: "
            f"{driver.execute_script('return document.body.dataset.figuresDrawn')}"
        )
        time.sleep(0.1)


def wait_for_url(driver: Any, expected: str, timeout_s: float = 30) -> None:
    """A click on a form button returns before the browser has followed the redirect."""
    deadline = time.monotonic() + timeout_s
    while driver.current_url != expected:
        assert time.monotonic() < deadline, f"still on {driver.current_url}, expected {expected}"
        time.sleep(0.1)


def drawn_figures(driver: Any) -> dict[str, int]:
    """Title of every figure Plotly drew on the page, with the number of points of its first
    trace that Plotly plotted (its calcdata), 0 when no line was drawn. Not the SVG path's
    vertices: Plotly merges collinear ones (equal bins in a row), 94 of 100 once in CI."""
    return dict(
        driver.execute_script(
            "return Array.from(document.querySelectorAll('.js-plotly-plot')).map(f => ["
            "  f.querySelector('.gtitle') ? f.querySelector('.gtitle').textContent : '',"
            "  f.querySelector('.scatterlayer .trace .js-line') && f.calcdata && f.calcdata[0]"
            "    ? f.calcdata[0].length : 0])"
        )
    )


def axis_title(driver: Any, element_id: str, axis: str) -> str:
    """The title Plotly drew on a figure's x or y axis."""
    return str(
        driver.execute_script(
            f"return document.querySelector('#{element_id} .{axis}title').textContent"
        )
    )


def table_value(driver: Any, table_id: str, label: str) -> str:
    """The value beside `label` in a two-column table of the page, as displayed."""
    from selenium.webdriver.common.by import By

    for row in driver.find_elements(By.CSS_SELECTOR, f"#{table_id} tr"):
        if row.find_element(By.TAG_NAME, "th").text == label:
            return str(row.find_element(By.TAG_NAME, "td").text)
    raise AssertionError(f"no row {label!r} in #{table_id}")


def console_errors(driver: Any) -> list[str]:
    return [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]


def drawn_traces(driver: Any, element_id: str) -> list[str]:
    """Legend entries Plotly drew for one figure (its SVG, not our JSON)."""
    return list(
        driver.execute_script(
            "return Array.from(document.querySelectorAll("
            f"'#{element_id} .legend .traces .legendtext')).map(e => e.textContent)"
        )
    )


@pytest.mark.root
@pytest.mark.skipif(
    not (CHROMIUM.exists() and CHROMEDRIVER.exists()) or shutil.which("unshare") is None,
    reason="needs Debian's chromium and chromium-driver (scripts/install.sh installs them)",
)
def test_pages_in_chromium_after_a_real_matrix(tmp_path: Path) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    before = HostState.capture()
    port = free_port()
    env = embedded_env(tmp_path / "state", port)
    base = yaml.safe_load((REPO_ROOT / "schemas/examples/dumbbell-reno-vs-cubic.yaml").read_text())
    base["duration"] = "4s"
    # Flow 0 runs the BPF Vegas controller, so the run page also has its internal state trace.
    base["flows"][0] = {"algorithm": "vegas", "runtime": "bpf"}
    spec = {
        "schema_version": 1,
        "kind": "matrix",
        "name": "web-buffers",
        "base": base,
        "axes": [{"path": "topology.bottleneck.buffer", "values": ["0.5bdp", "2bdp"]}],
    }
    spec_file = tmp_path / "matrix.yaml"
    spec_file.write_text(yaml.safe_dump(spec))
    up = ccbench(env, "up", "--detach")
    assert up.returncode == 0, up.stdout + up.stderr
    assert f"http://127.0.0.1:{port}/ui/" in up.stdout
    driver = None
    try:
        submitted = ccbench(env, "submit", str(spec_file), "--wait", timeout=180)
        assert submitted.returncode == 0, submitted.stdout + submitted.stderr
        experiment_id = submitted.stdout.split()[1]
        token = json.loads((tmp_path / "state" / "cli.json").read_text())["token"]

        driver = chromium()
        url = f"http://127.0.0.1:{port}"
        driver.get(f"{url}/ui/experiments/{experiment_id}")
        assert "/ui/login" in driver.current_url  # not logged in yet
        driver.find_element(By.NAME, "token").send_keys(token)
        driver.find_element(By.CSS_SELECTOR, "form[action='/ui/login'] button").click()
        wait_for_url(driver, f"{url}/ui/experiments/{experiment_id}")

        # The comparison, its box plots, and per buffer the scheme scatter and goodput CDF.
        wait_for_figures(driver, 6)
        assert drawn_traces(driver, "figure-compare") == []  # one series: no legend
        points = driver.execute_script(
            "return document.querySelectorAll('#figure-compare .scatterlayer .point').length"
        )
        assert points == 2  # one median per buffer size
        assert len(driver.find_elements(By.CSS_SELECTOR, "#runs tbody tr")) == 2
        assert console_errors(driver) == []

        driver.find_element(By.CSS_SELECTOR, "#runs tbody tr a").click()
        # goodput, throughput, cwnd, cwnd and queue, RTT, RTT vs cwnd, queue, Jain's index,
        # three CDFs, then one figure per variable of Vegas's state trace (diff, base_rtt_us,
        # round_min_rtt_us)
        wait_for_figures(driver, 14)
        # Goodput per RTT, per flow with the aggregate and the link rate, as Plotly drew it.
        assert drawn_traces(driver, "figure-1") == [
            "flow 0 vegas", "flow 1 cubic", "aggregate", "link rate 10 Mbit/s"]  # fmt: skip
        figures = drawn_figures(driver)
        goodput = "goodput per RTT (40 ms)"
        subtitle = driver.execute_script(
            "return document.querySelector('#figure-1 .gtitle-subtitle').textContent"
        )
        assert subtitle.startswith("vegas vs cubic · 10 Mbit/s · RTT 40 ms · buffer "), subtitle
        # 4 s in 40 ms bins: 100 points (the first flow starts with the run).
        assert 95 <= figures[goodput] <= 100, figures[goodput]
        assert axis_title(driver, "figure-1", "y") == "goodput (Mbit/s)"
        assert "flow 1 cubic ssthresh" in drawn_traces(driver, "figure-3")  # cwnd
        assert drawn_traces(driver, "figure-6") == ["flow 0 vegas", "flow 1 cubic"]  # rtt-cwnd
        assert drawn_traces(driver, "figure-7")[0] == "queue"
        state = {title: points for title, points in figures.items() if "state" in title}
        assert set(state) == {
            "controller state: diff",
            "controller state: base RTT",
            "controller state: round min RTT",
        }, state
        # Vegas traces once per round trip (~100 rounds of 40 ms in 4 s), drawn as steps
        # (175 vertices per figure measured).
        assert all(points > 50 for points in state.values()), state
        # Units in the tables: values with their prefixes, units in column headings.
        assert table_value(driver, "aggregate", "goodput").endswith(" Mbit/s")
        assert table_value(driver, "aggregate", "mean RTT").endswith(" ms")
        assert table_value(driver, "applied", "rate") == "10 Mbit/s"
        assert table_value(driver, "applied", "base RTT") == "40 ms"
        headings = [th.text for th in driver.find_elements(By.CSS_SELECTOR, "#flows th")]
        assert {"goodput (Mbit/s)", "mean RTT (ms)", "retransmits (pkt)"} <= set(headings)
        # Another bin, chosen in the page: per second, 4 points.
        Select(driver.find_element(By.NAME, "bin")).select_by_value("1s")
        driver.find_element(By.CSS_SELECTOR, "#bin-form button").click()
        wait_for_url(driver, driver.current_url.split("?")[0] + "?bin=1s")
        wait_for_figures(driver, 14)
        figures = drawn_figures(driver)
        assert figures["goodput per 1 s"] in (3, 4)  # the last second may end late
        checks = driver.find_elements(By.CSS_SELECTOR, "#checks tr")
        assert any("delay" in row.text for row in checks)
        assert console_errors(driver) == []

        driver.get(f"{url}/ui/experiments")
        assert "web-buffers" in driver.find_element(By.ID, "experiments").text
        assert console_errors(driver) == []
    finally:
        if driver is not None:
            driver.quit()
        down = ccbench(env, "down")
    assert down.returncode == 0, down.stdout + down.stderr
    assert HostState.capture().leftovers_since(before) == []
