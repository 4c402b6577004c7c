"""Enqueue runs. Callers commit the runs first: a task must never see a run that is not stored."""

from workers.celery_app import app
from workers.queues import Queue

EXECUTE_RUN = "ccbench.execute_run"


def run_time_limit_s(duration_s: float, margin_s: float) -> float:
    """Hard time limit of one run: its own duration plus set-up, collection and analysis."""
    return duration_s * 1.5 + margin_s


def enqueue_run(run_id: str, *, time_limit_s: float) -> None:
    app.send_task(
        EXECUTE_RUN,
        args=[run_id],
        queue=Queue.runs.value,
        time_limit=time_limit_s,
        soft_time_limit=max(1.0, time_limit_s - 10.0),
    )
