"""The testbed contract: a testbed runs one run's plan (workers/plan.py) and says how it ended.
Every testbed writes the same run directory (ccbench.rundir), reports the same events, and
cleans up everything it made however the run ends."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from workers.plan import Plan

Status = Literal["done", "error", "cancelled", "timeout"]

# Events a testbed reports while it runs (docs/contracts.md):
#   {"event": "phase", "phase": "provisioning" | "running" | "collecting"}
#   {"event": "progress", "elapsed_s": 3.0, "duration_s": 20.0}
EventSink = Callable[[dict[str, Any]], None]
# Asked between steps: True stops the run as cancelled; it may raise when the run was lost
# (the testbed then stops, cleans up and lets the exception through).
CancelCheck = Callable[[], bool]


@dataclass
class TestbedResult:
    __test__ = False  # not a pytest test class, despite its name

    status: Status
    message: str | None
    returncode: int | None
    duration_s: float

    def describe(self) -> str:
        if self.status == "timeout":
            return f"the run exceeded its time limit ({self.duration_s:.0f} s) and was stopped"
        if self.status == "cancelled":
            return "cancelled"
        return self.message or f"the testbed exited with code {self.returncode}"


class Testbed(Protocol):
    def run(
        self, plan: Plan, events: EventSink, cancel: CancelCheck, deadline_s: float
    ) -> TestbedResult:
        """Run the plan, its outputs into plan.run_dir; stop at deadline_s (status
        "timeout") or when `cancel` says so (status "cancelled")."""
        ...
