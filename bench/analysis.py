"""Analysis of one run's exact per-packet log at scale (issue: reports): queue metrics over
10 million emulator records, read through a memory map. Prints events/s and the peak memory the
analysis added, beside the same analysis of a 1-million-record log in this process as baseline.

    make bench-analysis
    python -m bench.analysis --events 2000000
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from bench.figures import figure as emit
from ccbench.analysis.packetlog import MAGIC, RECORD, queue_metrics_from_file, read_packet_log

RATE_BPS = 1e9
T0_US = 1_800_000_000_000_000


def write_log(path: Path, events: int, seed: int = 1) -> None:
    """A 1 Gbit/s link with 1500-byte packets offered at ~1.1x its rate (a queue that fills
    and drains, ~3% drops at a 100-packet buffer), written in chunks (bounded memory)."""
    rng = np.random.default_rng(seed)
    header = json.dumps({"rate": {"bps": RATE_BPS}, "delay_us": 20000}).encode()
    tx_us = 1500 * 8e6 / RATE_BPS  # 12 µs
    with path.open("wb") as out:
        out.write(MAGIC + len(header).to_bytes(4, "little") + header)
        clock, last_departure, chunk = float(T0_US), float(T0_US), 1_000_000
        queue: list[float] = []
        for start in range(0, events, chunk):
            n = min(chunk, events - start)
            gaps = rng.exponential(tx_us / 1.1, n)
            records = np.zeros(n, dtype=RECORD)
            for k in range(n):
                clock += gaps[k]
                while queue and queue[0] <= clock:
                    queue.pop(0)
                records[k]["arrival_us"] = clock
                records[k]["qlen_pkts"] = len(queue)
                records[k]["qlen_bytes"] = 1500 * len(queue)
                records[k]["len"] = records[k]["bytes"] = 1500
                records[k]["segs"] = 1
                if len(queue) >= 100:
                    records[k]["fate"] = 1
                    continue
                last_departure = max(clock, last_departure) + tx_us
                queue.append(last_departure)
                records[k]["departure_us"] = last_departure
                records[k]["due_us"] = last_departure + 20000
                records[k]["release_us"] = last_departure + 20000 + rng.integers(0, 60)
            out.write(records.tobytes())


def measure(path: Path) -> dict[str, Any]:
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    started = time.perf_counter()
    _, records = read_packet_log(path)
    events = len(records)
    first, last = records["arrival_us"][0] / 1e6, records["arrival_us"][-1] / 1e6
    del records  # the metrics stream the file themselves
    metrics = queue_metrics_from_file(path, first, last, RATE_BPS)
    seconds = time.perf_counter() - started
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
    return {"events": events, "seconds": seconds, "peak_added_mib": peak_kib / 1024,
            "drops": metrics["drops"]}  # fmt: skip


def figure(name: str, value: float | None, unit: str, target: str | None = None) -> None:
    emit("analysis", name, value, unit, target)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=10_000_000)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="ccbench-bench-analysis-") as work:
        small, large = Path(work) / "small.bin", Path(work) / "large.bin"
        print(f"writing {args.events:,} synthetic packet records…", file=sys.stderr)
        write_log(small, min(1_000_000, args.events))
        write_log(large, args.events)
        baseline = measure(small)
        result = measure(large)
    figure("events", result["events"], "count")
    figure("seconds", result["seconds"], "s", "<= 5")
    figure("events_per_s", result["events"] / result["seconds"], "1/s")
    figure("peak_memory_added", result["peak_added_mib"], "MiB")
    figure("time_ratio_to_1m_events", result["seconds"] / baseline["seconds"], "ratio",
           f"~{result['events'] / baseline['events']:.0f} (linear)")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
