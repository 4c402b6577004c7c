"""The compiled BPF controllers start with the tunables schemas/algorithms.py declares: every
`const volatile` global in an object's .rodata is a parameter's `bpf_symbol`, initialised to
round(default x bpf_scale). The .bpf.c files take these values from the generated
ccb_defaults.h (tests/test_schemas.py checks that it is up to date); this test checks what
clang actually compiled, so a literal default in a .bpf.c (or a stale object) fails it.

The objects come from `make -C agents/kernel` (clang-14 and the running kernel's BTF); without
them the test skips. Python's standard library has no ELF reader, so `_rodata_symbols` is a
small one (64-bit little-endian relocatable objects, all that clang -target bpf emits)."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

from schemas.algorithms import BPF_ALGORITHMS, PARAMETERS, Algorithm

BUILD = Path(__file__).parents[1] / "agents" / "kernel" / "build"
# .rodata globals of ccbench_cc.h that are not tunables.
NOT_TUNABLES = {"ccb_state_fields"}


def _rodata_symbols(path: Path) -> dict[str, bytes]:
    """The initial bytes of every symbol defined in the object's .rodata section."""
    data = path.read_bytes()
    assert data[:6] == b"\x7fELF\x02\x01", f"{path.name}: not a 64-bit little-endian ELF"
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    entsize, count, names_index = struct.unpack_from("<HHH", data, 0x3A)
    sections = []  # (name, type, offset, size, link) of each section header
    for i in range(count):
        name, type_, _flags, _addr, offset, size, link = struct.unpack_from(
            "<IIQQQQI", data, shoff + i * entsize
        )
        sections.append((name, type_, offset, size, link))

    def string(table: int, at: int) -> str:
        start = sections[table][2] + at
        return data[start : data.index(b"\0", start)].decode()

    names = [string(names_index, name) for name, *_ in sections]
    rodata = names.index(".rodata")
    _, _, symtab_offset, symtab_size, strtab = next(s for s in sections if s[1] == 2)  # SYMTAB
    out = {}
    for at in range(symtab_offset, symtab_offset + symtab_size, 24):
        name, _info, _other, index, value, size = struct.unpack_from("<IBBHQQ", data, at)
        if index == rodata and size > 0:
            start = sections[rodata][2] + value
            out[string(strtab, name)] = data[start : start + size]
    return out


@pytest.mark.parametrize("algorithm", sorted(BPF_ALGORITHMS), ids=str)
def test_compiled_tunables_start_at_the_schema_defaults(algorithm: Algorithm) -> None:
    path = BUILD / f"{algorithm.value}.bpf.o"
    if not path.exists():
        pytest.skip(f"{path} is not built (make -C agents/kernel: needs clang-14 and BTF)")
    compiled = _rodata_symbols(path)
    expected = {}
    for p in PARAMETERS[algorithm]:
        assert p.bpf_symbol is not None, f"{algorithm}.{p.name} has no bpf_symbol"
        expected[p.bpf_symbol] = p.bpf_value(p.default)
    assert set(compiled) - NOT_TUNABLES == set(expected), (
        f"{path.name}: .rodata tunables differ from schemas/algorithms.py's bpf_symbols"
    )
    wrong = []
    for symbol, value in expected.items():
        raw = compiled[symbol]
        assert len(raw) == 4, f"{path.name}: {symbol} is not a 4-byte tunable"
        initial = int.from_bytes(raw, "little", signed=value < 0)
        if initial != value:
            wrong.append(f"{symbol} = {initial}, schemas/algorithms.py says {value}")
    assert not wrong, f"{path.name} (rebuild it, or use ccb_defaults.h): " + "; ".join(wrong)
