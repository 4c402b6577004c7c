"""Spec models: units parse to SI, bad values name the field, matrices expand as documented,
and the committed JSON Schema files match the models."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import TypeAdapter, ValidationError

from schemas import (
    Buffer,
    ExperimentSpec,
    Flow,
    MatrixSpec,
    SpecError,
    Submission,
    errors_of,
    expand_submission,
    parse_buffer,
    parse_duration,
    parse_rate,
    parse_size,
)
from schemas.generate import OUT_DIR, REPO_ROOT, agent_sources, documents, render
from schemas.units import SI_NUMBERS

EXAMPLES = Path(__file__).parents[1] / "schemas" / "examples"
SUBMISSION: TypeAdapter[Any] = TypeAdapter(Submission)


@pytest.mark.parametrize(
    ("text", "bps"),
    [
        ("10Mbit", 10e6),
        ("1.5Gbit", 1.5e9),
        ("500kbit", 5e5),
        ("64kbps", 64e3),
        ("100 Mbit/s", 100e6),
        ("2e6bit", 2e6),
        ("10mbit", 10e6),  # tc's spelling
        ("10MB/s", 80e6),  # bytes per second, exactly x 8
        ("1KBps", 8e3),
    ],
)
def test_rates(text: Any, bps: float) -> None:
    assert parse_rate(text) == pytest.approx(bps)


@pytest.mark.parametrize(
    ("text", "seconds"), [("20ms", 0.02), ("1.5s", 1.5), ("500us", 5e-4), ("2min", 120.0)]
)
def test_durations(text: Any, seconds: float) -> None:
    assert parse_duration(text) == pytest.approx(seconds)


def test_bare_numbers_are_si_values_only_in_stored_specs() -> None:
    # A stored spec holds SI numbers (bit/s, s, bytes) and validates with SI_NUMBERS.
    assert parse_rate(1000, si_numbers=True) == 1000.0
    assert parse_duration(0, si_numbers=True) == 0.0
    assert parse_size(1500, si_numbers=True) == 1500
    raw = yaml.safe_load((EXAMPLES / "dumbbell-reno-vs-cubic.yaml").read_text())
    stored = ExperimentSpec.model_validate(raw).model_dump(mode="json")
    assert stored["duration"] == 20.0
    assert ExperimentSpec.model_validate(stored, context=SI_NUMBERS).duration == 20.0
    with pytest.raises(ValidationError, match="has no unit: add one"):
        ExperimentSpec.model_validate(stored)  # a user's submission needs its units


@pytest.mark.parametrize(
    ("field", "value", "reason"),
    [
        # Each mistake is refused naming the field, with a hint; none is silently taken.
        ("topology.bottleneck.rate", 10, "10 has no unit: add one, e.g. 10Mbit"),
        ("topology.bottleneck.rate", "10", "'10' has no unit: add one, e.g. 10Mbit"),
        ("topology.bottleneck.rate", "10mbps", "ambiguous"),
        ("topology.bottleneck.rate", "10MB", "a size, not a rate"),
        ("topology.bottleneck.delay", 20, "20 has no unit: add one, e.g. 20ms"),
        ("topology.bottleneck.delay", "20", "'20' has no unit: add one, e.g. 20ms or s"),
        ("topology.bottleneck.buffer", 25, "25 has no unit: add one, e.g. 25pkt"),
        ("topology.bottleneck.buffer", "64kb", "unknown buffer unit 'kb'"),
        ("duration", "20", "'20' has no unit"),
        ("flows.0.start", 5, "5 has no unit"),
        # Physical bounds.
        ("topology.bottleneck.rate", "1e30Mbit", "out of bounds: at least 1kbit and at most"),
        ("topology.bottleneck.rate", "500bit", "out of bounds"),
        ("topology.bottleneck.delay", "1e9s", "out of bounds: at least 0s and at most 10s"),
        ("duration", "1e-9s", "out of bounds: at least 1s and at most 24h"),
        ("duration", "25h", "out of bounds: at least 1s and at most 24h"),
        ("duration", "2w", "unknown time unit"),
        ("topology.bottleneck.buffer", "1e9pkt", "out of bounds: at most 1000000pkt"),
        ("topology.bottleneck.buffer", "1e999pkt", "not a finite buffer"),
        ("topology.bottleneck.rate_trace_ms", 1.5, "valid list"),
        ("name", "n" * 101, "at most 100 characters"),
        ("tags", ["t" * 65], "at most 64 characters"),
    ],
)
def test_unit_mistakes_and_bounds_name_the_field(field: str, value: Any, reason: str) -> None:
    raw = yaml.safe_load((EXAMPLES / "dumbbell-reno-vs-cubic.yaml").read_text())
    target = raw
    *parents, last = field.split(".")
    for part in parents:
        target = target[int(part)] if part.isdigit() else target[part]
    target[last] = value
    with pytest.raises(ValidationError) as info:
        SUBMISSION.validate_python(raw)
    errors = {e["loc"]: e["msg"] for e in errors_of(info.value)}
    assert any(loc.startswith(field) and reason in msg for loc, msg in errors.items()), errors


def test_a_bdp_buffer_is_bounded_in_packets() -> None:
    raw = yaml.safe_load((EXAMPLES / "dumbbell-reno-vs-cubic.yaml").read_text())
    raw["topology"]["bottleneck"].update(rate="100Gbit", delay="10s", buffer="1000bdp")
    with pytest.raises(ValidationError, match="at most 1000000 packets"):
        SUBMISSION.validate_python(raw)


def test_sizes_and_buffers() -> None:
    assert parse_size("64KB") == 64_000 and parse_size("64KiB") == 65_536
    assert parse_buffer("25pkt") == Buffer(25, "pkt")
    assert parse_buffer("0.25bdp") == Buffer(0.25, "bdp")
    assert parse_buffer("64KB") == Buffer(64_000, "bytes")
    assert str(parse_buffer("64KB")) == "64000B" and str(parse_buffer("1bdp")) == "1bdp"
    # 10 Mbit/s x 40 ms = 50,000 bytes = 33 packets of 1500 bytes.
    assert parse_buffer("1bdp").packets(50_000) == 33
    assert parse_buffer("0.01bdp").packets(50_000) == 1


@pytest.mark.parametrize(
    ("parser", "text", "reason"),
    [
        (parse_rate, "10Mbt", "unknown rate unit"),
        (parse_rate, "0Mbit", "greater than 0"),
        (parse_rate, 1000, "has no unit"),
        (parse_duration, "3", "has no unit"),
        (parse_rate, "fast", "not a rate"),
        (parse_duration, "-1s", "negative"),
        (parse_duration, "5w", "unknown time unit"),
        (parse_buffer, "1.5pkt", "whole number"),
        (parse_buffer, "3lb", "unknown buffer unit"),
        (parse_size, "1.5B", "whole number"),
    ],
)
def test_bad_units_say_why(parser: Any, text: str, reason: str) -> None:
    with pytest.raises(ValueError, match=reason):
        parser(text)


def load(name: str) -> Any:
    return SUBMISSION.validate_python(yaml.safe_load((EXAMPLES / name).read_text()))


def _example_kind(path: Path) -> str:
    if path.name == "claims.yaml":
        return "claims"
    return "campaign" if path.parent.name == "campaigns" else "submission"


@pytest.mark.parametrize(
    "example",
    sorted(EXAMPLES.rglob("*.yaml")),
    ids=lambda p: str(p.relative_to(EXAMPLES)),
)
def test_every_example_validates_subdirectories_included(example: Path) -> None:
    """Every file under schemas/examples, at any depth: a submission (the seeds' templates
    too), a campaign, or a seed's claims file, each against its model."""
    from schemas.campaign import CampaignSpec
    from schemas.reproduce import SeedClaims

    document = yaml.safe_load(example.read_text())
    model: Any = {
        "claims": SeedClaims,
        "campaign": TypeAdapter(CampaignSpec),
        "submission": SUBMISSION,
    }[_example_kind(example)]
    if isinstance(model, TypeAdapter):
        model.validate_python(document)
    else:
        model.model_validate(document)


def test_the_examples_include_every_seeds_templates() -> None:
    found = {p.parent.name for p in EXAMPLES.glob("seeds/*/*.yaml")}
    assert found == {"000", "001", "002", "003", "004"}
    assert len(list(EXAMPLES.rglob("*.yaml"))) > 40


def test_example_is_the_documented_experiment() -> None:
    spec = load("dumbbell-reno-vs-cubic.yaml")
    assert isinstance(spec, ExperimentSpec)
    bottleneck = spec.topology.bottleneck
    assert (bottleneck.rate, bottleneck.delay, spec.duration) == (10e6, 0.02, 20.0)
    assert bottleneck.buffer_limit() == (33, None)
    assert [f.algorithm.value for f in spec.flows] == ["reno", "cubic"]
    # The stored (JSON) form validates again to the same spec.
    assert ExperimentSpec.model_validate(spec.model_dump(mode="json"), context=SI_NUMBERS) == spec


def test_unknown_fields_and_missing_runtimes_name_the_field() -> None:
    raw = yaml.safe_load((EXAMPLES / "dumbbell-reno-vs-cubic.yaml").read_text())
    raw["flows"][0]["algoritm"] = "reno"
    raw["flows"][1]["algorithm"] = "bfa"
    with pytest.raises(ValidationError) as info:
        SUBMISSION.validate_python(raw)
    errors = {e["loc"]: e["msg"] for e in errors_of(info.value)}
    assert any(loc.endswith("flows.0.algoritm") for loc in errors), errors
    assert any("bfa" in msg and "kernel/builtin" in msg for msg in errors.values()), errors
    # ARB and TFRC cannot be kernel controllers: the error says so, for either runtime.
    for runtime in ("builtin", "bpf"):
        raw["flows"] = [{"algorithm": "tfrc", "runtime": runtime}]
        with pytest.raises(ValidationError) as info:
            SUBMISSION.validate_python(raw)
        messages = [e["msg"] for e in errors_of(info.value)]
        assert any("'tfrc' is userspace-only" in m and "seed 004" in m for m in messages), messages


def test_matrix_product_zip_repetitions_and_seeds() -> None:
    matrix = load("matrix-buffer-sweep.yaml")
    assert isinstance(matrix, MatrixSpec)
    runs = expand_submission(matrix, limit=10_000)
    assert len(runs) == 18
    assert {(r.index, r.repetition) for r in runs} == {(i, k) for i in range(6) for k in range(3)}
    # Shuffled, but deterministically so, and every run has its own recorded seed.
    again = expand_submission(matrix, limit=10_000)
    assert [(r.index, r.repetition, r.spec.seed) for r in runs] == [
        (r.index, r.repetition, r.spec.seed) for r in again
    ]
    assert [(r.index, r.repetition) for r in runs] != sorted((r.index, r.repetition) for r in runs)
    assert len({r.spec.seed for r in runs}) == 18
    for run in runs:
        algorithm = run.axis_values["flows[*].algorithm"]
        assert [f.algorithm.value for f in run.spec.flows] == [algorithm, algorithm]
        assert (
            str(run.spec.topology.bottleneck.buffer)
            == run.axis_values["topology.bottleneck.buffer"]
        )
    two_buffers = matrix.axes[1].model_copy(update={"values": ["1bdp", "2bdp"]})
    zipped = matrix.model_copy(
        update={"combine": "zip", "repetitions": 1, "axes": [matrix.axes[0], two_buffers]}
    )
    assert [
        r.axis_values for r in sorted(expand_submission(zipped, 10_000), key=lambda r: r.index)
    ] == [
        {"flows[*].algorithm": "reno", "topology.bottleneck.buffer": "1bdp"},
        {"flows[*].algorithm": "cubic", "topology.bottleneck.buffer": "2bdp"},
    ]
    with pytest.raises(SpecError, match="zip needs axes of equal length"):
        expand_submission(
            matrix.model_copy(
                update={
                    "combine": "zip",
                    "axes": [
                        matrix.axes[0],
                        matrix.axes[1].model_copy(update={"values": ["1bdp"]}),
                    ],
                }
            ),
            limit=10_000,
        )


def test_matrix_errors_name_axis_and_value() -> None:
    matrix = load("matrix-buffer-sweep.yaml")
    bad_value = matrix.model_copy(
        update={
            "axes": [
                matrix.axes[0],
                matrix.axes[1].model_copy(update={"values": ["1bdp", "12parsecs"]}),
            ]
        }
    )
    with pytest.raises(SpecError) as info:
        expand_submission(bad_value, limit=10_000)
    assert info.value.errors[0]["loc"] == "axes.1.values.1.topology.bottleneck.buffer"
    bad_path = matrix.model_copy(
        update={"axes": [matrix.axes[0].model_copy(update={"path": "topology.bottleneck.bufer"})]}
    )
    with pytest.raises(SpecError) as info:
        expand_submission(bad_path, limit=10_000)
    assert info.value.errors[0]["loc"] == "axes.0.path"
    assert "bufer" in info.value.errors[0]["msg"]
    with pytest.raises(SpecError, match="matrix expands to 18 runs, more than the limit 17"):
        expand_submission(matrix, limit=17)


def test_committed_json_schema_matches_the_models() -> None:
    expected = documents()
    committed = {p.name for p in OUT_DIR.glob("*.json")}
    assert committed == set(expected), "run `make schemas` and commit schemas/json/"
    for name, doc in expected.items():
        assert (OUT_DIR / name).read_text() == render(doc), (
            f"schemas/json/{name} is out of date: run `make schemas` and commit it"
        )


def test_committed_agent_defaults_match_the_models() -> None:
    # ccb_defaults.h (BPF tunables, schemas/algorithms.py) and ccbench-transport's defaults.rs
    # (TransportOptions): the agents take their defaults from these generated files only.
    for path, text in agent_sources().items():
        name = path.relative_to(REPO_ROOT)
        assert path.exists() and path.read_text() == text, (
            f"{name} is out of date: run `make schemas` and commit it"
        )


def test_chain_topology_paths_and_bottleneck() -> None:
    spec = load("two-bottleneck.yaml")
    assert isinstance(spec, ExperimentSpec)
    assert [link.rate for link in spec.links] == [40e6, 100e6]
    assert spec.bottleneck_index == 0  # the slowest link by default
    assert spec.flow_path(0) == (0, 2) and spec.flow_path(1) == (1, 2)
    assert spec.base_rtt_s(0) == pytest.approx(0.023) and spec.base_rtt_s(1) == pytest.approx(0.020)
    raw = yaml.safe_load((EXAMPLES / "two-bottleneck.yaml").read_text())
    raw["flows"][1]["path"] = [2, 3]
    raw["topology"]["links"][0]["link_mechanism"] = "tc"
    with pytest.raises(ValidationError) as info:
        SUBMISSION.validate_python(raw)
    errors = {e["loc"]: e["msg"] for e in errors_of(info.value)}
    assert any("a chain's links are emulated" in msg for msg in errors.values()), errors
    assert all("chain" not in loc.split(".") for loc in errors), errors
    raw["topology"]["links"][0]["link_mechanism"] = "auto"
    with pytest.raises(ValidationError, match=r"flows.1.path \[2, 3\] is not a path"):
        SUBMISSION.validate_python(raw)


def test_rate_trace_sets_the_rate_and_must_agree_with_it() -> None:
    raw = yaml.safe_load((EXAMPLES / "dumbbell-reno-vs-cubic.yaml").read_text())
    raw["topology"]["bottleneck"].pop("rate")
    raw["topology"]["bottleneck"]["rate_trace_ms"] = [1, 2, 3, 4]  # 1500 B per ms
    spec = SUBMISSION.validate_python(raw)
    assert spec.bottleneck.rate == pytest.approx(12e6)
    assert ExperimentSpec.model_validate(spec.model_dump(mode="json"), context=SI_NUMBERS) == spec
    raw["topology"]["bottleneck"]["rate"] = "10Mbit"
    with pytest.raises(ValidationError, match="differs from rate_trace_ms's average"):
        SUBMISSION.validate_python(raw)
    raw["topology"]["bottleneck"].pop("rate")
    raw["topology"]["bottleneck"]["link_mechanism"] = "tc"
    with pytest.raises(ValidationError, match="rate_trace_ms need link_mechanism emulator"):
        SUBMISSION.validate_python(raw)


def test_controller_params_are_checked_against_the_algorithms_tunables() -> None:
    raw = yaml.safe_load((EXAMPLES / "dumbbell-reno-vs-cubic.yaml").read_text())

    def messages(flow: dict[str, object]) -> list[str]:
        raw["flows"] = [flow]
        with pytest.raises(ValidationError) as info:
            SUBMISSION.validate_python(raw)
        return [f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in errors_of(info.value)]

    def ok(flow: dict[str, object]) -> None:
        raw["flows"] = [flow]
        SUBMISSION.validate_python(raw)

    ok({"algorithm": "dual", "runtime": "bpf", "params": {"a": 0.25, "ss_every_other": 0}})
    ok({"algorithm": "aaimd", "runtime": "bpf", "params": {"beta_max": 0.9, "variant": 1}})
    [m] = messages({"algorithm": "aaimd", "runtime": "bpf", "params": {"beta": 0.7}})
    assert (
        "params.beta: not a parameter of aaimd (parameters: beta_max, rtt_max_fade, variant)" in m
    )
    [m] = messages({"algorithm": "aaimd", "runtime": "bpf", "params": {"beta_max": 0.3}})
    assert "params.beta_max: 0.3 is outside [0.5, 0.99609375]" in m
    [m] = messages({"algorithm": "aaimd", "runtime": "bpf", "params": {"variant": 0.5}})
    assert "params.variant: 0.5 is not a whole number" in m
    [m] = messages({"algorithm": "reno", "params": {"x": 1}})
    assert "tunables apply to ccbench's own controllers (runtime: bpf, or agent: userspace)" in m
    [m] = messages({"algorithm": "dual"})
    assert "no kernel/builtin runtime" in m and "set runtime: bpf" in m


def test_userspace_flows_traffic_models_and_transport_options() -> None:
    raw = yaml.safe_load((EXAMPLES / "dumbbell-reno-vs-cubic.yaml").read_text())

    def spec(*flows: dict[str, Any]) -> ExperimentSpec:
        raw["flows"] = list(flows)
        return ExperimentSpec.model_validate(raw)

    def messages(*flows: dict[str, Any]) -> list[str]:
        raw["flows"] = list(flows)
        with pytest.raises(ValidationError) as info:
            ExperimentSpec.model_validate(raw)
        return [f"{e['loc']}: {e['msg']}" for e in errors_of(info.value)]

    s = spec(
        {"algorithm": "tfrc", "agent": "userspace", "role": "candidate"},
        {"algorithm": "aaimd", "agent": "userspace", "params": {"beta_max": 0.7},
         "transport": {"min_rto": "1s", "rto_granularity": "500ms", "delayed_acks": True}},
        {"algorithm": "reno", "traffic": {"model": "on_off"}},
        {"algorithm": "reno", "agent": "userspace",
         "traffic": {"model": "web", "mean_size": "50KB", "mean_interarrival": "200ms"}},
        {"algorithm": "reno", "agent": "userspace", "traffic": {"model": "cbr", "rate": "2Mbit"}},
        {"algorithm": "cubic", "traffic": {"model": "fixed", "size": "1MiB"}},
    )  # fmt: skip
    tfrc, aaimd, on_off, web, cbr, fixed = s.flows
    assert tfrc.runtime_kind.value == "userspace"
    assert aaimd.parameter_values() == {"beta_max": 0.7, "rtt_max_fade": 0.875, "variant": 0}
    assert aaimd.transport is not None
    assert (aaimd.transport.min_rto, aaimd.transport.rto_granularity) == (1.0, 0.5)
    # Seed 004 section III-C.4's on/off source is the default.
    assert on_off.traffic.model_dump() == {
        "model": "on_off", "shape": 1.2, "on_mean": 1.0, "off_mean": 2.0, "rate": 12_000.0
    }  # fmt: skip
    assert web.traffic.model_dump()["mean_size"] == 50_000
    assert cbr.traffic.model_dump() == {"model": "cbr", "rate": 2e6}
    assert fixed.traffic.model_dump() == {"model": "fixed", "size": 1_048_576}

    [m] = messages({"algorithm": "cubic", "agent": "userspace"})
    assert "'cubic' has no userspace runtime" in m
    [m] = messages({"algorithm": "vegas", "agent": "userspace", "runtime": "bpf"})
    assert "runtime: applies to kernel flows" in m
    # The stored form of a userspace flow (defaults written out) validates again, as the
    # worker reads it back.
    stored = Flow.model_validate({"algorithm": "vegas", "agent": "userspace"}).model_dump(
        mode="json"
    )
    assert Flow.model_validate(stored, context=SI_NUMBERS).runtime_kind.value == "userspace"
    [m] = messages({"algorithm": "reno", "transport": {"mss": 1000}})
    assert "transport: options of the userspace transport" in m
    [m] = messages({"algorithm": "reno", "agent": "userspace", "transport": {"receive_window": 0}})
    assert "receive_window" in m and "greater than or equal to 1" in m
    [m] = messages(
        {"algorithm": "reno", "agent": "userspace", "transport": {"window_growth": "per_byte"}}
    )
    assert "window_growth" in m and "'per_packet' or 'per_ack'" in m
    [m] = messages({"algorithm": "reno", "agent": "userspace", "params": {"alpha": 1}})
    assert "params.alpha: not a parameter of reno" in m
    [m] = messages({"algorithm": "reno", "traffic": {"model": "on_off", "shape": 1.0}})
    assert m.startswith("flows.0.traffic.on_off.shape") and "greater than 1" in m
    [m] = messages({"algorithm": "reno", "traffic": {"model": "fixed", "size": "-1KB"}})
    assert "flows.0.traffic.fixed.size" in m
    [m] = messages({"algorithm": "reno", "traffic": {"model": "poisson"}})
    assert "flows.0.traffic" in m and "poisson" in m


def test_send_jitter_takes_a_distribution_and_a_unit() -> None:
    raw = yaml.safe_load((EXAMPLES / "dumbbell-reno-vs-cubic.yaml").read_text())

    def messages(flow: dict[str, Any], **topology: Any) -> list[str]:
        raw["flows"] = [flow]
        raw["topology"]["bottleneck"].update(topology)
        with pytest.raises(ValidationError) as info:
            ExperimentSpec.model_validate(raw)
        return [f"{e['loc']}: {e['msg']}" for e in errors_of(info.value)]

    raw["flows"] = [
        {"algorithm": "reno", "send_jitter": {"distribution": "uniform", "max": "2ms"}},
        {"algorithm": "tfrc", "agent": "userspace",
         "send_jitter": {"distribution": "exponential", "mean": "500us"}},
    ]  # fmt: skip
    uniform, exponential = ExperimentSpec.model_validate(raw).flows
    assert uniform.send_jitter is not None and exponential.send_jitter is not None
    assert uniform.send_jitter.model_dump() == {"distribution": "uniform", "max": 0.002}
    assert exponential.send_jitter.model_dump() == {"distribution": "exponential", "mean": 5e-4}
    [m] = messages({"algorithm": "reno", "send_jitter": {"distribution": "uniform", "max": 2}})
    assert m == "flows.0.send_jitter.uniform.max: 2 has no unit: add one, e.g. 2ms"
    [m] = messages({"algorithm": "reno", "send_jitter": {"distribution": "uniform", "max": "0s"}})
    assert m.startswith("flows.0.send_jitter.uniform.max:") and "above 0s" in m
    [m] = messages({"algorithm": "reno", "send_jitter": {"distribution": "normal", "max": "1ms"}})
    assert m.startswith("flows.0.send_jitter:") and "'uniform', 'exponential'" in m
    [m] = messages({"algorithm": "reno", "send_jitter": {"distribution": "exponential"}})
    assert m == "flows.0.send_jitter.exponential.mean: Field required"
    jitter = {"distribution": "uniform", "max": "1ms"}
    [m] = messages({"algorithm": "reno", "direction": "reverse", "send_jitter": jitter})
    assert "send_jitter: applies to forward flows" in m
    [m] = messages({"algorithm": "reno", "send_jitter": jitter}, link_mechanism="tc")
    assert "flows[].send_jitter" in m and "link_mechanism emulator" in m


def test_initial_window_is_a_whole_number_of_packets() -> None:
    raw = yaml.safe_load((EXAMPLES / "dumbbell-reno-vs-cubic.yaml").read_text())
    spec = ExperimentSpec.model_validate(raw)
    assert [f.initial_window for f in spec.flows] == [10, 10]  # Linux's, RFC 6928
    for value, reason in [(0, "greater than or equal to 1"), (41, "less than or equal to 40"),
                          (2.5, "valid integer")]:  # fmt: skip
        raw["flows"][0]["initial_window"] = value
        with pytest.raises(ValidationError) as info:
            ExperimentSpec.model_validate(raw)
        [error] = errors_of(info.value)
        assert error["loc"] == "flows.0.initial_window" and reason in error["msg"], error


@pytest.mark.parametrize(
    ("field", "value"),
    [("initial_window", 3), ("send_jitter", {"distribution": "uniform", "max": "1ms"})],
)
def test_what_only_the_local_testbed_applies_is_refused_on_hosts(field: str, value: Any) -> None:
    raw = {
        "name": "on-hosts",
        "testbed": {"kind": "hosts"},
        "topology": {"kind": "path"},
        "flows": [{"algorithm": "reno", "src": "a", "dst": "b", field: value}],
        "duration": "10s",
    }
    with pytest.raises(ValidationError) as info:
        ExperimentSpec.model_validate(raw)
    [error] = errors_of(info.value)
    assert f"flows.0.{field}: not on the hosts testbed" in error["msg"], error
