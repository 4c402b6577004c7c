"""docker-compose.yml checked without running it (the run is test_compose.py): valid as Docker
Compose reads it (compose-go, containers/compose-check), every secret from .env and documented
in .env.example, only the worker privileged, only the API published and on 127.0.0.1 only."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from ccbench.settings import REPO_ROOT
from tests.deploy.tools import cached_tool

COMPOSE = REPO_ROOT / "docker-compose.yml"
ENV_EXAMPLE = REPO_ROOT / ".env.example"


@pytest.fixture(scope="module")
def compose_check() -> str:
    return cached_tool("compose-check", timeout_s=600)


def check(tool: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([tool, *args], capture_output=True, text=True, timeout=60, check=False)


def services() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(COMPOSE.read_text())["services"]
    return loaded


def test_valid_for_compose(compose_check: str) -> None:
    done = check(compose_check, str(COMPOSE))
    assert done.returncode == 0, done.stderr
    assert "6 services" in done.stdout


def test_valid_with_the_documented_env_file(compose_check: str) -> None:
    done = check(compose_check, "-env-file", str(ENV_EXAMPLE), str(COMPOSE))
    assert done.returncode == 0, done.stderr


def test_a_missing_secret_is_an_error(compose_check: str, tmp_path: Path) -> None:
    env = tmp_path / ".env"
    env.write_text(
        "\n".join(
            line
            for line in ENV_EXAMPLE.read_text().splitlines()
            if "CCBENCH_SECRET_KEY" not in line
        )
    )
    done = check(compose_check, "-env-file", str(env), str(COMPOSE))
    assert done.returncode == 1
    assert "required variable CCBENCH_SECRET_KEY is missing" in done.stderr


def test_secrets_come_from_the_env_file_and_are_documented() -> None:
    text = COMPOSE.read_text()
    required = set(re.findall(r"\$\{([A-Z_]+):\?", text))
    assert required == {
        "POSTGRES_PASSWORD",
        "CCBENCH_SECRET_KEY",
        "CCBENCH_BOOTSTRAP_TOKEN",
        "CCBENCH_WORKER_TOKEN",
    }
    documented = set(re.findall(r"^#?\s*([A-Z_]+)=", ENV_EXAMPLE.read_text(), re.M))
    assert set(re.findall(r"\$\{([A-Z_]+)", text)) <= documented
    ignored = subprocess.run(
        ["git", "check-ignore", "-q", str(REPO_ROOT / ".env")], cwd=REPO_ROOT, check=False
    )
    assert ignored.returncode == 0, ".env must be git-ignored"


def test_only_the_worker_is_privileged() -> None:
    for name, service in services().items():
        assert bool(service.get("privileged")) == (name == "worker"), name
        assert "cap_add" not in service and service.get("network_mode") != "host", name


def test_only_the_api_is_published_and_on_loopback() -> None:
    for name, service in services().items():
        ports = service.get("ports", [])
        if name != "api":
            assert ports == [], name
            continue
        assert ports and all(str(p).startswith("127.0.0.1:") for p in ports), ports


def test_api_is_unprivileged_with_health_checks_and_ordering() -> None:
    api = services()["api"]
    assert api["read_only"] is True and "/tmp" in api["tmpfs"]
    assert "user" not in api  # the image's uid 10001
    assert api["depends_on"]["bootstrap"]["condition"] == "service_completed_successfully"
    for name in ("db", "redis", "api"):
        assert services()[name]["healthcheck"]["test"][0] == "CMD-SHELL", name
