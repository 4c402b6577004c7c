"""Comparisons across experiments (and teams): GET /v1/compare."""
