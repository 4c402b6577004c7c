"""Celery tasks. Each task's policy is in its decorator."""

from typing import Any

from celery.signals import worker_init, worker_ready, worker_shutdown

from ccbench.jobs import EXECUTE_RUN
from workers.celery_app import app


@app.task(  # type: ignore[untyped-decorator]
    name=EXECUTE_RUN,
    # Idempotent (a run that is not queued is skipped), so the message is acknowledged only
    # after the run ended: a worker that dies mid-run leaves it for redelivery and the reaper.
    acks_late=True,
    reject_on_worker_lost=False,
    # No autoretry: failures are the experiment's result, recorded on the run row. Time
    # limits come per message from the run's budget (ccbench.jobs.run_budget).
    ignore_result=True,
)
def execute_run(run_id: str) -> str:
    from ccbench.dispatch import dispatch_quietly
    from workers.lifecycle import execute

    try:
        return execute(run_id)
    finally:
        dispatch_quietly()  # the next run's message waits in the broker before this one acks


@worker_init.connect  # type: ignore[untyped-decorator]
def _private_files(**_kwargs: Any) -> None:
    from ccbench.settings import private_files

    private_files()  # run directories, logs: owner-only (the pool inherits the umask)


@worker_ready.connect  # type: ignore[untyped-decorator]
def _register_and_start_upkeep(**_kwargs: Any) -> None:
    """Register what this worker can run, then keep it registered (heartbeat), reap dead
    workers' runs and dispatch queued ones in the upkeep thread."""
    from ccbench import workerpool
    from ccbench.db.session import session_scope
    from ccbench.reaper import reap_stale_runs
    from ccbench.settings import get_settings
    from ccbench.upkeep import start_upkeep_thread
    from ccbench.version import CCBENCH_VERSION
    from workers.capabilities import probe_capabilities
    from workers.testbeds.registry import sweep_orphan_controllers

    settings = get_settings()
    capabilities = probe_capabilities(settings)
    with session_scope() as session:
        workerpool.register(session, workerpool.worker_id(settings), settings.worker_pool,
                            capabilities, slots=settings.worker_concurrency,
                            version=CCBENCH_VERSION)  # fmt: skip
    reap_stale_runs()
    # BPF controllers of runs that died with their pool process are removed here, in the main
    # process, soon after the reaper takes the run back (not only before the next BPF run);
    # pending ones are checked again each time.
    start_upkeep_thread(
        settings,
        worker=workerpool.worker_id(settings),
        chores={"BPF sweep": sweep_orphan_controllers},
    )


@worker_shutdown.connect  # type: ignore[untyped-decorator]
def _deregister(**_kwargs: Any) -> None:
    from ccbench import workerpool
    from ccbench.db.session import session_scope

    with session_scope() as session:
        workerpool.stopped(session, workerpool.worker_id())
