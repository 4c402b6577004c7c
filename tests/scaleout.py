"""Several worker "machines" on one host: each worker in a network namespace of its own with
its own state directory, reaching one PostgreSQL, one Redis and the API over a Linux bridge
(10.77.0.0/24) — nothing shares a disk or a loopback with the API, as on separate machines.
Used by tests/test_scale_out.py and `make bench-scale`."""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
import time
from pathlib import Path
from types import TracebackType
from typing import Any

import httpx

from tests.processes import Api, Worker
from tests.services import Services, free_port, run_cli, start_services

BRIDGE = "ccbsbr0"
HOST = "10.77.0.1"  # the API's, PostgreSQL's and Redis's side of the bridge


def matrix(runs: int, duration: str, pool: str = "default") -> dict[str, Any]:
    """`runs` repetitions of one reno flow through a 10 Mbit/s dumbbell."""
    return {
        "kind": "matrix",
        "name": "scale-out",
        "base": {
            "name": "scale-out",
            "testbed": {"kind": "mininet", "pool": pool},
            "topology": {"kind": "dumbbell", "bottleneck": {"rate": "10Mbit", "delay": "5ms"}},
            "flows": [{"algorithm": "reno"}],
            "duration": duration,
        },
        "axes": [{"path": "flows[*].algorithm", "values": ["reno"]}],
        "repetitions": runs,
    }


def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


class Lab:
    """Services, the API and `workers` namespace workers; `with Lab(...) as lab:`."""

    def __init__(
        self, work: Path, workers: int, tag: str, concurrency: int = 1,
        worker_env: dict[str, str] | None = None,
    ) -> None:  # fmt: skip
        """`concurrency`, `worker_env`: each worker's runs at once and extra settings."""
        self.work = work
        self.count = workers
        self.concurrency = concurrency
        self.worker_env = worker_env or {}
        self.tag = tag  # keeps namespace names apart from another lab's
        self.token = ""
        self.worker_token = "wt_" + secrets.token_urlsafe(24)
        self.services: Services | None = None
        self.api: Api | None = None
        self.workers: dict[str, Worker] = {}

    def namespace(self, i: int) -> str:
        return f"ccbs-{self.tag}-w{i}"

    def outside(self, i: int) -> str:
        """The bridge's end of worker i's link (interface names have 15 bytes at most)."""
        return f"ccbs{i}{self.tag[:6]}"

    def __enter__(self) -> Lab:
        self.work.mkdir(parents=True, exist_ok=True)
        try:
            self._network()
            self.services = start_services(host=HOST)
            self.env = {k: v for k, v in os.environ.items() if not k.startswith("CCBENCH_")}
            self.env.update(
                CCBENCH_DATABASE_URL=self.services.database_url,
                CCBENCH_BROKER_URL=self.services.redis_url,
                CCBENCH_WORKER_TOKEN=self.worker_token,
                # Dead workers and their runs are noticed within seconds here.
                CCBENCH_HEARTBEAT_TIMEOUT_S="3",
                CCBENCH_WORKER_TIMEOUT_S="3",
                CCBENCH_REAPER_INTERVAL_S="1",
            )
            api_env = dict(self.env, CCBENCH_STATE_DIR=str(self.work / "api"))
            assert run_cli(api_env, "db", "upgrade").returncode == 0
            made = run_cli(api_env, "admin", "create-team", "scale")
            assert made.returncode == 0, made.stderr
            self.token = run_cli(api_env, "admin", "create-token", "--team", "scale").stdout.strip()
            port = free_port()
            self.api = Api(port, api_env, self.work / "api.log", host=HOST)
            for i in range(1, self.count + 1):
                self.start_worker(i)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def _network(self) -> None:
        _ip("link", "add", BRIDGE, "type", "bridge")
        _ip("addr", "add", f"{HOST}/24", "dev", BRIDGE)
        _ip("link", "set", BRIDGE, "up")
        for i in range(1, self.count + 1):
            ns, outside = self.namespace(i), self.outside(i)
            _ip("netns", "add", ns)
            _ip("link", "add", outside, "type", "veth", "peer", "name", "eth0", "netns", ns)
            _ip("link", "set", outside, "master", BRIDGE, "up")
            _ip("-n", ns, "addr", "add", f"10.77.0.{10 + i}/24", "dev", "eth0")
            _ip("-n", ns, "link", "set", "eth0", "up")
            _ip("-n", ns, "link", "set", "lo", "up")

    def start_worker(self, i: int) -> Worker:
        assert self.api is not None
        env = dict(self.env, CCBENCH_STATE_DIR=str(self.work / f"w{i}"),
                   CCBENCH_API_URL=self.api.url, **self.worker_env)  # fmt: skip
        worker = Worker(self.work / f"w{i}.log", env=env, netns=self.namespace(i),
                        worker_id=f"scale-{self.tag}-w{i}",
                        concurrency=self.concurrency)  # fmt: skip
        self.workers[worker.id] = worker
        return worker

    def client(self) -> httpx.Client:
        assert self.api is not None
        return httpx.Client(base_url=self.api.url, timeout=30,
                            headers={"Authorization": f"Bearer {self.token}"})  # fmt: skip

    def wait_final(self, experiment_id: str, timeout_s: float) -> dict[str, object]:
        deadline = time.monotonic() + timeout_s
        with self.client() as api:
            while True:
                detail: dict[str, object] = api.get(f"/v1/experiments/{experiment_id}").json()
                if detail["status"] in ("done", "failed", "cancelled"):
                    return detail
                assert time.monotonic() < deadline, detail
                time.sleep(0.5)

    def __exit__(
        self,
        _type: type[BaseException] | None,
        _value: BaseException | None,
        _tb: TracebackType | None,
    ) -> None:
        for worker in self.workers.values():
            worker.stop()
        if self.api is not None:
            self.api.kill_hard()
        if self.services is not None:
            self.services.stop()
        for i in range(1, self.count + 1):
            # Deleting the link at once: a namespace outlives `netns del` while processes in it
            # are still exiting, and its link with it.
            with contextlib.suppress(subprocess.CalledProcessError):
                _ip("link", "del", self.outside(i))
            with contextlib.suppress(subprocess.CalledProcessError):
                _ip("netns", "del", self.namespace(i))
        with contextlib.suppress(subprocess.CalledProcessError):
            _ip("link", "del", BRIDGE)
