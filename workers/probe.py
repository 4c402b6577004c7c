"""`python -m workers.probe [--json]`: what this host can run as a worker (`ccbench probe` runs
it): kernel, built-in controllers, NFQUEUE, kernel BTF, and which BPF controllers the kernel
accepts (loading needs root; each is registered under a probe name and removed at once)."""

from __future__ import annotations

import argparse
import json
import os
import sys

from workers import bpf
from workers.testbeds.mininet.probe import probe_host


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ccbench probe", description=__doc__)
    parser.add_argument("--json", action="store_true", help="print JSON")
    args = parser.parse_args(argv)
    host = probe_host(in_private_netns=False)
    host["bpf"] = bpf.probe(try_load=os.geteuid() == 0)
    if args.json:
        print(json.dumps(host, indent=2))
        return 0
    print(f"kernel      {host['kernel']} ({host['machine']}, {host['cpus']} CPUs)")
    print(f"built-in    {' '.join(host['congestion_controls'])}")
    print(f"nfqueue     {'yes' if host['nfqueue'] else 'no'}")
    print("netem       probed per run, inside the run's own namespace")
    found = host["bpf"]
    print(
        f"btf         {'yes' if found['btf'] else 'no'}; bpftool: {found['bpftool'] or 'missing'}"
    )
    if os.geteuid() != 0:
        print("bpf         loading not tried: run as root to check what the kernel accepts")
    for algorithm, state in found["loadable"].items():
        print(f"bpf {algorithm:<16} {state}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
