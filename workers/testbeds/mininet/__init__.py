"""The local emulated testbed: a Mininet network inside a per-run sandbox (fresh network, PID and
mount namespaces), so concurrent runs and their cleanup never touch each other or the host.

`sandbox.py` runs under the system Python that has Mininet: it and what it imports (`topology`,
`probe`, workers/plan.py, ccbench/rundir.py) use the standard library only; `runner.py`
(MininetTestbed) runs in the worker."""
