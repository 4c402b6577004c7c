"""A link faster than 1 Gbit/s in the sandbox: the emulator's aggregate mode (one verdict per
GSO/GRO aggregate) chosen from the rate and recorded, the delivered rate, and the per-packet
log exact in bytes: its payload bytes are the bytes the sender sent and the receiver got."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ccbench.analysis.packetlog import (
    FORWARDED,
    queue_metrics_from_file,
    read_packet_log,
    record_bytes,
    record_packets,
    sender_key,
)
from ccbench.settings import get_settings
from schemas import ExperimentSpec
from workers.planning import plan_for_spec
from workers.testbeds.mininet.runner import MininetTestbed

RATE_BPS = 5e9
SIZE_BYTES = 1_500_000_000  # 2.4 s at 5 Gbit/s
DURATION_S = 5.0
# Every data segment's headers: IPv4 20 + TCP 20 + timestamps 12 (Linux's default).
HEADERS = 52


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def spec(mode: str = "auto", rate: str = f"{RATE_BPS:g}bit", **bottleneck: Any) -> ExperimentSpec:
    return ExperimentSpec.model_validate(
        {
            "name": "aggregate-link",
            "topology": {
                "kind": "dumbbell",
                "bottleneck": {
                    "rate": rate,
                    "delay": "5ms",
                    "buffer": "1bdp",
                    "emulator_mode": mode,
                    **bottleneck,
                },
            },  # fmt: skip
            "flows": [
                {"algorithm": "cubic", "traffic": {"model": "fixed", "size": f"{SIZE_BYTES}B"}}
            ],
            "duration": f"{DURATION_S:g}s",
            "measurement": {"skip_start": "0.5s"},
            "seed": 7,
        }
    )


def test_auto_picks_aggregates_above_1_gbit_only() -> None:
    settings = get_settings()
    for rate, mode in (("1Gbit", "packet"), ("1.5Gbit", "aggregate"), ("10Gbit", "aggregate")):
        plan = plan_for_spec(spec(rate=rate), run_id="x", out_dir=Path("x"), settings=settings)
        assert plan.emulator_mode == mode, rate
    forced = plan_for_spec(spec("packet"), run_id="x", out_dir=Path("x"), settings=settings)
    assert forced.emulator_mode == "packet"
    forced = plan_for_spec(spec("aggregate", "100Mbit"), run_id="x", out_dir=Path("x"),
                           settings=settings)  # fmt: skip
    assert forced.emulator_mode == "aggregate"
    with_tc = plan_for_spec(spec(link_mechanism="tc"), run_id="x", out_dir=Path("x"),
                            settings=settings)  # fmt: skip
    assert with_tc.emulator_mode == "packet"


def test_emulator_mode_is_refused_where_it_cannot_apply() -> None:
    with pytest.raises(ValueError, match="emulator_mode applies to link_mechanism emulator"):
        spec("aggregate", link_mechanism="tc")


@pytest.mark.root
def test_a_5_gbit_link_delivers_its_rate_with_an_exact_log(tmp_path: Path) -> None:
    plan = plan_for_spec(spec(), run_id="aggregate-link", out_dir=tmp_path, settings=get_settings())
    assert plan.emulator_mode == "aggregate"
    result = MininetTestbed().run(
        plan, events=lambda _e: None, cancel=lambda: False, deadline_s=DURATION_S + 60
    )
    assert result.status == "done", result.describe()
    provenance = json.loads((tmp_path / "provenance.json").read_text())
    assert provenance["emulator_mode"] == "aggregate" and provenance["offloads"] == "on"
    assert provenance["links"]["link 0"]["mode"] == "aggregate"

    header, log = read_packet_log(tmp_path / "link-0-data.bin")
    assert (header["mode"], header["mtu"]) == ("aggregate", 1500)
    records = np.asarray(log)
    summary = next(r for r in lines(tmp_path / "flow-0.send.jsonl") if r["type"] == "summary")
    address, port = summary["local"].rsplit(":", 1)
    key = (records["src"].astype(np.uint64) << np.uint64(16)) | records["sport"]
    flow = records[key == np.uint64(sender_key(address, int(port)))]
    # The SYN (the flow's first packet, with options) carries no payload; every later
    # segment has the same headers.
    data = flow[1:]
    payload = record_bytes(data) - HEADERS * record_packets(data)
    assert np.all(payload >= 0)
    aggregated = data["segs"] > 1
    assert aggregated.any(), "no aggregate reached the emulator"
    forwarded = data["fate"] == FORWARDED
    received = sum(r["bytes"] for r in lines(tmp_path / "flow-0.recv.jsonl") if r["type"] == "recv")
    sent = int(summary["bytes_sent"])
    print(f"{len(data)} records for {int(record_packets(data).sum())} packets "
          f"({int(aggregated.sum())} aggregates); sent {sent}, received {received}, "
          f"forwarded payload {int(payload[forwarded].sum())}, dropped "
          f"{int(payload[~forwarded].sum())}")  # fmt: skip
    # Exact in bytes: every byte the sender sent (retransmissions included) is in the log,
    # forwarded or dropped; the receiver got all of the transfer.
    assert summary["completed"] and received == SIZE_BYTES
    assert int(payload.sum()) == sent
    if forwarded.all():
        assert int(payload.sum()) == received
    else:  # what was forwarded holds the transfer, plus retransmissions of what was dropped
        retransmitted = int(payload[~forwarded].sum())
        assert received <= int(payload[forwarded].sum()) <= received + retransmitted

    # The delivered rate while the queue was backlogged, from the actual releases.
    t0 = float(provenance["start_ts"])
    queue = queue_metrics_from_file(tmp_path / "link-0-data.bin", t0, t0 + DURATION_S, RATE_BPS)
    busy = queue["busy_rate_bps"]
    assert busy is not None and busy / RATE_BPS >= 0.97, busy
    stats = json.loads((tmp_path / "link-0-data.json").read_text())
    assert stats["aggregates"] > 0 and stats["segments"] > stats["packets"]
    assert stats["overruns"] == 0
