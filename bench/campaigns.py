"""The scheduler's tick with 1,000 active campaigns on PostgreSQL (issue: campaigns; target
<= 100 ms per tick). Starts its own PostgreSQL (and Redis) as the test harness does, creates
the campaigns (interval 1000 s, starts one second apart, so one is due each second) and ticks
with an injected clock:

- idle: a tick when none is due (the query alone);
- steady: a tick per simulated second, each firing the one due campaign (its occurrence and
  experiment written in the tick's transaction);
- burst: all 1,000 due at once (after an outage with catch_up run_once), ticked until every
  one has fired (BATCH per tick), reported per tick and per occurrence.

Each phase runs ROUNDS times; the figures are the median over all ticks and the p95, with the
spread of the per-round medians.

    make bench-campaigns
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime, timedelta

from bench.figures import figure as emit

CAMPAIGNS = 1000
ROUNDS = 3
IDLE_TICKS = 50
STEADY_TICKS = 100
T0 = datetime(2031, 1, 6, tzinfo=UTC)


def figure(name: str, value: float | None, unit: str, target: str | None = None) -> None:
    emit("campaigns", name, value, unit, target)


def p95(values: list[float]) -> float:
    return sorted(values)[max(0, int(round(0.95 * len(values))) - 1)]


def main() -> int:
    from tests.services import start_services

    services = start_services()
    try:
        os.environ["CCBENCH_DATABASE_URL"] = services.database_url
        os.environ["CCBENCH_BROKER_URL"] = services.redis_url
        os.environ["CCBENCH_STATE_DIR"] = tempfile.mkdtemp(prefix="ccbench-bench-campaigns-")
        return run()
    finally:
        services.stop()


def timed_ticks(instants: list[datetime]) -> tuple[list[float], int]:
    from ccbench.campaigns.firing import tick

    times, fired = [], 0
    for now in instants:
        started = time.perf_counter()
        fired += len(tick(now).fired)
        times.append((time.perf_counter() - started) * 1000)
    return times, fired


def report(phase: str, rounds: list[list[float]], target: str | None = None) -> None:
    ticks = [t for r in rounds for t in r]
    medians = [statistics.median(r) for r in rounds]
    figure(f"{phase}_tick_median", statistics.median(ticks), "ms", target)
    figure(f"{phase}_tick_p95", p95(ticks), "ms", target)
    figure(f"{phase}_tick_median_spread", max(medians) - min(medians), "ms")


def run() -> int:
    from sqlalchemy import update

    from ccbench.campaigns.manage import create_campaign
    from ccbench.db.migrate import upgrade
    from ccbench.db.models import Campaign, Host
    from ccbench.db.session import session_scope
    from ccbench.settings import get_settings
    from ccbench.teams import create_team
    from schemas.campaign import CampaignSpec

    get_settings.cache_clear()
    upgrade(get_settings().effective_database_url)
    started = time.perf_counter()
    with session_scope() as session:
        team = create_team(session, "bench-campaigns")
        session.add_all(Host(team_id=team.id, name=n, address="127.0.0.1") for n in ("a", "b"))
        session.flush()
        for i in range(CAMPAIGNS):
            create_campaign(session, team, CampaignSpec.model_validate({
                "name": f"c{i}", "hosts": {"pairs": [["a", "b"]]},
                "schedule": {"kind": "interval", "every": f"{CAMPAIGNS}s"},
                "start": (T0 + timedelta(seconds=i)).isoformat(), "catch_up": "run_once",
                "experiment": {"name": "x", "testbed": {"kind": "hosts"}, "duration": "10s",
                               "topology": {"kind": "path"}, "flows": [{"algorithm": "reno"}]},
            }))  # fmt: skip
    figure("create_1000_campaigns", time.perf_counter() - started, "s")

    idle, steady = [], []
    for r in range(ROUNDS):
        before = T0 - timedelta(hours=1 + r)
        idle.append(timed_ticks([before] * IDLE_TICKS)[0])
        # Round r fires the campaigns due in its own 100 seconds.
        base = T0 + timedelta(seconds=r * STEADY_TICKS)
        times, fired = timed_ticks([base + timedelta(seconds=s) for s in range(STEADY_TICKS)])
        assert fired == STEADY_TICKS, f"round {r}: fired {fired} of {STEADY_TICKS}"
        steady.append(times)
    report("idle", idle, "<= 100 ms")
    report("steady", steady, "<= 100 ms")

    burst_ticks, per_occurrence = [], []
    for r in range(ROUNDS):
        # Every campaign due at once, 10 minutes after its instant: an outage, then run_once.
        due = T0 + timedelta(days=1 + r)
        with session_scope() as session:
            session.execute(update(Campaign).values(next_due_at=due, last_due_at=due -
                                                    timedelta(seconds=CAMPAIGNS)))  # fmt: skip
        now = due + timedelta(minutes=10)
        fired, ticks = 0, []
        while fired < CAMPAIGNS:
            times, n = timed_ticks([now])
            assert n > 0, f"burst round {r}: stuck at {fired}"
            fired += n
            ticks += times
        burst_ticks.append(ticks)
        per_occurrence.append(sum(ticks) / fired)
    report("burst", burst_ticks)
    figure("burst_ms_per_occurrence", statistics.median(per_occurrence), "ms")
    figure("burst_ms_per_occurrence_spread", max(per_occurrence) - min(per_occurrence), "ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
