"""Reader of ccbench-link's per-packet log (format: agents/ccbench-link/src/log.rs) and the
queue metrics it gives exactly: every arrival, departure and drop at the emulated bottleneck.

The file is memory-mapped, so a long run's log is read column by column without loading it.
Version 3 (CCBLINK3) records may stand for a GSO/GRO aggregate (the emulator's aggregate mode):
`bytes` is the sum of its packets' IP lengths and `segs` their number, and every metric here
counts the packets and bytes a record stands for (`record_bytes`, `record_packets`), so it is
the same whether the packets came one by one or in aggregates. Version 2 (CCBLINK2) records
carry each packet's scheduled release (`due_us`); version 1 logs, 8 bytes shorter, are read
too; a record of either is one packet of `len` bytes."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any, TypedDict

import numpy as np
import numpy.typing as npt

from ccbench.analysis import metrics as m

_FIELDS_V1 = [
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
_FIELDS_V2 = [*_FIELDS_V1, ("due_us", "<u8")]
MAGIC = b"CCBLINK3"
RECORD = np.dtype([*_FIELDS_V2, ("bytes", "<u4"), ("segs", "<u2"), ("_pad", "<u2")])
# The record of each log version, by its magic.
RECORDS = {b"CCBLINK1": np.dtype(_FIELDS_V1), b"CCBLINK2": np.dtype(_FIELDS_V2), MAGIC: RECORD}
FORWARDED = 0
DROPPED_FULL = 1
FATES = {0: "forwarded", 1: "dropped_full", 2: "dropped_red", 3: "dropped_loss"}


class PacketLogError(Exception):
    pass


def record_bytes(records: npt.NDArray[Any]) -> npt.NDArray[np.float64]:
    """The IP bytes each record stands for: an aggregate's packets' in all (version 3), else
    the packet's length."""
    column = "bytes" if "bytes" in (records.dtype.names or ()) else "len"
    return records[column].astype(np.float64)


def record_packets(records: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
    """The packets each record stands for: an aggregate's segments (version 3), else 1."""
    if "segs" in (records.dtype.names or ()):
        return records["segs"].astype(np.int64)
    return np.ones(len(records), dtype=np.int64)


def read_packet_log(path: Path) -> tuple[dict[str, Any], npt.NDArray[Any]]:
    """(configuration header, records) — records are a read-only memory map."""
    header, offset, record = read_header(path)
    count = (path.stat().st_size - offset) // record.itemsize
    if count == 0:
        return header, np.zeros(0, dtype=record)
    records = np.memmap(path, dtype=record, mode="r", offset=offset, shape=(count,))
    return header, records


# Records analysed at a time: memory stays bounded whatever the log's length.
CHUNK_RECORDS = 1 << 20
# Timing errors (µs) are counted in a histogram up to this value; larger ones in the last bin.
HISTOGRAM_US = 100_000


class _Histogram:
    """Exact percentiles of non-negative integer microseconds in bounded memory."""

    def __init__(self) -> None:
        self.counts = np.zeros(HISTOGRAM_US + 1, dtype=np.int64)
        self.total = 0
        self.sum = 0.0

    def add(self, values_us: npt.NDArray[np.int64]) -> None:
        clipped = np.clip(values_us, 0, HISTOGRAM_US)
        self.counts += np.bincount(clipped, minlength=HISTOGRAM_US + 1)
        self.total += len(values_us)
        self.sum += float(values_us.sum())

    def percentile(self, p: float) -> float | None:
        """As metrics.percentile over the values counted (the same ranks)."""
        if self.total == 0:
            return None
        lo, hi, f = m.percentile_ranks(self.total, p)
        # The value of 0-based rank r: the first bin whose cumulative count exceeds r.
        lo_v, hi_v = np.searchsorted(np.cumsum(self.counts), [lo, hi], side="right")
        return float(lo_v + f * (hi_v - lo_v))

    def mean(self) -> float | None:
        return self.sum / self.total if self.total else None


def read_header(path: Path) -> tuple[dict[str, Any], int, np.dtype[Any]]:
    """(the emulator's configuration, the offset of the first record, the record's type)."""
    with path.open("rb") as handle:
        head = handle.read(12)
        if len(head) < 12 or head[:8] not in RECORDS:
            raise PacketLogError(f"{path.name} is not a ccbench-link packet log")
        size = int.from_bytes(head[8:12], "little")
        return json.loads(handle.read(size)), 12 + size, RECORDS[head[:8]]


def iter_chunks(path: Path) -> tuple[dict[str, Any], int, Iterator[npt.NDArray[Any]]]:
    """(header, record count, chunks): reads CHUNK_RECORDS at a time into fresh arrays, so
    the resident memory stays bounded however long the log is."""
    header, offset, record = read_header(path)
    count = (path.stat().st_size - offset) // record.itemsize

    def chunks() -> Iterator[npt.NDArray[Any]]:
        with path.open("rb") as handle:
            handle.seek(offset)
            for _ in range(0, count, CHUNK_RECORDS):
                yield np.fromfile(handle, dtype=record, count=CHUNK_RECORDS)

    return header, count, chunks()


class LogFlow(TypedDict):
    """One flow's packets at the bottleneck (`queue_metrics`'s `per_flow`)."""

    arrivals: float
    drops: float
    loss_rate: float | None
    queue_delay_mean_s: float | None


class LogSeries(TypedDict):
    """The down-sampled queue: each sampled arrival's time (Unix s), the queue it found (plus
    itself when it joined), the drops so far and its queueing delay in s (None when dropped)."""

    ts: list[float]
    qlen_pkts: list[int]
    drops: list[int]
    queue_delay_s: list[float | None]


class LogQueueMetrics(TypedDict):
    """What `queue_metrics` computes from the packet log (see there)."""

    utilization: float | None
    queue_mean_pkts: float | None
    queue_max_pkts: float | None
    queue_max_bytes: float | None
    queue_delay_mean_s: float | None
    drops: int
    full_drops: int
    loss_rate: float | None
    busy_rate_bps: float | None
    spacing_error_us_p99: float | None
    release_late_us_mean: float | None
    release_late_us_p50: float | None
    release_late_us_p99: float | None
    per_flow: list[LogFlow] | None
    series: LogSeries


def _seconds(microseconds: float | None) -> float | None:
    return microseconds / 1e6 if microseconds is not None else None


def queue_metrics_from_file(
    path: Path,
    start_s: float,
    end_s: float,
    capacity_bps: float,
    senders: list[tuple[str, int] | None] | None = None,
) -> LogQueueMetrics:
    """queue_metrics over a log file, streamed. Release lateness is measured against each
    packet's scheduled release (version 2); a version 1 log has none, so it is measured
    against departure + the configured delay, which only holds without jitter."""
    header, count, chunks = iter_chunks(path)
    delay_us: int | None = int(header.get("delay_us", 0))
    if int(header.get("jitter_us", 0)):
        delay_us = None  # version 1 with jitter: the schedule is not in the log
    return queue_metrics(
        chunks, start_s, end_s, capacity_bps, delay_us, total=count, senders=senders
    )


def sender_key(address: str, port: int) -> int:
    """A flow's key in the log: src as stored (network-order bytes read little-endian), port."""
    return (int.from_bytes(socket.inet_aton(address), "little") << 16) | port


class _PerFlow:
    """Arrivals, drops and queueing delay per flow, identified by the sender's address and
    port; packets of no listed flow (ACKs of reverse flows, pings) are counted apart."""

    def __init__(self, senders: list[tuple[str, int] | None]) -> None:
        keyed = [(sender_key(*s), i) for i, s in enumerate(senders) if s is not None]
        keyed.sort()
        self.n = len(senders)
        self.keys = np.array([k for k, _ in keyed], dtype=np.uint64)
        self.index = np.array([i for _, i in keyed], dtype=np.int64)
        self.arrivals = np.zeros(self.n + 1)
        self.drops = np.zeros(self.n + 1)
        self.wait_sum = np.zeros(self.n + 1)
        self.wait_count = np.zeros(self.n + 1)

    def flow_of(self, chunk: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
        key = (chunk["src"].astype(np.uint64) << np.uint64(16)) | chunk["sport"].astype(np.uint64)
        if not len(self.keys):
            return np.full(len(chunk), self.n, dtype=np.int64)
        at = np.clip(np.searchsorted(self.keys, key), 0, len(self.keys) - 1)
        return np.where(self.keys[at] == key, self.index[at], self.n)

    def result(self) -> list[LogFlow]:
        return [
            {
                "arrivals": float(self.arrivals[i]),
                "drops": float(self.drops[i]),
                "loss_rate": m.loss_rate(self.drops[i], self.arrivals[i]),
                "queue_delay_mean_s": _seconds(m.mean_of(self.wait_sum[i], self.wait_count[i])),
            }
            for i in range(self.n)
        ]


def queue_metrics(
    records: npt.NDArray[Any] | Iterable[npt.NDArray[Any]],
    start_s: float,
    end_s: float,
    capacity_bps: float,
    delay_us: int | None = 0,
    series_points: int = 2000,
    total: int | None = None,
    senders: list[tuple[str, int] | None] | None = None,
) -> LogQueueMetrics:
    """Exact bottleneck metrics over the window [start_s, end_s) (Unix seconds), streaming over
    the log in chunks.

    queue length = packets that arrived and have not finished transmission (as the emulator
    counts its buffer); queue_mean_pkts is its time average over the window, i.e.
    sum_i n_i |[max(a_i, w0), min(d_i, w1)]| / (w1 - w0) over forwarded records i of n_i
    packets; the queue peaks right after an arrival, at the length it saw plus itself;
    queueing delay of a record = departure - arrival - its own transmission time at
    capacity_bps, counted once per packet it stands for; utilization counts the IP bytes of
    the records that departed in the window; arrivals, drops and loss count packets, an
    aggregate as its segments (the formulas: `metrics`). Timing
    fidelity: release lateness = release - due (the model's release time, `due_us`), or in
    records without it release - departure - `delay_us` (None: not measurable); spacing error
    = |release gap - departure gap| of back-to-back packets (the next arrived before the
    previous one had left). With `senders` (each flow's sender address and port, or None),
    also per flow: arrivals, drops, loss rate and mean queueing delay of its packets that
    arrived in the window (`per_flow`)."""
    w0, w1 = int(start_s * 1e6), int(end_s * 1e6)
    window_s = (w1 - w0) / 1e6
    arrivals = drops = full_drops = 0
    queue_integral = sent_bytes = busy_bytes = busy_us = 0.0
    wait_sum, wait_count = 0.0, 0
    max_queue: float | None = None
    max_bytes: float | None = None
    late, spacing = _Histogram(), _Histogram()
    previous: tuple[int, int, int] | None = None  # (departure, release, arrival) carried over
    if isinstance(records, np.ndarray):
        total = len(records)
        array = records
        chunks: Iterable[npt.NDArray[Any]] = (
            array[b : b + CHUNK_RECORDS] for b in range(0, len(array), CHUNK_RECORDS)
        )
    else:
        chunks = records
    step = max(1, -(-(total or 0) // series_points))
    sample_t: list[int] = []
    sample_q: list[int] = []
    sample_drops: list[int] = []
    sample_delay: list[float | None] = []
    drops_before = 0
    begin = 0
    per_flow = _PerFlow(senders) if senders is not None else None
    for chunk in chunks:
        arrival = chunk["arrival_us"].astype(np.int64)
        fate = chunk["fate"]
        forwarded = fate == FORWARDED
        packets = record_packets(chunk)
        in_window = (arrival >= w0) & (arrival < w1)
        arrivals += int(packets[in_window].sum())
        dropped = in_window & ~forwarded
        drops += int(packets[dropped].sum())
        full_drops += int(packets[in_window & (fate == DROPPED_FULL)].sum())

        if per_flow is not None:
            flow_of = per_flow.flow_of(chunk)
            width = per_flow.n + 1
            per_flow.arrivals += np.bincount(
                flow_of[in_window], weights=packets[in_window], minlength=width
            )
            per_flow.drops += np.bincount(
                flow_of[dropped], weights=packets[dropped], minlength=width
            )
            forwarded_flow = flow_of[forwarded]
        fw = chunk[forwarded]
        a = fw["arrival_us"].astype(np.int64)
        d = fw["departure_us"].astype(np.int64)
        r = fw["release_us"].astype(np.int64)
        length = record_bytes(fw)
        n = packets[forwarded]
        held = np.clip(np.minimum(d, w1) - np.maximum(a, w0), 0, None)
        queue_integral += float((held * n).sum())
        departed = (d >= w0) & (d < w1)
        sent_bytes += float(length[departed].sum())
        arrived = (a >= w0) & (a < w1)
        if np.any(arrived):
            peak = float((fw["qlen_pkts"][arrived].astype(np.int64) + n[arrived]).max())
            max_queue = peak if max_queue is None else max(max_queue, peak)
            peak_b = float((fw["qlen_bytes"][arrived].astype(np.float64) + length[arrived]).max())
            max_bytes = peak_b if max_bytes is None else max(max_bytes, peak_b)
            waits = m.queueing_delay_us((d - a)[arrived], length[arrived], capacity_bps)
            wait_sum += float((waits * n[arrived]).sum())
            wait_count += int(n[arrived].sum())
            if per_flow is not None:
                owner = forwarded_flow[arrived]
                per_flow.wait_sum += np.bincount(owner, weights=waits * n[arrived], minlength=width)
                per_flow.wait_count += np.bincount(owner, weights=n[arrived], minlength=width)
        if "due_us" in fw.dtype.names:
            late.add((r - fw["due_us"].astype(np.int64))[departed])
        elif delay_us is not None:
            late.add((r - d - int(delay_us))[departed])
        # Back-to-back pairs, including the one across the chunk boundary.
        if previous is not None and len(fw):
            d = np.concatenate([[previous[0]], d])
            r = np.concatenate([[previous[1]], r])
            a = np.concatenate([[previous[2]], a])
            length = np.concatenate([[0.0], length])
        if len(d) > 1:
            backlogged = (a[1:] < d[:-1]) & (d[:-1] >= w0) & (d[1:] < w1)
            gaps = (r[1:] - r[:-1])[backlogged]
            busy_us += float(gaps.sum())
            busy_bytes += float(length[1:][backlogged].sum())
            spacing.add(np.abs(gaps - (d[1:] - d[:-1])[backlogged]))
        if len(d):
            previous = (int(d[-1]), int(r[-1]), int(a[-1]))
        # Down-sampled queue series: the queue each sampled arrival found, and drops so far.
        picked = np.arange((-begin) % step, len(chunk), step)
        cumulative_drops = drops_before + np.cumsum(np.where(forwarded, 0, packets))
        sample_t += arrival[picked].tolist()
        joined = np.where(forwarded, packets, 0)
        sample_q += (chunk["qlen_pkts"][picked].astype(np.int64) + joined[picked]).tolist()
        sample_drops += cumulative_drops[picked].tolist()
        sampled = chunk[picked]
        waits = m.queueing_delay_us(
            sampled["departure_us"].astype(np.float64) - sampled["arrival_us"].astype(np.float64),
            record_bytes(sampled),
            capacity_bps,
        )
        sample_delay += [
            w / 1e6 if kept else None
            for w, kept in zip(waits.tolist(), forwarded[picked].tolist(), strict=True)
        ]
        drops_before = int(cumulative_drops[-1]) if len(chunk) else drops_before
        begin += len(chunk)
    order = np.argsort(sample_t, kind="stable")
    return {
        "utilization": m.utilization(sent_bytes, window_s, capacity_bps),
        "queue_mean_pkts": m.time_mean(queue_integral, w1 - w0),
        "queue_max_pkts": max_queue,
        "queue_max_bytes": max_bytes,
        "queue_delay_mean_s": _seconds(m.mean_of(wait_sum, wait_count)),
        "drops": drops,
        "full_drops": full_drops,
        "loss_rate": m.loss_rate(drops, arrivals),
        "busy_rate_bps": m.rate_bps_us(busy_bytes, busy_us) if busy_us >= 1e6 else None,
        "spacing_error_us_p99": spacing.percentile(99),
        "release_late_us_mean": late.mean(),
        "release_late_us_p50": late.percentile(50),
        "release_late_us_p99": late.percentile(99),
        "per_flow": per_flow.result() if per_flow is not None else None,
        "series": {
            "ts": [round(sample_t[k] / 1e6, 6) for k in order],
            "qlen_pkts": [sample_q[k] for k in order],
            "drops": [sample_drops[k] for k in order],
            "queue_delay_s": [sample_delay[k] for k in order],
        },
    }


class LogDelays(TypedDict):
    """What a delay line with jitter did (`delays_from_file`), in µs."""

    packets: int
    # The jitter each packet was held for: scheduled release - end of transmission - the
    # configured delay (the drawn jitter, or more when the packet before it left later).
    jitter_us_mean: float | None
    jitter_us_p99: float | None
    release_late_us_p99: float | None


def delays_from_file(path: Path) -> LogDelays:
    """The jitter the forwarded packets of a log got, and how late they left (version 2 logs:
    `due_us` holds each packet's schedule)."""
    header, _, chunks = iter_chunks(path)
    delay_us = int(header.get("delay_us", 0))
    held, late = _Histogram(), _Histogram()
    for chunk in chunks:
        if "due_us" not in (chunk.dtype.names or ()):
            raise PacketLogError(f"{path.name} holds no scheduled release times (version 1)")
        fw = chunk[chunk["fate"] == FORWARDED]
        due = fw["due_us"].astype(np.int64)
        held.add(due - fw["departure_us"].astype(np.int64) - delay_us)
        late.add(fw["release_us"].astype(np.int64) - due)
    return {
        "packets": held.total,
        "jitter_us_mean": held.mean(),
        "jitter_us_p99": held.percentile(99),
        "release_late_us_p99": late.percentile(99),
    }
