"""Run inside a fresh network namespace (`unshare --net`, as root) by
tests/test_web_browse.py: bring loopback up, start the API there, load /docs and /redoc in
headless Chromium and print, as the last line, a JSON report of what rendered and every
resource the pages loaded."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.processes import Api  # noqa: E402
from tests.services import free_port  # noqa: E402
from tests.test_web import chromium, console_errors  # noqa: E402

RESOURCES = "return performance.getEntriesByType('resource').map(e => e.name)"


def wait_for(driver: Any, script: str, timeout_s: float = 60) -> Any:
    deadline = time.monotonic() + timeout_s
    while not (value := driver.execute_script(script)):
        if time.monotonic() > deadline:
            raise TimeoutError(f"{script!r} still false on {driver.current_url}")
        time.sleep(0.2)
    return value


def main(work: Path) -> dict[str, Any]:
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    route = subprocess.run(["ip", "route", "get", "192.0.2.1"], capture_output=True, text=True)
    links = subprocess.run(["ip", "-o", "link", "show"], capture_output=True, text=True)
    report: dict[str, Any] = {
        "interfaces": sorted(line.split(":")[1].strip() for line in links.stdout.splitlines()),
        # A route lookup only: nothing is sent.
        "outside": "unreachable" if route.returncode != 0 else route.stdout.strip(),
    }
    env = {**os.environ, "CCBENCH_STATE_DIR": str(work / "offline-state"),
           "CCBENCH_DATABASE_URL": "", "CCBENCH_BROKER_URL": ""}  # fmt: skip
    api = Api(free_port(), env, work / "offline-api.log")
    report["url"] = api.url
    driver = chromium()
    try:
        driver.get(f"{api.url}/docs")
        title = wait_for(driver, "const t = document.querySelector('.swagger-ui .info .title');"
                         "return t && t.textContent")  # fmt: skip
        operations = wait_for(driver, "return document.querySelectorAll('.opblock').length")
        report["docs"] = {"title": title, "operations": operations,
                          "resources": driver.execute_script(RESOURCES),
                          "errors": console_errors(driver)}  # fmt: skip
        driver.get(f"{api.url}/redoc")
        title = wait_for(driver, "const t = document.querySelector('.api-info h1');"
                         "return t && t.textContent")  # fmt: skip
        operations = wait_for(driver, "return document.querySelectorAll("
                              "'[data-section-id^=\"operation/\"]').length")  # fmt: skip
        report["redoc"] = {"title": title, "operations": operations,
                           "resources": driver.execute_script(RESOURCES),
                           "errors": console_errors(driver)}  # fmt: skip
    finally:
        driver.quit()
        api.kill_hard()
    return report


if __name__ == "__main__":
    print(json.dumps(main(Path(sys.argv[1]))))
