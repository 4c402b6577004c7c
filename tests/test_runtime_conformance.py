"""Kernel and userspace runtimes of one algorithm agree (issue 21, item 3): bench/conformance.py
runs one bulk flow of each runtime on the same emulated link (2 Mbit/s, 60 ms, 40 packets),
3 times, and compares the medians of their mean congestion window, packets in flight, mean
bottleneck queue and goodput (userspace / kernel). Each ratio is within 25% of 1, or within the
bounds of a difference docs/runtimes.md explains with its measured cause
(bench.conformance.EXPLAINED).

The suite's variant is cut to fit CI (at most about 90 s of wall time on 2 CPUs): four of the
nine algorithms, the ones most likely to regress and between them every kind of code the
runtimes share — Reno (the base both runtimes build on), BFA (per-round RTT sampling, the bug
issue 21 found), Vegas (a delay-based controller, sensitive to RTT sampling) and Paced Westwood
(pacing, the bandwidth estimate and the one explained difference) — 12 s runs, all 24 in one
pool. `make bench-conformance` compares all nine over 60 s. The margins are the issue's 25%,
not fitted to a run; docs/runtimes.md has this variant's measured ratios."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.conformance import (
    ALGORITHMS,
    EXPLAINED,
    FIGURES,
    RUNTIMES,
    Comparison,
    bounds,
    compare,
)
from ccbench.settings import REPO_ROOT
from tests.hoststate import HostState
from workers import bpf

# The comparison's marks; the documentation tests run everywhere.
RUNS_BOTH_RUNTIMES = [
    pytest.mark.root,
    pytest.mark.skipif(
        shutil.which("bpftool") is None or not bpf.object_path("reno").exists(),
        reason="needs bpftool and the BPF objects (scripts/install.sh builds agents/kernel)",
    ),
]

# The suite's subset of bench.conformance.ALGORITHMS (the module docstring says why these).
TESTED = ("reno", "bfa", "vegas", "paced_westwood")
REPETITIONS = 3
DURATION_S = 12.0
# Runs at once: the link is 2 Mbit/s, so a run costs little CPU (its sandbox's setup and
# teardown most); 8 at once run the 24 in three waves.
PARALLEL = 8


@pytest.fixture(scope="module")
def comparisons() -> Iterator[dict[str, Comparison]]:
    """Every algorithm's runs, all in one pool (the test for each algorithm reads its own).
    Afterwards nothing of them is left: no process of their run directories, no BPF controller
    or map of theirs (what other programs on the machine do meanwhile is not this test's)."""
    before = HostState.capture()
    work = Path(tempfile.mkdtemp(prefix="ccbench-test-conformance-"))
    try:
        done = compare(TESTED, REPETITIONS, DURATION_S, work, PARALLEL)
        yield done
    finally:
        shutil.rmtree(work, ignore_errors=True)
    names = [name for c in done.values() for r in c.runs for name in r.controllers]
    assert len(names) == len(done) * REPETITIONS  # one BPF controller per kernel run
    # A controller cb<tag><k>_<id>, its maps cb<tag>.rodata and ct<tag><k>_trace.
    ours = [str(work), *names, *{f"cb{n[2:8]}." for n in names}, *{f"ct{n[2:8]}" for n in names}]
    leftovers = HostState.capture().leftovers_since(before)
    assert [p for p in leftovers if any(mark in p for mark in ours)] == []


def test_every_explained_difference_is_documented() -> None:
    """Each explained difference has its section in docs/runtimes.md and real bounds."""
    runtimes = (REPO_ROOT / "docs" / "runtimes.md").read_text()
    assert EXPLAINED, "nothing is explained: drop this test or the table"
    for (algorithm, figure), explained in EXPLAINED.items():
        assert f"`{algorithm}` {figure}" in runtimes, (algorithm, figure)
        assert figure in FIGURES
        assert explained.low < explained.high


def test_the_tested_algorithms_have_both_runtimes() -> None:
    assert set(TESTED) <= {a.value for a in ALGORITHMS}


@pytest.mark.parametrize("algorithm", [pytest.param(a, marks=RUNS_BOTH_RUNTIMES) for a in TESTED])
def test_kernel_and_userspace_runtimes_agree(
    algorithm: str, comparisons: dict[str, Comparison]
) -> None:
    comparison = comparisons[algorithm]
    for runtime in RUNTIMES:
        assert len(comparison.values(runtime, "goodput_bps")) == REPETITIONS, runtime
    for figure in FIGURES:
        ratio = comparison.ratio(figure)
        low, high = bounds(algorithm, figure)
        print(f"{algorithm} {figure}: userspace / kernel = {ratio} (bounds {low}-{high})")
        assert ratio is not None and low <= ratio <= high, (algorithm, figure, comparison.runs)
