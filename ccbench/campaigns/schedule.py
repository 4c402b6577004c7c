"""When a campaign's occurrences are due: pure time arithmetic, UTC in and out, so the firing
logic and its tests can use any clock. Cron expressions are croniter's; time zones and their
daylight-saving changes are zoneinfo's."""

from __future__ import annotations

import random
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from zoneinfo import ZoneInfo

from croniter import croniter

from schemas.campaign import CronSchedule, IntervalSchedule, RandomSchedule, Schedule, Window

# A random schedule is searched day by day; a year without an instant is no schedule.
_MAX_DAYS = 366


def instants(
    schedule: Schedule, start: datetime, seed: int, after: datetime, until: datetime
) -> Iterator[datetime]:
    """The due instants d with after < d <= until and d >= start, in order (UTC)."""
    if isinstance(schedule, IntervalSchedule):
        yield from _interval(schedule, start, after, until)
    elif isinstance(schedule, CronSchedule):
        yield from _cron(schedule, start, after, until)
    else:
        yield from _random(schedule, start, seed, after, until)


def next_instant(schedule: Schedule, start: datetime, seed: int, after: datetime) -> datetime:
    """The first due instant after `after`."""
    horizon = after + timedelta(days=_MAX_DAYS)
    found = next(instants(schedule, start, seed, after, horizon), None)
    if found is None:
        raise ValueError("the schedule has no instant within a year")
    return found


def _interval(
    schedule: IntervalSchedule, start: datetime, after: datetime, until: datetime
) -> Iterator[datetime]:
    every = timedelta(seconds=schedule.every)
    k = 0 if after < start else (after - start) // every + 1
    at = start + k * every
    while at <= until:
        yield at.astimezone(UTC)
        at += every


def _cron(
    schedule: CronSchedule, start: datetime, after: datetime, until: datetime
) -> Iterator[datetime]:
    zone = ZoneInfo(schedule.timezone)
    begin = max(after, start - timedelta(microseconds=1)).astimezone(zone)
    times = croniter(schedule.expression, begin)
    previous_wall_clock = begin.replace(tzinfo=None)
    while (local := times.get_next(datetime)).astimezone(UTC) <= until:
        # A wall-clock time that happens twice (the hour repeated when daylight saving ends)
        # fires once, as cron does: croniter yields both.
        if local.replace(tzinfo=None) != previous_wall_clock:
            yield local.astimezone(UTC)
        previous_wall_clock = local.replace(tzinfo=None)


def day_instants(schedule: RandomSchedule, seed: int, day: date) -> list[datetime]:
    """One local day's instants, drawn from the seed and the date alone: `per_day` of them
    uniform over all the day's windows together (their real lengths, so a window across a
    daylight-saving change counts what it lasts), or `per_window` uniform in each window."""
    zone = ZoneInfo(schedule.timezone)
    spans = []
    for window in schedule.windows:
        opens, closes = window.bounds()
        first = datetime.combine(day, opens, zone).astimezone(UTC)
        last_day = day if closes > opens else day + timedelta(days=1)
        last = datetime.combine(last_day, closes, zone).astimezone(UTC)
        spans.append((first, (last - first).total_seconds()))
    draw = random.Random(f"{seed}:{day.isoformat()}")
    out = []
    if schedule.per_window is not None:
        for first, length in spans:
            out += [first + timedelta(seconds=draw.uniform(0, length))
                    for _ in range(schedule.per_window)]  # fmt: skip
    else:
        assert schedule.per_day is not None
        total = sum(length for _, length in spans)
        for _ in range(schedule.per_day):
            offset = draw.uniform(0, total)
            for first, length in spans:
                if offset < length:
                    out.append(first + timedelta(seconds=offset))
                    break
                offset -= length
    return sorted(at.replace(microsecond=0) for at in out)


def _random(
    schedule: RandomSchedule, start: datetime, seed: int, after: datetime, until: datetime
) -> Iterator[datetime]:
    zone = ZoneInfo(schedule.timezone)
    # A window crossing midnight belongs to the day it opens: begin a day early.
    day = after.astimezone(zone).date() - timedelta(days=1)
    last = until.astimezone(zone).date()
    while day <= last:
        for at in day_instants(schedule, seed, day):
            if after < at <= until and at >= start:
                yield at
        day += timedelta(days=1)


# A schedule without windows of its own is reported in quarters of the day.
QUARTERS = [Window(start=f"{h:02d}:00", end=f"{(h + 6) % 24:02d}:00") for h in range(0, 24, 6)]


def report_windows(schedule: Schedule) -> tuple[str, list[Window]]:
    """The time zone and the time-of-day windows a campaign's results are summarised in: a
    random schedule's own windows, else the quarters of the day in its zone."""
    if isinstance(schedule, RandomSchedule):
        return schedule.timezone, list(schedule.windows)
    zone = schedule.timezone if isinstance(schedule, CronSchedule) else "UTC"
    return zone, QUARTERS


def in_window(at: datetime, window: Window, zone: str) -> bool:
    """Whether the instant's local time of day is in the window (end excluded)."""
    local = at.astimezone(ZoneInfo(zone)).time()
    opens, closes = window.bounds()
    if opens < closes:
        return opens <= local < closes
    return local >= opens or local < closes  # across midnight
