"""Reader of ccbench-link's per-packet log (format: agents/ccbench-link/src/log.rs) and the
queue metrics it gives exactly: every arrival, departure and drop at the emulated bottleneck.

The file is memory-mapped, so a long run's log is read column by column without loading it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

MAGIC = b"CCBLINK1"
RECORD = np.dtype(
    [
        ("arrival_us", "<u8"),
        ("departure_us", "<u8"),
        ("release_us", "<u8"),
        ("qlen_bytes", "<u4"),
        ("qlen_pkts", "<u4"),
        ("src", "<u4"),
        ("dst", "<u4"),
        ("sport", "<u2"),
        ("dport", "<u2"),
        ("len", "<u2"),
        ("proto", "u1"),
        ("fate", "u1"),
    ]
)
FORWARDED = 0
DROPPED_FULL = 1
FATES = {0: "forwarded", 1: "dropped_full", 2: "dropped_red", 3: "dropped_loss"}


class PacketLogError(Exception):
    pass


def read_packet_log(path: Path) -> tuple[dict[str, Any], npt.NDArray[Any]]:
    """(configuration header, records) — records are a read-only memory map."""
    with path.open("rb") as handle:
        head = handle.read(12)
        if len(head) < 12 or head[:8] != MAGIC:
            raise PacketLogError(f"{path.name} is not a ccbench-link packet log")
        size = int.from_bytes(head[8:12], "little")
        header = json.loads(handle.read(size))
    offset = 12 + size
    count = (path.stat().st_size - offset) // RECORD.itemsize
    if count == 0:
        return header, np.zeros(0, dtype=RECORD)
    records = np.memmap(path, dtype=RECORD, mode="r", offset=offset, shape=(count,))
    return header, records


def queue_metrics(
    records: npt.NDArray[Any],
    start_s: float,
    end_s: float,
    capacity_bps: float,
    delay_us: int = 0,
) -> dict[str, Any]:
    """Exact bottleneck metrics over the window [start_s, end_s) (Unix seconds).

    queue length = packets that arrived and have not finished transmission (as the emulator
    counts its buffer); queue_mean_pkts is its time average over the window; queueing delay of
    a packet = departure - arrival - its own transmission time at capacity_bps."""
    w0, w1 = int(start_s * 1e6), int(end_s * 1e6)
    window_s = (w1 - w0) / 1e6
    arrival = records["arrival_us"]
    fate = records["fate"]
    forwarded = records[fate == FORWARDED]
    in_window = (arrival >= w0) & (arrival < w1)
    arrivals = int(np.count_nonzero(in_window))
    drops = int(np.count_nonzero(in_window & (fate != FORWARDED)))
    full_drops = int(np.count_nonzero(in_window & (fate == DROPPED_FULL)))

    # Queue length over time: +1 at each forwarded arrival, -1 at its departure.
    times = np.concatenate([forwarded["departure_us"], forwarded["arrival_us"]]).astype(np.int64)
    steps = np.concatenate([-np.ones(len(forwarded), np.int64), np.ones(len(forwarded), np.int64)])
    order = np.argsort(times, kind="stable")  # departures first at equal times
    times, queue = times[order], np.cumsum(steps[order])
    mean_queue, max_queue = _time_average(times, queue, w0, w1)

    departed = (forwarded["departure_us"] >= w0) & (forwarded["departure_us"] < w1)
    sent_bytes = float(forwarded["len"][departed].astype(np.float64).sum())
    fw_window = forwarded[(forwarded["arrival_us"] >= w0) & (forwarded["arrival_us"] < w1)]
    tx_us = fw_window["len"].astype(np.float64) * 8e6 / capacity_bps
    waits = (fw_window["departure_us"].astype(np.float64) - fw_window["arrival_us"]) - tx_us
    # Rate while backlogged, measured on the actual release times: consecutive packets where
    # the next arrived before the previous one had left, so the link never idled between them.
    dep = forwarded["departure_us"].astype(np.int64)
    rel = forwarded["release_us"].astype(np.int64)
    backlogged = (
        (forwarded["arrival_us"][1:].astype(np.int64) < dep[:-1])
        & (dep[:-1] >= w0)
        & (dep[1:] < w1)
    )
    release_gaps = (rel[1:] - rel[:-1])[backlogged]
    gaps_us = float(release_gaps.sum())
    busy_bytes = float(forwarded["len"][1:][backlogged].astype(np.float64).sum())
    # Fidelity: how far actual release spacing strays from the model's transmission spacing,
    # and how late packets left against their scheduled time (departure + delay).
    spacing_error = np.abs(release_gaps - (dep[1:] - dep[:-1])[backlogged])
    in_w = (dep >= w0) & (dep < w1)
    late = (rel - dep - int(delay_us))[in_w]
    return {
        "utilization": 8 * sent_bytes / (capacity_bps * window_s) if window_s > 0 else None,
        "queue_mean_pkts": mean_queue,
        "queue_max_pkts": max_queue,
        "queue_max_bytes": float(fw_window["qlen_bytes"].max() + fw_window["len"].max())
        if len(fw_window)
        else None,
        "queue_delay_mean_s": float(waits.mean()) / 1e6 if len(waits) else None,
        "drops": drops,
        "full_drops": full_drops,
        "loss_rate": drops / arrivals if arrivals else None,
        "busy_rate_bps": 8e6 * busy_bytes / gaps_us if gaps_us >= 1e6 else None,
        "spacing_error_us_p99": _pct(spacing_error, 99),
        "release_late_us_mean": float(late.mean()) if len(late) else None,
        "release_late_us_p50": _pct(late, 50),
        "release_late_us_p99": _pct(late, 99),
        "series": _series(records, times, queue),
    }


def _pct(values: npt.NDArray[Any], p: float) -> float | None:
    return float(np.percentile(values, p)) if len(values) else None


def _time_average(
    times: npt.NDArray[np.int64], queue: npt.NDArray[np.int64], w0: int, w1: int
) -> tuple[float | None, float | None]:
    if w1 <= w0:
        return None, None
    # Queue level before the window, then every change inside it.
    before = np.searchsorted(times, w0, side="right")
    level0 = int(queue[before - 1]) if before > 0 else 0
    inside = slice(before, np.searchsorted(times, w1, side="left"))
    t = np.concatenate([[w0], times[inside], [w1]]).astype(np.float64)
    q = np.concatenate([[level0], queue[inside]]).astype(np.float64)
    mean = float((q * np.diff(t)).sum() / (w1 - w0))
    return mean, float(q.max())


def _series(
    records: npt.NDArray[Any],
    times: npt.NDArray[np.int64],
    queue: npt.NDArray[np.int64],
    limit: int = 2000,
) -> dict[str, list[Any]]:
    """Queue length after each change and cumulative drops, down-sampled to `limit` points."""
    if len(times) == 0:
        return {"ts": [], "qlen_pkts": [], "drops": []}
    step = max(1, -(-len(times) // limit))
    picked_t = times[::step]
    dropped_at = np.sort(records["arrival_us"][records["fate"] != FORWARDED].astype(np.int64))
    drops = np.searchsorted(dropped_at, picked_t, side="right")
    return {
        "ts": (picked_t / 1e6).round(6).tolist(),
        "qlen_pkts": queue[::step].tolist(),
        "drops": drops.tolist(),
    }
