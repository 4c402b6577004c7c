"""ccbench's data contracts: experiment and matrix specs, units, algorithm ids, report shapes.
The single source of truth; `python -m schemas.generate` writes the JSON Schema files."""

from schemas.algorithms import Algorithm, Runtime, runtimes_of
from schemas.matrix import (
    MatrixSpec,
    RunPoint,
    SpecError,
    Submission,
    errors_of,
    expand_submission,
    run_count,
)
from schemas.report import (
    AggregateMetrics,
    AppliedConditions,
    Check,
    ExperimentReport,
    FlowMetrics,
    GroupReport,
    RunReport,
    RunResult,
)
from schemas.spec import SCHEMA_VERSION, Bottleneck, ExperimentSpec, Flow
from schemas.units import Buffer, parse_buffer, parse_duration, parse_rate, parse_size

__all__ = [
    "SCHEMA_VERSION",
    "AggregateMetrics",
    "Algorithm",
    "AppliedConditions",
    "Bottleneck",
    "Buffer",
    "Check",
    "ExperimentReport",
    "ExperimentSpec",
    "Flow",
    "FlowMetrics",
    "GroupReport",
    "MatrixSpec",
    "RunPoint",
    "RunReport",
    "RunResult",
    "Runtime",
    "SpecError",
    "Submission",
    "errors_of",
    "expand_submission",
    "parse_buffer",
    "parse_duration",
    "parse_rate",
    "parse_size",
    "run_count",
    "runtimes_of",
]
