"""Unit-bearing values: a spec says `10Mbit`, `20ms`, `64KB`, `25pkt`, `0.25bdp`; models hold SI
base units (bit/s, seconds, bytes) and serialise them as plain numbers, so a stored spec is
unambiguous and validates again unchanged.

Prefixes are decimal (k = 1000) as in networking; binary sizes use KiB/MiB/GiB."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import PlainSerializer, PlainValidator, WithJsonSchema

_NUMBER = r"(?P<num>[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?)\s*"

_RATE_UNITS = {
    "bit": 1.0,
    "bps": 1.0,
    "bit/s": 1.0,
    "kbit": 1e3,
    "kbps": 1e3,
    "kbit/s": 1e3,
    "mbit": 1e6,
    "mbps": 1e6,
    "mbit/s": 1e6,
    "gbit": 1e9,
    "gbps": 1e9,
    "gbit/s": 1e9,
}
_DURATION_UNITS = {"us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0}
_SIZE_UNITS = {
    "b": 1,
    "kb": 1000,
    "mb": 1000**2,
    "gb": 1000**3,
    "kib": 1024,
    "mib": 1024**2,
    "gib": 1024**3,
}


def _split(value: str, what: str, example: str) -> tuple[float, str]:
    match = re.fullmatch(_NUMBER + r"(?P<unit>[A-Za-zµ/]*)", value.strip())
    if match is None:
        raise ValueError(f"{value!r} is not a {what}: write a number and a unit, e.g. {example}")
    return float(match["num"]), match["unit"]


def _finite(number: float, value: object, what: str) -> float:
    if not math.isfinite(number):
        raise ValueError(f"{value!r} is not a finite {what}")
    return number


def parse_rate(value: Any) -> float:
    """`10Mbit` -> 1e7 bit/s. A bare number is bit/s. Must be > 0."""
    if isinstance(value, bool):
        raise ValueError("a rate is a number of bit/s or a string such as 10Mbit")
    if isinstance(value, int | float):
        bps = float(value)
    elif isinstance(value, str):
        number, unit = _split(value, "rate", "10Mbit, 1.5Gbit, 500kbit")
        factor = _RATE_UNITS.get(unit.lower())
        if factor is None:
            raise ValueError(
                f"{value!r} has an unknown rate unit {unit!r}: use bit, kbit, Mbit or Gbit"
            )
        bps = number * factor
    else:
        raise ValueError("a rate is a number of bit/s or a string such as 10Mbit")
    if _finite(bps, value, "rate") <= 0:
        raise ValueError(f"rate {value!r} must be greater than 0")
    return bps


def parse_duration(value: Any) -> float:
    """`20ms` -> 0.02 s. A bare number is seconds. Must be >= 0."""
    if isinstance(value, bool):
        raise ValueError("a duration is a number of seconds or a string such as 20ms")
    if isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str):
        number, unit = _split(value, "duration", "20ms, 1.5s, 500us")
        factor = _DURATION_UNITS.get(unit if unit else "s")
        if factor is None:
            raise ValueError(f"{value!r} has an unknown time unit {unit!r}: use us, ms, s or min")
        seconds = number * factor
    else:
        raise ValueError("a duration is a number of seconds or a string such as 20ms")
    if _finite(seconds, value, "duration") < 0:
        raise ValueError(f"duration {value!r} must not be negative")
    return seconds


def parse_size(value: Any) -> int:
    """`64KB` -> 64000 bytes, `64KiB` -> 65536. A bare number is bytes."""
    if isinstance(value, bool):
        raise ValueError("a size is a number of bytes or a string such as 64KB")
    if isinstance(value, int | float):
        size = float(value)
    elif isinstance(value, str):
        number, unit = _split(value, "size", "1500B, 64KB, 1MiB")
        factor = _SIZE_UNITS.get(unit.lower() if unit else "b")
        if factor is None:
            raise ValueError(
                f"{value!r} has an unknown size unit {unit!r}: use B, KB, MB, GB, KiB, MiB, GiB"
            )
        size = number * factor
    else:
        raise ValueError("a size is a number of bytes or a string such as 64KB")
    if _finite(size, value, "size") <= 0 or size != int(size):
        raise ValueError(f"size {value!r} must be a positive whole number of bytes")
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

    def packets(self, bdp_bytes: float, packet_bytes: int = 1500) -> int | None:
        """The limit in packets, or None when the buffer is given in bytes."""
        if self.unit == "pkt":
            return int(self.value)
        if self.unit == "bdp":
            return max(1, round(self.value * bdp_bytes / packet_bytes))
        return None


def parse_buffer(value: Any) -> Buffer:
    """`25pkt`, `64KB` (bytes), `0.25bdp`. A bare integer is packets."""
    if isinstance(value, Buffer):
        return value
    if isinstance(value, bool):
        raise ValueError("a buffer is a string such as 25pkt, 64KB or 0.5bdp")
    if isinstance(value, int):
        value = f"{value}pkt"
    if not isinstance(value, str):
        raise ValueError("a buffer is a string such as 25pkt, 64KB or 0.5bdp")
    number, unit = _split(value, "buffer", "25pkt, 64KB, 0.5bdp")
    lowered = unit.lower()
    if lowered in ("pkt", "pkts", "p"):
        if number < 1 or number != int(number):
            raise ValueError(f"buffer {value!r} must be a whole number of packets, at least 1")
        return Buffer(float(int(number)), "pkt")
    if lowered == "bdp":
        if not 0 < number <= 1000:
            raise ValueError(f"buffer {value!r} must be a BDP fraction in (0, 1000]")
        return Buffer(number, "bdp")
    if lowered in _SIZE_UNITS:
        return Buffer(float(parse_size(value)), "bytes")
    raise ValueError(f"{value!r} has an unknown buffer unit {unit!r}: use pkt, B/KB/KiB or bdp")


_RATE_SCHEMA = {
    "anyOf": [
        {"type": "string", "pattern": r"^\s*[0-9.eE+-]+\s*([kKmMgG]?(bit|bps)(/s)?)?\s*$"},
        {"type": "number", "exclusiveMinimum": 0},
    ],
    "description": "bit/s: a number, or a string with a unit (bit, kbit, Mbit, Gbit)",
    "examples": ["10Mbit", "1.5Gbit"],
}
_DURATION_SCHEMA = {
    "anyOf": [
        {"type": "string", "pattern": r"^\s*[0-9.eE+]+\s*(us|µs|ms|s|min)?\s*$"},
        {"type": "number", "minimum": 0},
    ],
    "description": "seconds: a number, or a string with a unit (us, ms, s, min)",
    "examples": ["20ms", "30s"],
}
_BUFFER_SCHEMA = {
    "anyOf": [
        {"type": "string", "pattern": r"^\s*[0-9.eE+]+\s*(pkt|pkts|p|bdp|[kKmMgG]?i?[bB])\s*$"},
        {"type": "integer", "minimum": 1},
    ],
    "description": "packets (25pkt), bytes (64KB, 64KiB) or a fraction of the BDP (0.5bdp)",
    "examples": ["1bdp", "25pkt", "64KB"],
}

_SIZE_SCHEMA = {
    "anyOf": [
        {"type": "string", "pattern": r"^\s*[0-9.eE+]+\s*([kKmMgG]?i?[bB])?\s*$"},
        {"type": "integer", "minimum": 1},
    ],
    "description": "bytes: a number, or a string with a unit (B, KB, MB, GB, KiB, MiB, GiB)",
    "examples": ["100KB", "10MiB"],
}

Rate = Annotated[float, PlainValidator(parse_rate), WithJsonSchema(_RATE_SCHEMA)]
Size = Annotated[int, PlainValidator(parse_size), WithJsonSchema(_SIZE_SCHEMA)]
Duration = Annotated[float, PlainValidator(parse_duration), WithJsonSchema(_DURATION_SCHEMA)]
BufferSize = Annotated[
    Buffer,
    PlainValidator(parse_buffer),
    PlainSerializer(str, return_type=str),
    WithJsonSchema(_BUFFER_SCHEMA),
]
