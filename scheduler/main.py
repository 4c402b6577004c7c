"""`python -m scheduler` (`ccbench scheduler`): the upkeep loop in the foreground until SIGTERM
or SIGINT."""

from __future__ import annotations

import logging
import signal
import threading

from ccbench.settings import get_settings, private_files
from ccbench.upkeep import start_upkeep_thread

log = logging.getLogger("ccbench.scheduler")


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s %(message)s")
    settings = get_settings()
    private_files(settings)
    stopped = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stopped.set())
    upkeep = start_upkeep_thread(settings)
    log.info("scheduler ready: dispatch every %.1f s, reaper every %.0f s",
             settings.dispatch_interval_s, settings.reaper_interval_s)  # fmt: skip
    stopped.wait()
    upkeep.set()
    log.info("scheduler stopped")
    return 0
