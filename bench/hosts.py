"""The `hosts` testbed's cost (issue: real hosts), on namespace hosts with their own sshd
(tests/sshhosts.py), as root:

- provisioning time per host: a fresh host alone, then both hosts at once, then both again
  (idempotent: nothing changes, the price of checking);
- per-run overhead beyond the experiment's own duration for 2 hosts: one run's wall time in
  the backend (inventory records -> one Ansible play -> files and provenance on the worker)
  minus its duration, over several runs, with the play's own time beside it.

    make bench-hosts
    python -m bench.hosts --runs 5 --duration 3
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

from bench.figures import figure as emit
from ccbench.hosts import HostAccess
from ccbench.settings import get_settings
from schemas import ExperimentSpec
from tests.sshhosts import SshHosts
from workers.planning import plan_for_spec
from workers.testbeds.hosts import ansible
from workers.testbeds.hosts.backend import HostsTestbed

OVERHEAD_TARGET = "<= 5 s"


def figure(name: str, value: float | None, unit: str, target: str | None = None) -> None:
    emit("hosts", name, value, unit, target)


def records(lab: SshHosts) -> list[HostAccess]:
    """The hosts as the inventory would hand them to the worker."""
    out = []
    for host in lab.hosts.values():
        body = host.registration()
        out.append(
            HostAccess(
                name=body["name"],
                address=body["address"],
                port=body["port"],
                user=body["user"],
                labels={},
                credential_ref=None,
                private_key=body["private_key"],
                host_key=body["host_key"],
                install_prefix=body["install_prefix"],
            )
        )
    return out


def provisioning(lab: SshHosts) -> None:
    artifacts = ansible.Artifacts(congestion_controls=["cubic"])
    hosts = lab.as_dicts()
    for label, chosen in (("one fresh host", hosts[:1]), ("two hosts, one fresh", hosts)):
        started = time.monotonic()
        result = ansible.provision(chosen, artifacts)
        figure(f"provision {label}", time.monotonic() - started, "s")
        print(f"# {label}: {result.changed()} changes")
    started = time.monotonic()
    again = ansible.provision(hosts, artifacts)
    figure("provision two hosts again (idempotent)", time.monotonic() - started, "s")
    assert again.changed() == 0, "provisioning twice changed something"


def one_run(lab: SshHosts, duration_s: float, index: int, work: Path) -> tuple[float, float]:
    spec = ExperimentSpec.model_validate({
        "name": "bench-hosts",
        "seed": 1 + index,
        "testbed": {"kind": "hosts"},
        "topology": {"kind": "path"},
        "flows": [{"algorithm": "cubic", "src": "h1", "dst": "h2"}],
        "duration": f"{duration_s}s",
    })  # fmt: skip
    run_dir = work / f"run-{index}" / "attempt-1"
    plan = plan_for_spec(spec, run_id=f"bench{index}", out_dir=run_dir, settings=get_settings())
    loaded = records(lab)
    started = time.monotonic()
    result = HostsTestbed(load_hosts=lambda _names: loaded).run(
        plan, events=lambda event: None, cancel=lambda: False, deadline_s=duration_s + 120
    )
    wall = time.monotonic() - started
    if result.status != "done":
        raise SystemExit(f"run {index} failed: {result.describe()}")
    log = (run_dir / "run.log").read_text()
    if index == 0:  # where one run's time goes, task by task
        print("".join(f"#   {line}\n" for line in log.splitlines()), end="")
    stamps = [line.split(" ", 1)[0] for line in log.splitlines()]
    first, last = (_seconds(stamps[0]), _seconds(stamps[-1])) if stamps else (0.0, 0.0)
    return wall, last - first


def _seconds(stamp: str) -> float:
    hours, minutes, seconds = stamp.split(":")
    return int(hours) * 3600 + int(minutes) * 60 + float(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--duration", type=float, default=3.0, help="experiment seconds")
    args = parser.parse_args()
    with SshHosts(2) as lab, tempfile.TemporaryDirectory(prefix="ccbench-bench-hosts-") as work:
        provisioning(lab)
        overheads = []
        for index in range(args.runs):
            wall, logged = one_run(lab, args.duration, index, Path(work))
            overheads.append(wall - args.duration)
            print(f"# run {index}: {wall:.2f} s for {args.duration:g} s "
                  f"(first to last task result {logged:.2f} s)")  # fmt: skip
        figure("run overhead min", min(overheads), "s")
        figure("run overhead max", max(overheads), "s")
        figure("run overhead median", statistics.median(overheads), "s", OVERHEAD_TARGET)


if __name__ == "__main__":
    main()
