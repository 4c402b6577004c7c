"""Asserting a run's fidelity checks in a test, on a host whose own timing wobbles.

On these VMs the virtual CPUs stop for milliseconds now and then, idle or not, depending on
what else their host runs: a real-time thread (SCHED_FIFO, 1 ns timer slack) sleeping 1 ms at
a time woke 60 us late at the median, 240-310 us at p99, 1.6-2.2 ms at p99.9 and up to 7.4 ms
at worst (three 10 s samples with nothing else running, 2026-11-24 19:50 UTC); fifty minutes
later the same samples gave 85-101 us, 125-205 us and 392-655 us. No process inside the guest
can prevent that, and enough
such stalls in a short run push an emulator's p99 release lateness past its 1 ms limit (in 2
of 4 runs of the RED test that day, and in 4 of 4 runs with five emulators). Whether the host
keeps time is a benchmark's question (`make bench-link`, which reports where late releases
lost their time), not a test's: the brief forbids timed unit tests. The worker re-runs a run
that such a check failed (workers/lifecycle.py); a test of a feature asserts every other check,
and prints the load-sensitive ones that failed with the emulator's account of why."""

from __future__ import annotations

from ccbench.analysis.checks import spoiled_by_load
from ccbench.analysis.run import RunAnalysis


def assert_checks_hold(analysis: RunAnalysis) -> None:
    """Every check holds, except load-sensitive ones (LOAD_SENSITIVE_CHECKS), which are printed
    when they fail."""
    checks = analysis.summary.checks
    spoiled = spoiled_by_load(checks)
    failed = [c for c in checks if not c.ok and c not in spoiled]
    assert not failed, failed
    for check in spoiled:
        print(f"load-sensitive check failed (not asserted): {check.name}: {check.detail}")
