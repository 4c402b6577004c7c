"""Unit-bearing values: a spec says `10Mbit`, `20ms`, `64KB`, `25pkt`, `0.25bdp`; models hold SI
base units (bit/s, seconds, bytes) and serialise them as plain numbers, so a stored spec is
unambiguous.

A quantity needs its unit: a bare number is refused ("add a unit, e.g. 20ms"), since `delay: 20`
(20 s?) or `rate: 10` (10 bit/s?) would silently mean something else than meant. Stored specs,
which hold SI numbers, validate again with the context `SI_NUMBERS`.

Prefixes are decimal (k = 1000) as in networking; binary sizes use KiB/MiB/GiB. Rates in bytes
per second (`MB/s`, `MBps`) are converted exactly (x 8); `mbps` is refused as ambiguous (tc reads
it as megabytes per second, most people as megabits). Every quantity has physical bounds, given
in its JSON Schema description and checked here."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import (
    PlainSerializer,
    PlainValidator,
    SerializationInfo,
    ValidationInfo,
    WithJsonSchema,
)

# Validation context of stored (normalised) specs: bare numbers are SI values.
SI_NUMBERS: dict[str, Any] = {"si_numbers": True}
# Serialisation context that writes every quantity with its SI unit ("0.02s", "1e7bit"), so the
# document validates again without SI_NUMBERS (a matrix's base with user-given axis values).
WITH_UNITS: dict[str, Any] = {"with_units": True}

_NUMBER = r"(?P<num>[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)\s*"
_BITS = {"": 1.0, "k": 1e3, "K": 1e3, "m": 1e6, "M": 1e6, "g": 1e9, "G": 1e9}
# bit/s: `bit`, `bit/s`, `bps` with a prefix. Lowercase m and g only before `bit` (tc's
# spelling); before `bps` only the SI prefixes k, M, G (tc's `mbps` means megabytes/s).
_RATE_UNITS = {
    **{f"{p}bit": f for p, f in _BITS.items()},
    **{f"{p}bit/s": f for p, f in _BITS.items()},
    **{f"{p}bps": _BITS[p] for p in ("", "k", "K", "M", "G")},
}
_BYTE_PREFIXES = {"": 1, "k": 1000, "K": 1000, "M": 1000**2, "G": 1000**3}
_BYTE_RATE_UNITS = {
    **{f"{p}B/s": 8.0 * f for p, f in _BYTE_PREFIXES.items()},
    **{f"{p}Bps": 8.0 * f for p, f in _BYTE_PREFIXES.items()},
}
_DURATION_UNITS = {
    "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0, "h": 3600.0, "d": 86400.0
}  # fmt: skip
_SIZE_UNITS = {
    "B": 1,
    "kB": 1000,
    "KB": 1000,
    "MB": 1000**2,
    "GB": 1000**3,
    "TB": 1000**4,
    "KiB": 1024,
    "MiB": 1024**2,
    "GiB": 1024**3,
}

# Physical bounds.
RATE_MIN_BPS = 1e3  # 1 kbit/s
RATE_MAX_BPS = 100e9  # 100 Gbit/s
DELAY_MAX_S = 10.0  # one-way delay, jitter, access delay
SEND_JITTER_MAX_S = 1.0  # the scale of a flow's random per-packet send delay
RUN_MIN_S = 1.0
RUN_MAX_S = 24 * 3600.0
BUFFER_MAX_PKTS = 1_000_000
PACKET_BYTES = 1500  # the packet size of BDP and packet-count conversions
BUFFER_MAX_BYTES = BUFFER_MAX_PKTS * PACKET_BYTES
BDP_MAX = 1000.0
SIZE_MAX_BYTES = 1000**4  # 1 TB: a transfer or a mean transfer size


def _split(value: str, what: str, example: str) -> tuple[float, str]:
    match = re.fullmatch(_NUMBER + r"(?P<unit>[A-Za-zµ/]*)", value.strip())
    if match is None:
        raise ValueError(f"{value!r} is not a {what}: write a number and a unit, e.g. {example}")
    number = float(match["num"])
    if not math.isfinite(number):
        raise ValueError(f"{value!r} is not a finite {what}")
    return number, match["unit"]


def _si_numbers(info: ValidationInfo | None) -> bool:
    return bool(info is not None and info.context and info.context.get("si_numbers"))


def _bare(value: Any, what: str, unit: str, si_numbers: bool) -> float | None:
    """The value of a bare number, when the context allows one; None for a string."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError(f"a {what} is a string with a unit, e.g. 10{unit}")
    if isinstance(value, str):
        return None
    if not si_numbers:
        raise ValueError(f"{value!r} has no unit: add one, e.g. {value:g}{unit}")
    if not math.isfinite(value):
        raise ValueError(f"{value!r} is not a finite {what}")
    return float(value)


@dataclass(frozen=True)
class Bounds:
    """[low, high] in SI units; `low_open` excludes low itself."""

    low: float
    high: float
    low_open: bool = False

    def check(self, number: float, value: Any, what: str, shown: str) -> float:
        below = number <= self.low if self.low_open else number < self.low
        if below or number > self.high:
            low = "above" if self.low_open else "at least"
            raise ValueError(f"{what} {value!r} is out of bounds: {low} {shown}")
        return number


def parse_rate(
    value: Any,
    si_numbers: bool = False,
    bounds: Bounds = Bounds(RATE_MIN_BPS, RATE_MAX_BPS),  # noqa: B008 - a frozen constant
) -> float:
    """`10Mbit` -> 1e7 bit/s; `1MB/s` -> 8e6 bit/s. Bounds: 1 kbit/s to 100 Gbit/s."""
    bps = _bare(value, "rate", "Mbit", si_numbers)
    if bps is None:
        number, unit = _split(value, "rate", "10Mbit, 1.5Gbit, 500kbit")
        if unit in _RATE_UNITS:
            bps = number * _RATE_UNITS[unit]
        elif unit in _BYTE_RATE_UNITS:
            bps = number * _BYTE_RATE_UNITS[unit]
        elif unit.lower() in ("mbps", "gbps"):
            raise ValueError(
                f"{value!r} is ambiguous ({unit} is megabytes/s to tc, megabits/s to most): "
                f"write {number:g}Mbit for bits or {number:g}MB/s for bytes per second"
            )
        elif unit in _SIZE_UNITS:
            raise ValueError(f"{value!r} is a size, not a rate: write {value}/s or use bit units")
        elif not unit:
            raise ValueError(f"{value!r} has no unit: add one, e.g. 10Mbit")
        else:
            raise ValueError(
                f"{value!r} has an unknown rate unit {unit!r}: use bit, kbit, Mbit or Gbit "
                "(or bytes per second: KB/s, MB/s)"
            )
    if bps <= 0:
        raise ValueError(f"rate {value!r} must be greater than 0")
    return bounds.check(bps, value, "rate", "1kbit and at most 100Gbit")


def shown_duration(seconds: float) -> str:
    """A duration in seconds as specs write it, in its largest whole unit: "6h", "90s", "24h"."""
    for unit, length in (("d", 86400), ("h", 3600)):
        if seconds >= 2 * length and seconds % length == 0:  # 24h, not 1d
            return f"{seconds / length:g}{unit}"
    if seconds >= 60 and seconds % 60 == 0:
        return f"{seconds / 60:g}min"
    return f"{seconds:g}s" if seconds >= 1 or seconds == 0 else f"{seconds * 1000:g}ms"


def parse_duration(
    value: Any,
    si_numbers: bool = False,
    bounds: Bounds = Bounds(0.0, RUN_MAX_S),  # noqa: B008 - a frozen constant
) -> float:
    """`20ms` -> 0.02 s. Must be >= 0 and within `bounds`."""
    seconds = _bare(value, "duration", "ms", si_numbers)
    if seconds is None:
        number, unit = _split(value, "duration", "20ms, 1.5s, 500us")
        if not unit:
            raise ValueError(f"{value!r} has no unit: add one, e.g. {value.strip()}ms or s")
        factor = _DURATION_UNITS.get(unit)
        if factor is None:
            raise ValueError(
                f"{value!r} has an unknown time unit {unit!r}: use us, ms, s, min, h or d"
            )
        seconds = number * factor
    if seconds < 0:
        raise ValueError(f"duration {value!r} must not be negative")
    shown = f"{shown_duration(bounds.low)} and at most {shown_duration(bounds.high)}"
    return bounds.check(seconds, value, "duration", shown)


def parse_size(value: Any, si_numbers: bool = False, high: float = SIZE_MAX_BYTES) -> int:
    """`64KB` -> 64000 bytes, `64KiB` -> 65536; at most 1 TB."""
    size = _bare(value, "size", "KB", si_numbers)
    if size is None:
        number, unit = _split(value, "size", "1500B, 64KB, 1MiB")
        if not unit:
            raise ValueError(f"{value!r} has no unit: add one, e.g. {value.strip()}B or KB")
        factor = _SIZE_UNITS.get(unit)
        if factor is None:
            raise ValueError(
                f"{value!r} has an unknown size unit {unit!r}: use B, KB, MB, GB, KiB, MiB, GiB "
                "(bytes; an upper-case B)"
            )
        size = number * factor
    if size <= 0 or size != int(size):
        raise ValueError(f"size {value!r} must be a positive whole number of bytes")
    if size > high:
        raise ValueError(f"size {value!r} is out of bounds: at most {high:.0f} bytes")
    return int(size)


BufferUnit = Literal["pkt", "bytes", "bdp"]


@dataclass(frozen=True)
class Buffer:
    """A bottleneck buffer: packets, bytes, or a fraction of the bandwidth-delay product."""

    value: float
    unit: BufferUnit

    def __str__(self) -> str:
        if self.unit == "pkt":
            return f"{int(self.value)}pkt"
        if self.unit == "bytes":
            return f"{int(self.value)}B"
        return f"{self.value:g}bdp"

    def packets(self, bdp_bytes: float, packet_bytes: int = PACKET_BYTES) -> int | None:
        """The limit in packets, or None when the buffer is given in bytes."""
        if self.unit == "pkt":
            return int(self.value)
        if self.unit == "bdp":
            return max(1, round(self.value * bdp_bytes / packet_bytes))
        return None


def parse_buffer(value: Any) -> Buffer:
    """`25pkt`, `64KB` (bytes), `0.5bdp`; at most 10^6 packets (1.5 GB)."""
    if isinstance(value, Buffer):
        return value
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise ValueError("a buffer is a string such as 25pkt, 64KB or 0.5bdp")
    if not isinstance(value, str):
        raise ValueError(f"{value!r} has no unit: add one, e.g. {value}pkt, 64KB or 0.5bdp")
    number, unit = _split(value, "buffer", "25pkt, 64KB, 0.5bdp")
    if unit.lower() in ("pkt", "pkts", "p"):
        if number < 1 or number != int(number):
            raise ValueError(f"buffer {value!r} must be a whole number of packets, at least 1")
        if number > BUFFER_MAX_PKTS:
            raise ValueError(f"buffer {value!r} is out of bounds: at most {BUFFER_MAX_PKTS}pkt")
        return Buffer(float(int(number)), "pkt")
    if unit.lower() == "bdp":
        if not 0 < number <= BDP_MAX:
            raise ValueError(f"buffer {value!r} must be a BDP fraction in (0, {BDP_MAX:g}]")
        return Buffer(number, "bdp")
    if unit in _SIZE_UNITS:
        return Buffer(float(parse_size(value, high=BUFFER_MAX_BYTES)), "bytes")
    if not unit:
        raise ValueError(f"{value!r} has no unit: add one, e.g. {value.strip()}pkt")
    raise ValueError(f"{value!r} has an unknown buffer unit {unit!r}: use pkt, B/KB/KiB or bdp")


# --- the annotated types the models use ------------------------------------------------------

_RATE_PATTERN = r"^\s*[0-9.eE+-]+\s*(([kKMG]?(bit(/s)?|bps))|[mg]bit(/s)?|[kKMG]?(B/s|Bps))\s*$"
_DURATION_PATTERN = r"^\s*[0-9.eE+]+\s*(us|µs|ms|s|min|h|d)\s*$"
_SIZE_PATTERN = r"^\s*[0-9.eE+]+\s*([kKMGT]?B|[KMG]iB)\s*$"
_BUFFER_PATTERN = r"^\s*[0-9.eE+]+\s*(pkt|pkts|p|bdp|[kKMG]?B|[KMG]iB)\s*$"


def _with_unit(unit: str) -> PlainSerializer:
    """A number in SI units, or with WITH_UNITS the number and its unit."""

    def serialize(value: float, info: SerializationInfo) -> float | str:
        if info.context and info.context.get("with_units"):
            return f"{value!r}{unit}"
        return value

    return PlainSerializer(serialize, return_type=Any)


@dataclass(frozen=True)
class _RateValidator:
    bounds: Bounds

    def __call__(self, value: Any, info: ValidationInfo) -> float:
        return parse_rate(value, _si_numbers(info), self.bounds)


@dataclass(frozen=True)
class _DurationValidator:
    bounds: Bounds

    def __call__(self, value: Any, info: ValidationInfo) -> float:
        return parse_duration(value, _si_numbers(info), self.bounds)


def _schema(pattern: str, description: str, example: str, unit: str) -> WithJsonSchema:
    """A string with a unit. `x-unit` is the SI unit of stored values and of defaults, which
    schemas.jsonschema writes with it; the description, which says the bounds, is kept beside a
    field's own description there."""
    return WithJsonSchema({"type": "string", "pattern": pattern, "description": description,
                           "examples": [example], "x-unit": unit,
                           "x-bounds": description})  # fmt: skip


def _validate_size(value: Any, info: ValidationInfo) -> int:
    return parse_size(value, _si_numbers(info))


def _validate_buffer(value: Any, info: ValidationInfo) -> Buffer:
    return parse_buffer(value)


Rate = Annotated[
    float,
    PlainValidator(_RateValidator(Bounds(RATE_MIN_BPS, RATE_MAX_BPS))),
    _with_unit("bit"),
    _schema(_RATE_PATTERN, "bit/s, with a unit: bit, kbit, Mbit, Gbit (or bytes per second: "
            "KB/s, MB/s, x 8); 1kbit to 100Gbit", "10Mbit", "bit"),
]  # fmt: skip
# A one-way delay (propagation, jitter, access link): 0 to 10 s.
Delay = Annotated[
    float,
    PlainValidator(_DurationValidator(Bounds(0.0, DELAY_MAX_S))),
    _with_unit("s"),
    _schema(_DURATION_PATTERN, "seconds, with a unit (us, ms, s); 0 to 10s", "20ms", "s"),
]
# The scale of a random per-packet delay (a flow's send jitter): above 0, up to 1 s.
JitterScale = Annotated[
    float,
    PlainValidator(_DurationValidator(Bounds(0.0, SEND_JITTER_MAX_S, low_open=True))),
    _with_unit("s"),
    _schema(_DURATION_PATTERN, "seconds, with a unit (us, ms, s); above 0, up to 1s", "1ms", "s"),
]
# The length of a run: 1 s to 24 h.
RunDuration = Annotated[
    float,
    PlainValidator(_DurationValidator(Bounds(RUN_MIN_S, RUN_MAX_S))),
    _with_unit("s"),
    _schema(_DURATION_PATTERN, "seconds, with a unit (ms, s, min, h); 1s to 24h", "30s", "s"),
]
# A time within a run (a flow's start, a measurement offset): 0 to 24 h.
Offset = Annotated[
    float,
    PlainValidator(_DurationValidator(Bounds(0.0, RUN_MAX_S))),
    _with_unit("s"),
    _schema(_DURATION_PATTERN, "seconds, with a unit (us, ms, s, min, h); 0 to 24h", "5s", "s"),
]
# A positive period (a flow's length, a mean ON/OFF period, an interval): above 0, up to 24 h.
Period = Annotated[
    float,
    PlainValidator(_DurationValidator(Bounds(0.0, RUN_MAX_S, low_open=True))),
    _with_unit("s"),
    _schema(
        _DURATION_PATTERN, "seconds, with a unit (us, ms, s, min, h); above 0, up to 24h", "1s", "s"
    ),
]
# The time between a campaign's occurrences: 1 s to a year.
CampaignInterval = Annotated[
    float,
    PlainValidator(_DurationValidator(Bounds(1.0, 366 * 86400.0))),
    _with_unit("s"),
    _schema(_DURATION_PATTERN, "seconds, with a unit (s, min, h, d); 1s to 366d", "6h", "s"),
]
# A sampling interval: 1 ms to 10 s.
Interval = Annotated[
    float,
    PlainValidator(_DurationValidator(Bounds(1e-3, 10.0))),
    _with_unit("s"),
    _schema(_DURATION_PATTERN, "seconds, with a unit (ms, s); 1ms to 10s", "10ms", "s"),
]
# A timer of the userspace transport: 1 us to 60 s.
Timer = Annotated[
    float,
    PlainValidator(_DurationValidator(Bounds(1e-6, 60.0))),
    _with_unit("s"),
    _schema(_DURATION_PATTERN, "seconds, with a unit (us, ms, s); 1us to 60s", "200ms", "s"),
]
Size = Annotated[
    int,
    PlainValidator(_validate_size),
    _with_unit("B"),
    WithJsonSchema({"type": "string", "pattern": _SIZE_PATTERN,
                    "description": "bytes, with a unit (B, KB, MB, GB, TB, KiB, MiB, GiB); "
                    "at most 1TB", "examples": ["100KB", "10MiB"], "x-unit": "B",
                    "x-bounds": "bytes, with a unit (B, KB, MB, ...); at most 1TB"}),
]  # fmt: skip
BufferSize = Annotated[
    Buffer,
    PlainValidator(_validate_buffer),
    PlainSerializer(str, return_type=str),
    WithJsonSchema({"type": "string", "pattern": _BUFFER_PATTERN,
                    "description": "packets (25pkt), bytes (64KB, 64KiB) or a fraction of the "
                    "BDP (0.5bdp); at most 10^6 packets (1.5GB)",
                    "x-bounds": "packets, bytes or BDP fraction; at most 10^6 packets",
                    "examples": ["1bdp", "25pkt", "64KB"]}),
]  # fmt: skip
