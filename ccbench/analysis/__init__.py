"""Turning a run's raw agent logs into metrics and reports: the formulas in `metrics`, a run's
analysis in `run` (which reads the logs through `logs` and calls `flows`, `queue`, `checks`
and `series`)."""
