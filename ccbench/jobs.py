"""Run jobs: the queues workers consume, every run's time budget (one formula for the task's own
deadline and Celery's limits), and sending one run's message (ccbench.dispatch decides when).

The database run row is the truth; a message carries only the run id."""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from celery import Celery

from ccbench.settings import Settings, get_settings

# Each worker consumes only its own queue: the dispatcher (ccbench.dispatch) picks the worker
# that can run a run (ccbench.workerpool), so a message never reaches one that cannot. A worker
# runs as root on a host that builds testbeds.
WORKER_QUEUE_PREFIX = "ccbench.worker."


def worker_queue(worker_id: str) -> str:
    return WORKER_QUEUE_PREFIX + worker_id


EXECUTE_RUN = "ccbench.execute_run"

# Time a testbed may need beyond a run's own set-up: the hosts testbed provisions a host that
# lacks the worker's agents before the trial (minutes on a slow link).
TESTBED_ALLOWANCE_S: dict[str, float] = {"mininet": 0.0, "hosts": 300.0}
# After the testbed's deadline: stopping it, analysing and storing the results.
FINISH_ALLOWANCE_S = 60.0
# Between Celery's soft limit (an exception in the task, which records the failure) and its
# hard limit (the pool process is killed).
HARD_AFTER_SOFT_S = 30.0


@dataclass(frozen=True)
class RunBudget:
    """How long one run may take. The task stops the testbed at `deadline_s` and fails the run
    itself; Celery's limits only back it up, so they come later."""

    deadline_s: float
    soft_limit_s: float
    hard_limit_s: float


def run_budget(duration_s: float, testbed: str, settings: Settings | None = None) -> RunBudget:
    """The run's own duration x 1.5, plus set-up and tear-down (settings.run_time_margin_s),
    plus its testbed's allowance. Celery's limits count from the task's start, before which
    the run may wait for room on its host (settings.pack_wait_s, workers/packing.py)."""
    settings = settings or get_settings()
    deadline = duration_s * 1.5 + settings.run_time_margin_s + TESTBED_ALLOWANCE_S.get(testbed, 0.0)
    soft = deadline + FINISH_ALLOWANCE_S + settings.pack_wait_s
    return RunBudget(deadline_s=deadline, soft_limit_s=soft, hard_limit_s=soft + HARD_AFTER_SOFT_S)


def spec_budget(spec: dict[str, Any], settings: Settings | None = None) -> RunBudget:
    """run_budget of a stored run spec (SI numbers, as the run row holds it)."""
    testbed = str((spec.get("testbed") or {}).get("kind", "mininet"))
    return run_budget(float(spec.get("duration", 0.0)), testbed, settings)


def celery_config(settings: Settings) -> dict[str, Any]:
    """The Celery configuration every ccbench process shares (workers and producers)."""
    return {
        "broker_url": settings.effective_broker_url,
        "task_ignore_result": True,
        "result_backend": None,
        "task_serializer": "json",
        "accept_content": ["json"],
        "worker_prefetch_multiplier": 1,
        # Runs at once in a worker (its prefork pool processes), each admitted by the host's
        # CPU budget (workers/packing.py); the dispatcher sends it as many plus the prefetch.
        "worker_concurrency": settings.worker_concurrency,
        "worker_hijack_root_logger": False,
        "broker_connection_retry_on_startup": True,
        "broker_connection_max_retries": 3,
        "enable_utc": True,
    }


def prepare_broker(settings: Settings) -> None:
    """The embedded broker (kombu's SQLAlchemy transport on a SQLite file) needs its directory,
    and its polling interval set on the transport class: kombu passes transport options to
    create_engine, which rejects unknown ones."""
    if settings.is_embedded_broker:
        from kombu.transport import sqlalchemy as kombu_sqla

        kombu_sqla.Transport.polling_interval = 0.1
        settings.state_dir.mkdir(parents=True, exist_ok=True)


def make_celery(settings: Settings, **kwargs: Any) -> Celery:
    prepare_broker(settings)
    app = Celery("ccbench", **kwargs)
    app.conf.update(celery_config(settings))
    return app


@lru_cache
def _producer(broker_url: str) -> Celery:
    del broker_url  # the cache key: one producer per broker
    return make_celery(get_settings(), set_as_current=False)


def enqueue_run(run_id: str, budget: RunBudget, queue: str) -> None:
    """Send the run's message to `queue` (a worker's own) now. Only the dispatcher calls it,
    for runs it has read from the database: a worker must never be handed a run that is not
    stored."""
    settings = get_settings()
    _producer(settings.effective_broker_url).send_task(
        EXECUTE_RUN,
        args=[run_id],
        queue=queue,
        time_limit=budget.hard_limit_s,
        soft_time_limit=budget.soft_limit_s,
    )
