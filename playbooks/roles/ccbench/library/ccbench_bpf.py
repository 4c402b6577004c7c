#!/usr/bin/python3
"""Ansible module: ccbench's BPF congestion controllers on one experiment host.

`build` (provisioning): compile the BPF objects from ccbench's sources (copied to the host by
provisioning) against this kernel's own BTF, as the worker image does at start
(containers/worker-entrypoint.sh): a struct_ops controller is compiled against the types of the
kernel it runs in, so objects built on the worker may not load on a host with another kernel.
The build is stamped with the sha256 of the sources and of /sys/kernel/btf/vmlinux and redone
only when either changes (a new ccbench, a new kernel); otherwise changed=false. A host without
BTF, compiler or bpftool fails with "capability missing: ..." naming what to install.

`register` (a trial, before its agents start): for each of the trial's controllers on this
host, patch a copy of the object with the run's tunables and its per-attempt name (the same
code as the worker's loader: module_utils/ccbench_bpf_host.py is workers/bpf_host.py) and
register it with `bpftool struct_ops register`. Each name is written into the trial's ledger
file `<ledger>/<trial>.json` *before* it is registered, so whatever ends the trial, `unregister`
(the play's `always`, or cleanup.yml after a killed play) finds it.

`unregister`: unregister the controllers of one trial's ledger (or of every ledger file, for a
host's full cleanup) and report each one's outcome: "removed", "pending: ..." (sockets still use
it: the kernel frees it when the last one closes; waited for up to I(wait_s)) or "error: ...".
It never fails on a controller: a ledger file stays while a controller it names is still live,
for the next cleanup. Only names a ledger lists are touched, never another installation's.
Runs under the host's Python 3 (stdlib only)."""

from __future__ import annotations

import json
import os
import platform
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.ccbench_bpf_host import (
    BTF,
    BpfError,
    btf_digest,
    ops_maps,
    patch_object,
    register_object,
    source_digest,
    unregister_name,
)

DOCUMENTATION = r"""
module: ccbench_bpf
short_description: Build, register and unregister ccbench's BPF congestion controllers on a host
options:
  action:
    description: C(build) compiles the objects of I(src) into I(build) for this kernel;
      C(register) registers I(controllers) for I(trial); C(unregister) removes the controllers
      of I(trial)'s ledger (of every ledger file when I(trial) is empty).
    type: str
    choices: [build, register, unregister]
    required: true
  src:
    description: The host's copy of ccbench's agents/kernel (Makefile, bpf/), for C(build).
    type: path
  build:
    description: Where the objects are (C(build) writes them, C(register) reads them).
    type: path
  clang:
    description: The BPF compiler, for C(build).
    type: str
    default: clang-14
  ledger:
    description: Directory of the trials' ledger files (C(register), C(unregister)).
    type: path
  trial:
    description: The trial's id (letters, digits, - and _).
    type: str
    default: ""
  work:
    description: Where C(register) writes the patched per-run copies (the trial's directory).
    type: path
  controllers:
    description: For C(register), C({name, algorithm, symbols}) of each controller, C(symbols)
      mapping the object's tunables to their integer values.
    type: list
    elements: dict
    default: []
  wait_s:
    description: How long C(unregister) waits for a pending controller to be freed.
    type: float
    default: 5
"""

CAPABILITY_MISSING = "capability missing:"
STAMP = "stamp.json"
POLL_S = 0.1


def read_json(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def write_json(path: Path, data: dict[str, Any]) -> None:
    """Replace the file atomically (a reader never sees half of it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.write_text(json.dumps(data, indent=1) + "\n")
    os.replace(tmp, path)


def expected_objects(src: Path) -> list[str]:
    return sorted(p.name.replace(".bpf.c", ".bpf.o") for p in (src / "bpf").glob("*.bpf.c"))


def build(module: AnsibleModule) -> dict[str, Any]:
    src, out = Path(module.params["src"]), Path(module.params["build"])
    clang = module.params["clang"]
    if not BTF.exists():
        module.fail_json(
            msg=f"{CAPABILITY_MISSING} kernel {platform.release()} has no BTF ({BTF}): BPF "
            "congestion controllers need a kernel built with CONFIG_DEBUG_INFO_BTF"
        )
    missing = [tool for tool in ("make", clang, "bpftool") if shutil.which(tool) is None]
    if not Path("/usr/include/bpf/bpf_helpers.h").exists():
        missing.append("/usr/include/bpf/bpf_helpers.h")
    if missing:
        module.fail_json(
            msg=f"{CAPABILITY_MISSING} building the BPF controllers against this kernel needs "
            f"{', '.join(missing)} (Debian packages make, {clang}, bpftool, libbpf-dev)"
        )
    try:
        stamp = {"source_sha256": source_digest(src), "btf_sha256": btf_digest()}
    except BpfError as exc:
        module.fail_json(msg=str(exc))
        raise  # not reached: fail_json exits
    objects = expected_objects(src)
    have = read_json(out / STAMP)
    current = all(have.get(k) == v for k, v in stamp.items()) and all(
        (out / name).is_file() for name in objects
    )
    report = {"kernel": platform.release(), **stamp, "objects": objects, "built": False}
    if current or module.check_mode:
        return {"changed": not current, "ccbench_report": {"bpf_build": report}}
    started = time.monotonic()
    fresh = out.with_name(out.name + ".new")
    shutil.rmtree(fresh, ignore_errors=True)
    jobs = str(max(1, len(os.sched_getaffinity(0))))
    done = subprocess.run(
        ["make", "-s", "-j", jobs, "-C", str(src), f"OUT={fresh}", f"BPF_CLANG={clang}"],
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        shutil.rmtree(fresh, ignore_errors=True)
        tail = (done.stderr or done.stdout).strip()[-1500:]
        module.fail_json(
            msg=f"{CAPABILITY_MISSING} building the BPF controllers for kernel "
            f"{platform.release()} failed: {tail}"
        )
    write_json(fresh / STAMP, {**stamp, "kernel": platform.release(), "built_at": time.time()})
    shutil.rmtree(out, ignore_errors=True)
    os.replace(fresh, out)
    report.update(built=True, build_s=round(time.monotonic() - started, 3))
    return {"changed": True, "ccbench_report": {"bpf_build": report}}


def register(module: AnsibleModule) -> dict[str, Any]:
    objects, work = Path(module.params["build"]), Path(module.params["work"])
    ledger = Path(module.params["ledger"]) / f"{module.params['trial']}.json"
    work.mkdir(parents=True, exist_ok=True)
    entry = read_json(ledger) or {"trial": module.params["trial"], "controllers": []}
    done: dict[str, Any] = {}
    for controller in module.params["controllers"]:
        name, algorithm = str(controller["name"]), str(controller["algorithm"])
        symbols = {str(k): int(v) for k, v in (controller.get("symbols") or {}).items()}
        source = objects / f"{algorithm}.bpf.o"
        try:
            if not source.is_file():
                raise BpfError(f"no BPF object for {algorithm}: {source} is missing")
            if any(m.name == name for m in ops_maps()):
                raise BpfError(f"a controller named {name} is already registered")
            # Recorded before it exists in the kernel: teardown can never miss it.
            if name not in entry["controllers"]:
                entry["controllers"].append(name)
                entry["registered_at"] = time.time()
                write_json(ledger, entry)
            target = work / f"{name}.bpf.o"
            patch_object(source, target, algorithm, name, symbols)
            register_object(target, name)
        except BpfError as exc:
            module.fail_json(
                msg=f"BPF controller {name} ({algorithm}): {exc}",
                ccbench_report={"bpf_controllers": done},
            )
        listed = [m for m in ops_maps() if m.name == name]
        done[name] = {"algorithm": algorithm, "map_id": listed[0].id if listed else None}
    return {"changed": bool(done), "ccbench_report": {"bpf_controllers": done}}


def unregister(module: AnsibleModule) -> dict[str, Any]:
    directory = Path(module.params["ledger"])
    trial = module.params["trial"]
    files = [directory / f"{trial}.json"] if trial else sorted(directory.glob("*.json"))
    outcomes: dict[str, str] = {}
    for path in files:
        if not path.is_file():
            continue
        names = [str(n) for n in read_json(path).get("controllers", [])]
        live = []
        for name in names:
            outcomes[name] = settle(name, module.params["wait_s"])
            if outcomes[name].startswith("error"):
                live.append(name)
        if live:  # kept for the next cleanup
            write_json(path, {**read_json(path), "controllers": live})
        else:
            path.unlink()
    changed = any(o != "absent" for o in outcomes.values())
    return {"changed": changed, "ccbench_report": {"bpf_teardown": outcomes}}


def settle(name: str, wait_s: float) -> str:
    """Unregister one controller; a pending one is given wait_s to be freed."""
    try:
        outcome = unregister_name(name)
        deadline = time.monotonic() + wait_s
        while outcome == "pending" and time.monotonic() < deadline:
            time.sleep(POLL_S)
            if not any(m.name == name for m in ops_maps()):
                outcome = "removed"
    except BpfError as exc:
        return f"error: {exc}"
    if outcome == "pending":
        return (
            "pending: unregistered; the kernel still lists it (TOBEFREE) while sockets use it "
            "and frees it when the last one closes"
        )
    return outcome


def main() -> None:
    module = AnsibleModule(
        argument_spec={
            "action": {"type": "str", "required": True,
                       "choices": ["build", "register", "unregister"]},
            "src": {"type": "path"},
            "build": {"type": "path"},
            "clang": {"type": "str", "default": "clang-14"},
            "ledger": {"type": "path"},
            "trial": {"type": "str", "default": ""},
            "work": {"type": "path"},
            "controllers": {"type": "list", "elements": "dict", "default": []},
            "wait_s": {"type": "float", "default": 5.0},
        },
        required_if=[
            ("action", "build", ("src", "build")),
            ("action", "register", ("build", "ledger", "trial", "work")),
            ("action", "unregister", ("ledger",)),
        ],
        supports_check_mode=True,
    )  # fmt: skip
    trial = module.params["trial"]
    if trial and not all(c.isalnum() or c in "-_" for c in trial):
        module.fail_json(msg=f"trial {trial!r}: letters, digits, - and _ only")
    action = module.params["action"]
    if action == "build":
        module.exit_json(**build(module))
    if module.check_mode:
        module.exit_json(changed=False)
    if action == "register":
        module.exit_json(**register(module))
    module.exit_json(**unregister(module))


if __name__ == "__main__":
    main()
