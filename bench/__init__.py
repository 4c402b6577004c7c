"""Benchmarks; each prints its figures as JSON lines (bench, figure, value, unit, target)."""
