"""Celery queues, one per kind of work."""

from enum import StrEnum


class Queue(StrEnum):
    # Experiment runs. A worker consuming it needs root on a host that can build testbeds, and
    # runs one run at a time (concurrency 1) so runs never compete for the host's CPUs.
    runs = "ccbench.runs"
