"""The local emulated testbed: a Mininet network inside a per-run sandbox (fresh network, PID and
mount namespaces), so concurrent runs and their cleanup never touch each other or the host.

`plan`, `topology` and `probe` are stdlib-only: they run under the worker's venv Python and
under the system Python that has Mininet (`sandbox.py`)."""
