"""What every worker process (and the scheduler) does beside its runs, in a daemon thread: a
worker heartbeats its registration; all reap the runs of dead workers (every reaper_interval_s,
with the caller's other chores), fire the campaign occurrences that are due and dispatch queued
runs (every dispatch_interval_s). Each pass is safe from any number of processes at once: a
campaign occurrence fires once however many of them tick (ccbench.campaigns.firing)."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping

from ccbench.campaigns.firing import tick
from ccbench.db.session import session_scope
from ccbench.dispatch import dispatch
from ccbench.reaper import reap_stale_runs
from ccbench.settings import Settings, get_settings
from ccbench.workerpool import heartbeat

log = logging.getLogger(__name__)


def start_upkeep_thread(
    settings: Settings | None = None,
    worker: str | None = None,
    chores: Mapping[str, Callable[[], object]] | None = None,
) -> threading.Event:
    """Start the loop (with `worker`, that worker's heartbeat); set the returned event to stop
    it. `chores` (name -> function) run after each reaper pass."""
    settings = settings or get_settings()
    stop = threading.Event()

    def loop() -> None:
        next_reap = 0.0
        while not stop.is_set():
            now = time.monotonic()
            if now >= next_reap:
                next_reap = now + settings.reaper_interval_s
                _guarded("reaper", lambda: len(reap_stale_runs(settings)))
                for name, chore in (chores or {}).items():
                    _guarded(name, chore)
            if worker is not None:
                _guarded("heartbeat", lambda: _heartbeat(worker))
            _guarded("campaigns", lambda: len(tick(settings=settings).fired))
            _guarded("dispatch", lambda: dispatch(settings))
            stop.wait(settings.dispatch_interval_s)

    threading.Thread(target=loop, name="ccbench-upkeep", daemon=True).start()
    return stop


def _heartbeat(worker: str) -> int:
    with session_scope() as session:
        heartbeat(session, worker)
    return 1


def _guarded(name: str, step: Callable[[], object]) -> None:
    try:
        step()
    except Exception:  # noqa: BLE001 - keep going after a transient database or broker error
        log.exception("%s pass failed", name)
