"""docker-compose.yml, run for real with podman-compose on this machine (`make test-compose`):
the images are built (containers/build.sh: base image from Debian's packages, then the API,
worker, PostgreSQL and Redis images), the stack started under a project of its own with
generated secrets, the example submitted from the host through the API container, its report
checked, its rows read back with psql inside the PostgreSQL container, and `down` shown to
leave none of the project's containers, volumes or network behind, and no network namespace,
link or firewall rule of it on the host.

Needs root, podman, podman-compose, runc and debootstrap (Debian packages), about 12 minutes
cold (image builds) and 2 warm. Skipped unless CCBENCH_TEST_COMPOSE=1 (set by
`make test-compose`): it builds images and holds the machine's network for minutes."""

from __future__ import annotations

import base64
import contextlib
import json
import os
import re
import secrets
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

from ccbench.settings import REPO_ROOT
from tests.hoststate import HostState
from tests.services import free_port

pytestmark = [
    pytest.mark.root,
    pytest.mark.skipif(
        os.environ.get("CCBENCH_TEST_COMPOSE") != "1",
        reason="builds images and runs the compose stack: `make test-compose`",
    ),
]

CONTAINERS_CONF = REPO_ROOT / "containers" / "containers.conf"
EXAMPLE = REPO_ROOT / "schemas" / "examples" / "dumbbell-reno-vs-cubic.yaml"
# The client as `.venv/bin/ccbench` runs it, with this interpreter (the repository's venv).
CCBENCH = [sys.executable, "-m", "cli"]


def _env() -> dict[str, str]:
    return dict(os.environ, CONTAINERS_CONF=str(CONTAINERS_CONF))


def podman(*args: str, check: bool = True, timeout: float = 120) -> str:
    done = subprocess.run(
        ["podman", *args], env=_env(), capture_output=True, text=True, timeout=timeout, check=False
    )
    if check:
        assert done.returncode == 0, f"podman {' '.join(args)}: {done.stderr}"
    return done.stdout


@dataclass
class Stack:
    project: str
    directory: Path
    api_url: str
    token: str

    def compose(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["podman-compose", "-p", self.project, "-f", str(self.directory / "docker-compose.yml"),
             *args],
            env=_env(), capture_output=True, text=True, timeout=timeout, check=False,
        )  # fmt: skip

    def container(self, service: str) -> str:
        return f"{self.project}_{service}_1"

    def logs(self, service: str) -> str:
        done = subprocess.run(
            ["podman", "logs", self.container(service)],
            env=_env(), capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        return done.stdout + done.stderr

    def psql(self, sql: str) -> str:
        return podman(
            "exec", self.container("db"),
            "psql", "--username=ccbench", "--dbname=ccbench", "--no-align", "--tuples-only",
            "--command", sql,
        ).strip()  # fmt: skip

    def leftovers(self) -> dict[str, str]:
        label = f"label=io.podman.compose.project={self.project}"
        return {
            "containers": podman("ps", "-a", "--filter", label, "--format", "{{.Names}}"),
            "volumes": "\n".join(
                v for v in podman("volume", "ls", "--format", "{{.Name}}").split()
                if v.startswith(f"{self.project}_")
            ),
            "networks": "\n".join(
                n for n in podman("network", "ls", "--format", "{{.Name}}").split()
                if n.startswith(f"{self.project}_")
            ),
        }  # fmt: skip


def _fernet_key() -> str:
    return base64.urlsafe_b64encode(secrets.token_bytes(32)).decode()


@pytest.fixture(scope="module")
def images() -> None:
    for tool in ("podman", "podman-compose", "runc", "debootstrap"):
        if shutil.which(tool) is None:
            pytest.fail(
                f"{tool} is not installed: apt-get install podman podman-compose runc debootstrap"
            )
    started = time.monotonic()
    done = subprocess.run(
        [str(REPO_ROOT / "containers" / "build.sh")],
        env=_env(), capture_output=True, text=True, timeout=3600, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-5000:] + done.stderr[-5000:]
    for line in done.stdout.splitlines():
        if line.startswith(("build.sh:", "base-image:")):
            print(line)
    print(f"images ready in {time.monotonic() - started:.0f} s")


@pytest.fixture
def stack(images: None, tmp_path: Path) -> Iterator[Stack]:
    # The compose file as committed, in a directory of its own with a generated .env
    # (podman-compose reads .env beside the compose file, and the user's own .env stays
    # untouched).
    shutil.copy(REPO_ROOT / "docker-compose.yml", tmp_path / "docker-compose.yml")
    token = "ccb_" + secrets.token_hex(16)
    port = free_port()
    (tmp_path / ".env").write_text(
        f"POSTGRES_PASSWORD={secrets.token_hex(16)}\n"
        f"CCBENCH_SECRET_KEY={_fernet_key()}\n"
        f"CCBENCH_BOOTSTRAP_TOKEN={token}\n"
        f"CCBENCH_WORKER_TOKEN={secrets.token_hex(24)}\n"
        f"CCBENCH_API_PORT={port}\n"
    )
    stack = Stack(f"ccbtest{secrets.token_hex(4)}", tmp_path, f"http://127.0.0.1:{port}", token)
    before = HostState.capture()
    volumes_before = set(podman("volume", "ls", "--quiet").split())
    subnet = ""
    try:
        started = time.monotonic()
        up = stack.compose("up", "-d", "--no-build")
        assert up.returncode == 0, up.stdout[-3000:] + up.stderr[-3000:]
        subnet = json.loads(podman("network", "inspect", f"{stack.project}_default"))[0]["subnets"][
            0
        ]["subnet"]
        _wait_ready(stack, started)
        yield stack
    finally:
        down = stack.compose("down", "-v")
        # podman-compose 1.0.3 leaves the project's network: remove it as Docker Compose would.
        podman("network", "rm", "--force", f"{stack.project}_default", check=False)
        assert down.returncode == 0, down.stderr
    assert stack.leftovers() == {"containers": "", "volumes": "", "networks": ""}
    assert set(podman("volume", "ls", "--quiet").split()) == volumes_before  # none anonymous
    _assert_nothing_left_on_the_host(before, HostState.capture(), subnet)


def _assert_nothing_left_on_the_host(before: HostState, after: HostState, subnet: str) -> None:
    """What the stack made on the host (netavark's bridge, veths and namespaces, the worker's
    processes, which run from /opt/ccbench, and BPF controllers) is gone. Other sessions on a
    shared machine may run experiments meanwhile: only what can be the stack's is counted."""

    def new(name: str) -> set[str]:
        return set(getattr(after, name) - getattr(before, name))

    assert {link for link in new("links") if link.startswith(("podman", "veth"))} == set()
    assert {ns for ns in new("netns") if ns.startswith("netns-")} == set()
    assert {q for q in new("qdiscs") if " dev podman" in q or " dev veth" in q} == set()
    # netavark adds its base chains once per machine; none of the stack's rules may stay.
    assert not subnet or subnet not in after.iptables + after.nft
    processes = new("processes")
    assert {p for p in processes if "/opt/ccbench/" in p} == set()
    if processes:  # another session's run: its BPF controllers are not ours to count
        print(f"not checking BPF controllers: other experiments are running: {processes}")
        return
    assert new("congestion_controls") == set() and new("bpf_maps") == set()


def _wait_ready(stack: Stack, started: float, timeout_s: float = 300) -> None:
    """Until the API answers through the published port and the worker said it is ready."""
    deadline = time.monotonic() + timeout_s
    api = worker = False
    while time.monotonic() < deadline and not (api and worker):
        with contextlib.suppress(httpx.TransportError):
            api = api or httpx.get(f"{stack.api_url}/healthz", timeout=2).status_code == 200
        worker = worker or " ready." in stack.logs("worker")
        time.sleep(1)
    if not (api and worker):
        logs = "\n".join(f"--- {s}\n{stack.logs(s)[-3000:]}" for s in
                         ("db", "bootstrap", "api", "scheduler", "worker"))  # fmt: skip
        pytest.fail(f"stack not ready in {timeout_s:.0f} s (api {api}, worker {worker})\n{logs}")
    print(f"stack ready in {time.monotonic() - started:.0f} s")


def test_example_runs_through_the_compose_stack(stack: Stack) -> None:
    # Every health check passes (run now: podman schedules them with systemd timers, which a
    # machine without systemd lacks), and the one-shot bootstrap exited 0.
    for service in ("db", "redis", "api"):
        podman("healthcheck", "run", stack.container(service))
        state = podman("inspect", "--format", "{{.State.Health.Status}}", stack.container(service))
        assert state.strip() == "healthy", (service, state)
    assert (
        podman("inspect", "--format", "{{.State.ExitCode}}", stack.container("bootstrap")).strip()
        == "0"
    )
    # The worker built the BPF controllers for this kernel and registered what it can run.
    assert "BPF controllers" in stack.logs("worker")
    capabilities = json.loads(
        stack.psql("SELECT capabilities FROM workers WHERE id = 'compose-worker'")
    )
    assert "mininet" in capabilities["testbeds"] and capabilities["nfqueue"], capabilities
    # The kernel accepted the BPF controllers built in the container (struct_ops registration).
    assert "reno" in capabilities["bpf"], capabilities

    client_env = {k: v for k, v in os.environ.items() if not k.startswith("CCBENCH_")}
    client_env.update(CCBENCH_API_URL=stack.api_url, CCBENCH_TOKEN=stack.token,
                      CCBENCH_STATE_DIR=str(stack.directory / "client"))  # fmt: skip
    started = time.monotonic()
    done = subprocess.run(
        [*CCBENCH, "submit", str(EXAMPLE), "--wait"],
        cwd=REPO_ROOT, env=client_env, capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip
    print(done.stdout)
    print(f"submit --wait took {time.monotonic() - started:.0f} s")
    assert done.returncode == 0, done.stdout + done.stderr + stack.logs("worker")[-5000:]
    # The same report as `make demo` (tests/test_stack.py): progress on stderr, the report with
    # one row per flow and the fidelity checks on stdout.
    assert "done: 1 done (followed " in done.stderr, done.stderr
    assert re.search(r"^\s+0\s+reno\s", done.stdout, re.M), done.stdout
    assert re.search(r"^\s+1\s+cubic\s", done.stdout, re.M), done.stdout
    # The emulator's timing is reported; whether this VM kept time is not the test's question
    # (tests/fidelity.py).
    for expected in ("Jain's index", "[ok ] delay", "[ok ] rate", "] emulator_timing: packets"):
        assert expected in done.stdout, expected
    experiment = done.stdout.split()[1]

    # The results are in the PostgreSQL container.
    assert stack.psql(f"SELECT name FROM experiments WHERE id = '{experiment}'") == (
        "dumbbell-reno-vs-cubic"
    )
    run_id, status, worker = stack.psql(
        f"SELECT id, status, worker_id FROM runs WHERE experiment_id = '{experiment}'"
    ).split("|")
    assert (status, worker) == ("done", "compose-worker")
    flows = stack.psql(
        f"SELECT flow_index, algorithm, (metrics->>'goodput_bps')::float FROM flow_results "
        f"WHERE run_id = '{run_id}' ORDER BY flow_index"
    ).splitlines()
    assert [f.split("|")[:2] for f in flows] == [["0", "reno"], ["1", "cubic"]]
    assert sum(float(f.split("|")[2]) for f in flows) > 8e6  # of a 10 Mbit/s bottleneck
    assert int(stack.psql(f"SELECT count(*) FROM run_series WHERE run_id = '{run_id}'")) > 0


def test_worker_builds_bpf_for_this_kernel_or_says_why_not(images: None, tmp_path: Path) -> None:
    """The worker image's entrypoint (containers/worker-entrypoint.sh), without the stack."""
    run = ["run", "--rm", "--network", "none"]
    built = podman(*run, "ccbench/worker:latest", "ls", "/opt/ccbench/agents/kernel/build")
    assert "reno.bpf.o" in built and "vegas.bpf.o" in built
    no_btf = ["-v", f"{tmp_path}:/sys/kernel/btf:ro"]  # an empty directory
    done = subprocess.run(
        ["podman", *run, *no_btf, "ccbench/worker:latest", "echo", "worker started"],
        env=_env(), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0 and "worker started" in done.stdout
    assert "/sys/kernel/btf/vmlinux is missing" in done.stderr
    done = subprocess.run(
        ["podman", *run, *no_btf, "-e", "CCBENCH_WORKER_BPF=required", "ccbench/worker:latest",
         "echo", "worker started"],
        env=_env(), capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 1 and "worker started" not in done.stdout
    assert "CCBENCH_WORKER_BPF=required" in done.stderr
