"""What every worker process does beside its runs, in a daemon thread: reap the runs of dead
workers (every reaper_interval_s, with the caller's other chores) and dispatch queued runs
(every dispatch_interval_s). Each pass is safe from any number of processes at once."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping

from ccbench.dispatch import dispatch
from ccbench.reaper import reap_stale_runs
from ccbench.settings import Settings, get_settings

log = logging.getLogger(__name__)


def start_upkeep_thread(
    settings: Settings | None = None, chores: Mapping[str, Callable[[], object]] | None = None
) -> threading.Event:
    """Start the loop; set the returned event to stop it. `chores` (name -> function) run
    after each reaper pass."""
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
            _guarded("dispatch", lambda: dispatch(settings))
            stop.wait(settings.dispatch_interval_s)

    threading.Thread(target=loop, name="ccbench-upkeep", daemon=True).start()
    return stop


def _guarded(name: str, step: Callable[[], object]) -> None:
    try:
        step()
    except Exception:  # noqa: BLE001 - keep going after a transient database or broker error
        log.exception("%s pass failed", name)
