#!/usr/bin/python3
"""Ansible module: start, wait for and stop a trial's agent processes on one host.

Each agent runs under a tiny shell supervisor in its own session, detached from the SSH
connection, inside the trial's directory:

    <name>.pid     the agent's pid (written as soon as it is started)
    <name>.stdout  <name>.stderr
    <name>.rc      its exit code, written when it exits (128 + signal if killed)

so a later call (another task, or cleanup after a lost connection) can wait for it, signal it
by pid and read how it ended. Runs under the host's Python 3 (stdlib only)."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.ccbench_path import measure_paths

DOCUMENTATION = r"""
module: ccbench_agents
short_description: Start, wait for and stop ccbench agent processes of a trial
options:
  action:
    description: C(start) launches I(agents); C(wait) waits until I(names) exit;
      C(stop) sends SIGTERM to I(names) (every agent of the directory if empty), then SIGKILL,
      and reports their exit codes without failing on them.
    type: str
    choices: [start, wait, stop]
    required: true
  dir:
    description: The trial's directory on the host (created by C(start)).
    type: path
    required: true
  agents:
    description: For C(start), a list of C({name, argv, ready}); C(ready) is text the agent
      prints on stdout once it is ready, waited for up to I(timeout_s).
    type: list
    elements: dict
    default: []
  names:
    description: Agents to wait for or stop.
    type: list
    elements: str
    default: []
  paths:
    description: For C(start), C({name, address}) of the receivers this host sends to: once its
      agents are ready, the path to each is measured (base RTT, path MTU, clock offset; as
      ccbench_path) and reported as C(ccbench_report.paths). In the same task as the receivers'
      start on the other hosts, so the trial pays for one round trip to the hosts, not two.
    type: list
    elements: dict
    default: []
  timeout_s:
    description: How long C(start) waits for ready lines, C(wait) for exits, C(stop) before SIGKILL.
    type: float
    default: 10
"""

# Runs each agent as a child, records its pid at once and its exit code at the end.
SUPERVISOR = '"$@" >"$0.stdout" 2>"$0.stderr" & echo $! >"$0.pid"; wait $!; echo $? >"$0.rc"'
POLL_S = 0.05


def read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def exit_code(directory: Path, name: str) -> int | None:
    text = read(directory / f"{name}.rc")
    return int(text) if text and text.strip().lstrip("-").isdigit() else None


def stderr_tail(directory: Path, name: str) -> str:
    return (read(directory / f"{name}.stderr") or "").strip()[-2000:]


def agent_pid(directory: Path, name: str) -> int | None:
    """The agent's pid while it runs: read from <name>.pid and checked against /proc, so a
    reused pid of another program is never signalled."""
    text = read(directory / f"{name}.pid")
    if not text or not text.strip().isdigit():
        return None
    pid = int(text)
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
        expected = (read(directory / f"{name}.cmd") or "").encode()
    except OSError:
        return None
    return pid if cmdline and cmdline[0] == expected else None


def describe(directory: Path, name: str) -> dict[str, Any]:
    return {"rc": exit_code(directory, name), "stderr": stderr_tail(directory, name)}


def start(
    module: AnsibleModule, directory: Path, agents: list[dict[str, Any]], timeout_s: float
) -> dict[str, Any]:
    directory.mkdir(parents=True, exist_ok=True)
    for agent in agents:
        name, argv = str(agent["name"]), [str(a) for a in agent["argv"]]
        for suffix in ("pid", "rc", "stdout", "stderr"):
            (directory / f"{name}.{suffix}").unlink(missing_ok=True)
        (directory / f"{name}.cmd").write_text(argv[0])
        subprocess.Popen(
            ["/bin/sh", "-c", SUPERVISOR, name, *argv],
            cwd=directory,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,  # outlives this SSH session, immune to its hangup
        )
    deadline = time.monotonic() + timeout_s
    waiting = {str(a["name"]): str(a.get("ready") or "") for a in agents}
    while waiting:
        for name, ready in list(waiting.items()):
            if exit_code(directory, name) is not None:
                module.fail_json(
                    msg=f"agent {name} exited at start with code "
                    f"{exit_code(directory, name)}: {stderr_tail(directory, name)}",
                    ccbench_agents={name: describe(directory, name)},
                )
            started = read(directory / f"{name}.pid") is not None
            if started and (not ready or ready in (read(directory / f"{name}.stdout") or "")):
                del waiting[name]
        if waiting and time.monotonic() > deadline:
            module.fail_json(
                msg=f"agent(s) {', '.join(sorted(waiting))} not ready within {timeout_s:g} s"
            )
        if waiting:
            time.sleep(POLL_S)
    return {"changed": bool(agents), "started": sorted(str(a["name"]) for a in agents)}


def wait(
    module: AnsibleModule, directory: Path, names: list[str], timeout_s: float
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while any(exit_code(directory, n) is None for n in names):
        if time.monotonic() > deadline:
            running = [n for n in names if exit_code(directory, n) is None]
            module.fail_json(
                msg=f"agent(s) {', '.join(running)} still running {timeout_s:g} s later"
            )
        time.sleep(POLL_S)
    return check_exit_codes(module, directory, names)


def stop(
    module: AnsibleModule, directory: Path, names: list[str], timeout_s: float
) -> dict[str, Any]:
    if not names:
        names = sorted(p.stem for p in directory.glob("*.pid")) if directory.is_dir() else []
    signalled = []
    for sig, limit in ((signal.SIGTERM, timeout_s), (signal.SIGKILL, 5.0)):
        for name in names:
            pid = agent_pid(directory, name)
            if pid is not None and exit_code(directory, name) is None:
                os.kill(pid, sig)
                signalled.append(name)
        deadline = time.monotonic() + limit
        while time.monotonic() < deadline and any(
            agent_pid(directory, n) is not None for n in names
        ):
            time.sleep(POLL_S)
    # The supervisor writes the code right after the agent exits.
    deadline = time.monotonic() + 2.0
    while time.monotonic() < deadline and any(
        (directory / f"{n}.pid").exists() and exit_code(directory, n) is None for n in names
    ):
        time.sleep(POLL_S)
    # Reported, never failed on: a stop also runs after failures, and must not cut short the
    # fetching and removal that follow it. The play checks the codes at the end.
    results = {name: describe(directory, name) for name in names}
    return {"changed": bool(signalled), "ccbench_agents": results}


def check_exit_codes(module: AnsibleModule, directory: Path, names: list[str]) -> dict[str, Any]:
    """Exit codes and stderr of the agents; fail naming those that did not exit 0."""
    results = {name: describe(directory, name) for name in names}
    bad = {n: r for n, r in results.items() if r["rc"] != 0}
    if bad:
        module.fail_json(
            msg="; ".join(
                f"agent {n} exited with code {r['rc']}: {r['stderr'] or 'no stderr'}"
                for n, r in sorted(bad.items())
            ),
            ccbench_agents=results,
        )
    return {"changed": False, "ccbench_agents": results}


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "action": {"type": "str", "choices": ["start", "wait", "stop"], "required": True},
            "dir": {"type": "path", "required": True},
            "agents": {"type": "list", "elements": "dict", "default": []},
            "names": {"type": "list", "elements": "str", "default": []},
            "paths": {"type": "list", "elements": "dict", "default": []},
            "timeout_s": {"type": "float", "default": 10.0},
        },
    )
    directory = Path(module.params["dir"])
    timeout_s = module.params["timeout_s"]
    action = module.params["action"]
    if action == "start":
        result = start(module, directory, module.params["agents"], timeout_s)
        if module.params["paths"]:
            result["ccbench_report"] = {"paths": measure_paths(module.params["paths"])}
    elif action == "wait":
        result = wait(module, directory, module.params["names"], timeout_s)
    else:
        result = stop(module, directory, module.params["names"], timeout_s)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
