"""Queue metrics from the emulator's per-packet log, against a hand-computed case."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from ccbench.analysis.packetlog import (
    MAGIC,
    RECORD,
    RECORDS,
    PacketLogError,
    queue_metrics,
    queue_metrics_from_file,
    read_packet_log,
)

T0 = 1_800_000_000_000_000  # Unix µs


def write_log(
    path: Path,
    rows: list[tuple[int, int, int, int, int, int]],
    *,
    delay_us: int = 0,
    jitter_us: int = 0,
    dues: list[int] | None = None,
    magic: bytes = MAGIC,
    segs: list[int] | None = None,
) -> None:
    """rows: (arrival, departure, release, qlen_pkts, len, fate), times relative to T0 in µs;
    a forwarded packet was due at departure + delay_us unless `dues` says when. `segs`: the
    packets each row stands for (an aggregate of `len` bytes in all; default 1)."""
    dtype = RECORDS[magic]
    records = np.zeros(len(rows), dtype=dtype)
    for i, (arrival, departure, release, qlen, length, fate) in enumerate(rows):
        if "segs" in dtype.names:
            records[i]["bytes"] = length
            records[i]["segs"] = segs[i] if segs is not None else 1
            length = min(length, 65_535)
        records[i]["arrival_us"] = T0 + arrival
        records[i]["departure_us"] = T0 + departure if fate == 0 else 0
        records[i]["release_us"] = T0 + release if fate == 0 else 0
        records[i]["qlen_pkts"] = qlen
        records[i]["qlen_bytes"] = qlen * 1500
        records[i]["len"] = length
        records[i]["fate"] = fate
        if "due_us" in dtype.names and fate == 0:
            due = dues[i] if dues is not None else departure + delay_us
            records[i]["due_us"] = T0 + due
    header = json.dumps(
        {"rate": {"bps": 12_000_000}, "delay_us": delay_us, "jitter_us": jitter_us}
    ).encode()
    path.write_bytes(magic + len(header).to_bytes(4, "little") + header + records.tobytes())


def test_hand_computed_queue(tmp_path: Path) -> None:
    # 12 Mbit/s: a 1500-byte packet takes 1000 µs. Three arrive at once and a fourth is
    # dropped because the (3-packet) buffer is full.
    path = tmp_path / "link.bin"
    write_log(
        path,
        [
            (0, 1000, 1010, 0, 1500, 0),
            (0, 2000, 2030, 1, 1500, 0),
            (0, 3000, 3000, 2, 1500, 0),
            (0, 0, 0, 3, 1500, 1),
        ],
    )
    header, records = read_packet_log(path)
    assert header["rate"]["bps"] == 12_000_000 and len(records) == 4
    m = queue_metrics(records, T0 / 1e6, (T0 + 4000) / 1e6, 12e6)
    # Queue 3, 2, 1, 0 packets for 1 ms each.
    assert m["queue_mean_pkts"] == pytest.approx(1.5)
    assert m["queue_max_pkts"] == 3
    assert (m["drops"], m["full_drops"], m["loss_rate"]) == (1, 1, 0.25)
    assert m["utilization"] == pytest.approx(8 * 4500 / (12e6 * 0.004))
    # Waiting behind others: 0, 1 and 2 ms.
    assert m["queue_delay_mean_s"] == pytest.approx(0.001)
    assert m["busy_rate_bps"] is None  # under a second of backlog: not measurable
    assert m["release_late_us_p50"] == 10  # lateness 10, 30, 0 µs
    assert m["release_late_us_mean"] == pytest.approx(40 / 3)
    # Back-to-back spacing: released 1020 and 970 µs apart instead of 1000 (errors 20, 30;
    # percentiles interpolate between ranks as metrics.percentile: 20 + 0.99 x 10).
    assert m["spacing_error_us_p99"] == pytest.approx(29.9)
    # The series: the queue each arrival found (plus itself when it joined), drops so far.
    assert m["series"]["qlen_pkts"] == [1, 2, 3, 3]
    assert m["series"]["drops"] == [0, 0, 0, 1]
    # Each sampled packet's queueing delay (the figures' CDF); none for the dropped one.
    assert m["series"]["queue_delay_s"] == pytest.approx([0.0, 0.001, 0.002, None])


def test_per_flow_loss_and_queueing_delay_by_sender(tmp_path: Path) -> None:
    """The same four packets as above; flow 0 (10.1.1.1:40000) sent the first and third, flow
    1 (10.1.1.2:40001) the second and the dropped fourth; flow 2 sent nothing that was logged
    and flow 3 has no known sender."""
    path = tmp_path / "link.bin"
    write_log(
        path,
        [
            (0, 1000, 1010, 0, 1500, 0),
            (0, 2000, 2030, 1, 1500, 0),
            (0, 3000, 3000, 2, 1500, 0),
            (0, 0, 0, 3, 1500, 1),
        ],
    )
    _, log = read_packet_log(path)
    records = np.array(log)
    for i, (address, port) in enumerate([((10, 1, 1, 1), 40000), ((10, 1, 1, 2), 40001)] * 2):
        records[i]["src"] = int.from_bytes(bytes(address), "little")
        records[i]["sport"] = port
    senders = [("10.1.1.1", 40000), ("10.1.1.2", 40001), ("10.1.1.3", 40000), None]
    m = queue_metrics(records, T0 / 1e6, (T0 + 4000) / 1e6, 12e6, senders=senders)
    first, second, silent = m["per_flow"][:3]
    assert (first["arrivals"], first["drops"], first["loss_rate"]) == (2, 0, 0)
    assert first["queue_delay_mean_s"] == pytest.approx(0.001)  # waited 0 and 2 ms
    assert (second["arrivals"], second["drops"], second["loss_rate"]) == (2, 1, 0.5)
    assert second["queue_delay_mean_s"] == pytest.approx(0.001)  # waited 1 ms
    assert silent == {"arrivals": 0, "drops": 0, "loss_rate": None, "queue_delay_mean_s": None}
    assert len(m["per_flow"]) == 4
    assert queue_metrics(records, T0 / 1e6, (T0 + 4000) / 1e6, 12e6)["per_flow"] is None


def test_aggregates_count_as_the_packets_and_bytes_they_stand_for(tmp_path: Path) -> None:
    """The hand-computed queue above with the first three packets as one GSO aggregate (the
    emulator's aggregate mode: it leaves when all 4500 bytes have, at 3 ms) and the dropped
    fourth as an aggregate of two: bytes, packets, drops and loss count what the records
    stand for; the queue holds the aggregate's three packets until it has left."""
    path = tmp_path / "link.bin"
    write_log(
        path,
        [(0, 3000, 3010, 0, 4500, 0), (0, 0, 0, 3, 3000, 1)],
        segs=[3, 2],
    )
    _, records = read_packet_log(path)
    m = queue_metrics(records, T0 / 1e6, (T0 + 4000) / 1e6, 12e6, senders=[("0.0.0.0", 0)])
    assert m["utilization"] == pytest.approx(8 * 4500 / (12e6 * 0.004))
    assert m["queue_max_pkts"] == 3 and m["queue_max_bytes"] == 4500
    assert (m["drops"], m["full_drops"], m["loss_rate"]) == (2, 2, 0.4)
    # Three packets held for 3 ms over the 4 ms window.
    assert m["queue_mean_pkts"] == pytest.approx(2.25)
    # 3 ms from arrival to departure, 3 ms of its own transmission: no waiting, per packet.
    assert m["queue_delay_mean_s"] == pytest.approx(0.0)
    assert m["per_flow"] is not None
    assert (m["per_flow"][0]["arrivals"], m["per_flow"][0]["drops"]) == (5, 2)
    assert m["series"]["qlen_pkts"] == [3, 3]
    assert m["series"]["drops"] == [0, 2]
    # A log of one-packet records gives what a version 2 log of the same packets gives.
    rows = [(0, 1000, 1010, 0, 1500, 0), (0, 2000, 2030, 1, 1500, 0), (0, 0, 0, 2, 1500, 1)]
    write_log(tmp_path / "v3.bin", rows)
    write_log(tmp_path / "v2.bin", rows, magic=b"CCBLINK2")
    v3, v2 = (
        queue_metrics(
            read_packet_log(tmp_path / f"{v}.bin")[1], T0 / 1e6, (T0 + 4000) / 1e6, 12e6
        )  # fmt: skip
        for v in ("v3", "v2")
    )
    assert v3 == v2


def test_histogram_percentiles_are_the_reports_percentiles() -> None:
    """Timing percentiles come from a histogram of whole µs; they follow the one definition
    of metrics.percentile (linear interpolation between closest ranks)."""
    from ccbench.analysis import metrics
    from ccbench.analysis.packetlog import _Histogram

    values = np.random.default_rng(7).geometric(0.01, size=1001).astype(np.int64)
    histogram = _Histogram()
    histogram.add(values[:500])
    histogram.add(values[500:])
    for p in (0, 1, 50, 90, 99, 99.9, 100):
        expected = metrics.percentile([float(v) for v in values], p)
        assert histogram.percentile(p) == pytest.approx(expected), p
    small = _Histogram()
    small.add(np.array([3, 9], dtype=np.int64))
    assert small.percentile(50) == 6.0 and _Histogram().percentile(50) is None


def test_lateness_is_against_each_packets_scheduled_release(tmp_path: Path) -> None:
    """With jitter every packet has its own scheduled release (version 2's due_us): lateness
    is release - due, whatever was drawn. A version 1 log has no schedule: without jitter
    lateness is release - departure - delay, with jitter it cannot be measured."""
    rows = [
        (0, 1000, 21_510, 0, 1500, 0),
        (0, 2000, 25_000, 1, 1500, 0),
        (0, 3000, 25_020, 2, 1500, 0),
    ]
    window = (T0 / 1e6, (T0 + 4000) / 1e6)
    # 20 ms delay plus jitter drawn as 500, 2990 and 0 µs: the third may not leave before the
    # second, so it is due at 24,990 µs too. Late 10, 10 and 30 µs.
    path = tmp_path / "v2.bin"
    write_log(path, rows, delay_us=20_000, jitter_us=3000, dues=[21_500, 24_990, 24_990])
    late = queue_metrics_from_file(path, *window, 12e6)
    assert late["release_late_us_p50"] == 10
    assert late["release_late_us_mean"] == pytest.approx(50 / 3)
    assert read_packet_log(path)[1].dtype == RECORD
    # The same releases in a version 1 log without jitter: against departure + 20 ms.
    v1 = tmp_path / "v1.bin"
    write_log(v1, rows, delay_us=20_000, magic=b"CCBLINK1")
    late = queue_metrics_from_file(v1, *window, 12e6)
    assert late["release_late_us_p50"] == 2020
    assert late["release_late_us_mean"] == pytest.approx((510 + 3000 + 2020) / 3)
    # ... and with jitter, whose draws a version 1 log does not hold: not measurable.
    write_log(v1, rows, delay_us=20_000, jitter_us=3000, magic=b"CCBLINK1")
    late = queue_metrics_from_file(v1, *window, 12e6)
    assert late["release_late_us_p99"] is None and late["queue_mean_pkts"] == 1.5


def test_not_a_packet_log(tmp_path: Path) -> None:
    (tmp_path / "x.bin").write_bytes(b"nope")
    with pytest.raises(PacketLogError, match="not a ccbench-link packet log"):
        read_packet_log(tmp_path / "x.bin")


def test_chunked_analysis_matches_the_whole_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Streaming in chunks (bounded memory) gives the same numbers as one pass."""
    from ccbench.analysis import packetlog

    rows = []
    departure = 0
    for k in range(500):
        arrival = k * 700  # faster than 1000 µs per packet: a queue builds, then drops
        if k % 7 == 3:
            rows.append((arrival, 0, 0, 5, 1500, 1))
            continue
        departure = max(arrival, departure) + 1000
        rows.append((arrival, departure, departure + 5 + k % 3, 2, 1500, 0))
    path = tmp_path / "link.bin"
    write_log(path, rows)
    _, records = read_packet_log(path)
    window = (T0 / 1e6 + 0.01, T0 / 1e6 + 0.3)
    senders: list[tuple[str, int] | None] = [("0.0.0.0", 0)]  # every row's src and port
    whole = queue_metrics(records, *window, 12e6, senders=senders)
    monkeypatch.setattr(packetlog, "CHUNK_RECORDS", 37)
    chunked = queue_metrics(records, *window, 12e6, senders=senders)
    assert whole.pop("series") and chunked.pop("series")
    [whole_flow], [chunked_flow] = whole.pop("per_flow"), chunked.pop("per_flow")
    assert chunked == pytest.approx(whole)
    assert chunked_flow == pytest.approx(whole_flow)
    assert whole_flow["loss_rate"] == pytest.approx(whole["loss_rate"])
