"""Reading the state trace of ccbench's BPF controllers while a run lasts.

Every controller object writes 64-byte samples (`struct ccb_sample` in
agents/kernel/bpf/ccbench_cc.h) into a BPF ring buffer once per round trip and at each
congestion event. The worker maps each ring buffer of its run (found by the per-run name
`workers.bpf.trace_map_name` gives it), consumes it every `poll_s`, and writes one JSON line per
sample to `<run_dir>/bpf-trace.jsonl`; the analysis assigns samples to flows by the sender's
address and port.

The ring buffer is consumed the way libbpf does: the consumer position page is mapped
read-write, the producer position page and the data area read-only, the data area twice in a
row so that a record that wraps around is contiguous."""

from __future__ import annotations

import ctypes
import json
import mmap
import os
import socket
import struct
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from workers import bpf

_SYS_BPF = 321  # x86_64
_BPF_MAP_GET_FD_BY_ID = 14
_BUSY = 1 << 31
_DISCARD = 1 << 30
_HEADER = 8
SAMPLE = struct.Struct("<QIIHHIII4q")  # struct ccb_sample
EVENTS = ("round", "loss", "timeout", "change")
INFINITE_SSTHRESH = 0x7FFFFFFF
TRACE_FILE = "bpf-trace.jsonl"

_libc = ctypes.CDLL(None, use_errno=True)


def _map_fd(map_id: int) -> int:
    attr = ctypes.create_string_buffer(struct.pack("<III", map_id, 0, 0), 16)
    fd = _libc.syscall(_SYS_BPF, _BPF_MAP_GET_FD_BY_ID, attr, 12)
    if fd < 0:
        err = ctypes.get_errno()
        raise bpf.BpfError(f"cannot open BPF map {map_id}: {os.strerror(err)}")
    return int(fd)


class RingBuffer:
    """Consumer side of one BPF_MAP_TYPE_RINGBUF map."""

    def __init__(self, map_id: int, size: int) -> None:
        if size <= 0 or size & (size - 1):
            raise bpf.BpfError(f"ring buffer size {size} is not a power of two")
        self.size = size
        fd = _map_fd(map_id)
        try:
            page = mmap.PAGESIZE
            self._consumer = mmap.mmap(fd, page, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
            self._producer = mmap.mmap(
                fd, page + 2 * size, mmap.MAP_SHARED, mmap.PROT_READ, offset=page
            )
        finally:
            os.close(fd)  # the mappings keep the map alive
        self._page = page

    def drain(self) -> list[bytes]:
        """Every record committed since the last call, in order."""
        out = []
        (consumer,) = struct.unpack_from("<Q", self._consumer, 0)
        (producer,) = struct.unpack_from("<Q", self._producer, 0)
        while consumer < producer:
            at = self._page + (consumer & (self.size - 1))
            (length,) = struct.unpack_from("<I", self._producer, at)
            if length & _BUSY:
                break  # reserved, not yet submitted
            body = length & ~(_BUSY | _DISCARD)
            if not length & _DISCARD:
                out.append(bytes(self._producer[at + _HEADER : at + _HEADER + body]))
            consumer += (body + _HEADER + 7) & ~7
            struct.pack_into("<Q", self._consumer, 0, consumer)
        return out

    def close(self) -> None:
        self._consumer.close()
        self._producer.close()


def state_values(fields: list[str], raw: tuple[int, ...]) -> dict[str, float]:
    """Name the algorithm's variables; `<name>_x256` is fixed point and becomes `<name>`."""
    values: dict[str, float] = {}
    for name, value in zip(fields, raw, strict=False):
        if name.endswith("_x256"):
            values[name.removesuffix("_x256")] = value / 256
        else:
            values[name] = value
    return values


def decode(
    record: bytes, controller: str, fields: list[str], clock_offset_s: float
) -> dict[str, Any]:
    t_ns, seq, saddr, sport, event, cwnd, ssthresh, srtt_us, *raw = SAMPLE.unpack_from(record)
    return {
        "ts": round(t_ns / 1e9 + clock_offset_s, 6),
        "controller": controller,
        "seq": seq,
        "saddr": socket.inet_ntoa(struct.pack("<I", saddr)),
        "sport": sport,
        "event": EVENTS[event] if event < len(EVENTS) else str(event),
        "cwnd_pkts": cwnd,
        "ssthresh_pkts": None if ssthresh >= INFINITE_SSTHRESH else ssthresh,
        **({"ssthresh_invalid": True} if ssthresh > INFINITE_SSTHRESH else {}),
        "srtt_s": srtt_us / 1e6,
        "state": state_values(fields, tuple(raw)),
    }


@dataclass
class _Source:
    controller: str
    fields: list[str]
    ring: RingBuffer
    samples: int = 0
    next_seq: int | None = None
    lost: int = 0


@dataclass
class TraceRecorder:
    """Consumes the trace ring buffers of a run's controllers on a thread until `stop()`."""

    out: Path
    poll_s: float = 0.05
    _sources: list[_Source] = field(default_factory=list)
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _file: IO[str] | None = None
    error: str | None = None

    def add(self, controller: str, object_path: Path) -> None:
        name = bpf.trace_map_name(controller)
        maps = [m for m in bpf.maps() if m.get("name") == name and m.get("type") == "ringbuf"]
        if len(maps) != 1:
            raise bpf.BpfError(f"expected one trace ring buffer {name}, found {len(maps)}")
        ring = RingBuffer(int(maps[0]["id"]), int(maps[0]["max_entries"]))
        self._sources.append(_Source(controller, bpf.state_fields(object_path), ring))

    def start(self) -> None:
        self._file = self.out.open("w")
        self._offset = time.time() - time.monotonic()  # bpf_ktime_get_ns is CLOCK_MONOTONIC
        self._thread = threading.Thread(target=self._loop, name="bpf-trace", daemon=True)
        self._thread.start()

    def _consume(self) -> None:
        assert self._file is not None
        for source in self._sources:
            for record in source.ring.drain():
                sample = decode(record, source.controller, source.fields, self._offset)
                if source.next_seq is not None and sample["seq"] != source.next_seq:
                    source.lost += (sample["seq"] - source.next_seq) % 2**32
                source.next_seq = (sample["seq"] + 1) % 2**32
                source.samples += 1
                self._file.write(json.dumps(sample) + "\n")

    def _loop(self) -> None:
        try:
            while not self._stop.wait(self.poll_s):
                self._consume()
        except Exception as exc:  # noqa: BLE001 - reported in the run's provenance
            self.error = f"{type(exc).__name__}: {exc}"

    def stop(self) -> dict[str, Any]:
        """Stop, drain what is left, and return per-controller counts."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        try:
            if self._file is not None and self.error is None:
                self._consume()
        finally:
            if self._file is not None:
                self._file.close()
            for source in self._sources:
                source.ring.close()
        return {
            "file": self.out.name,
            "error": self.error,
            "controllers": {
                s.controller: {"fields": s.fields, "samples": s.samples, "lost": s.lost}
                for s in self._sources
            },
        }
