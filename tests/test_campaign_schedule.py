"""When campaign occurrences are due: pure time arithmetic with explicit instants (no clock)."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime, time, timedelta
from itertools import islice
from pathlib import Path
from typing import Any
from zoneinfo import ZoneInfo

import pytest
import yaml
from pydantic import TypeAdapter, ValidationError

from ccbench.campaigns.paths import submission_for
from ccbench.campaigns.schedule import day_instants, instants, next_instant
from schemas import MatrixSpec
from schemas.campaign import CampaignSpec, RandomSchedule, Schedule

SCHEDULE: TypeAdapter[Any] = TypeAdapter(Schedule)
T0 = datetime(2026, 3, 1, 12, 0, tzinfo=UTC)
BEFORE = T0 - timedelta(microseconds=1)


def sched(**kwargs: Any) -> Any:
    return SCHEDULE.validate_python(kwargs)


def test_interval_from_start_and_after_a_given_instant() -> None:
    every = sched(kind="interval", every="6h")
    got = list(instants(every, T0, 0, BEFORE, T0 + timedelta(days=1)))
    assert got == [T0 + timedelta(hours=6 * k) for k in range(5)]
    # After an instant that is not on the grid: the next grid point, never a shifted grid.
    assert next_instant(every, T0, 0, T0 + timedelta(hours=7)) == T0 + timedelta(hours=12)
    assert next_instant(every, T0, 0, T0 + timedelta(hours=12)) == T0 + timedelta(hours=18)


def test_cron_in_a_zone_follows_its_daylight_saving_changes() -> None:
    paris = ZoneInfo("Europe/Paris")
    daily = sched(kind="cron", expression="0 9 * * *", timezone="Europe/Paris")
    start = datetime(2026, 3, 27, tzinfo=UTC)
    got = list(instants(daily, start, 0, start, start + timedelta(days=4)))
    # 09:00 local every day: 08:00 UTC before the change (CET), 07:00 UTC after (CEST).
    assert [g.astimezone(paris).time() for g in got] == [time(9, 0)] * 4
    assert [g.hour for g in got] == [8, 8, 7, 7]
    # 02:30 does not exist on 29 March 2026 in Paris (02:00 -> 03:00): croniter's answer is
    # the first instant after the gap, once; the days around it are untouched.
    night = sched(kind="cron", expression="30 2 * * *", timezone="Europe/Paris")
    got = list(instants(night, start, 0, start, start + timedelta(days=4)))
    local = [g.astimezone(paris) for g in got]
    assert len(got) == len(set(got)) == 4
    assert [d.day for d in local] == [27, 28, 29, 30]
    assert local[0].time() == local[1].time() == local[3].time() == time(2, 30)
    assert local[2].time() >= time(3, 0)
    # 02:30 happens twice on 25 October 2026 (03:00 -> 02:00): it fires once, as cron does.
    autumn = datetime(2026, 10, 23, tzinfo=UTC)
    got = list(instants(night, autumn, 0, autumn, autumn + timedelta(days=4)))
    assert [g.astimezone(paris).day for g in got] == [23, 24, 25, 26]


def test_random_instants_stay_in_their_windows_with_the_count_per_day() -> None:
    schedule = sched(kind="random", per_day=5, timezone="America/New_York",
                     windows=[{"start": "08:00", "end": "12:00"},
                              {"start": "22:00", "end": "02:00"}])  # fmt: skip
    zone = ZoneInfo("America/New_York")
    start = datetime(2026, 6, 1, 4, 0, tzinfo=UTC)  # local midnight
    got = list(instants(schedule, start, 42, start, start + timedelta(days=10)))
    by_day = Counter(g.astimezone(zone).date() for g in got)
    inside = [g.astimezone(zone).time() for g in got]
    for at in inside:
        assert time(8) <= at < time(12) or at >= time(22) or at < time(2), at
    # Draws are per local day of the window's opening; a window crossing midnight puts some
    # of them on the next calendar day: five per opening day on the days fully inside.
    openings = Counter(
        (g.astimezone(zone) - timedelta(hours=2)).date()
        if g.astimezone(zone).time() < time(2)
        else g.astimezone(zone).date()
        for g in got
    )
    assert set(list(openings.values())[1:-1]) == {5}, openings
    assert sum(by_day.values()) == len(got) and len(got) == len(set(got))
    assert got == sorted(got)


def test_random_instants_are_reproducible_from_the_seed_and_differ_between_days() -> None:
    schedule = RandomSchedule.model_validate({"kind": "random", "per_day": 3})
    day = datetime(2026, 7, 4).date()
    assert day_instants(schedule, 7, day) == day_instants(schedule, 7, day)
    assert day_instants(schedule, 7, day) != day_instants(schedule, 8, day)
    next_day = day + timedelta(days=1)
    first = {day_instants(schedule, 7, d)[0].time() for d in (day, next_day)}
    assert len(first) == 2
    # Any split of the same span yields the same instants: firing resumes where it stopped.
    start = datetime(2026, 7, 1, tzinfo=UTC)
    end = start + timedelta(days=5)
    whole = list(instants(schedule, start, 7, start, end))
    middle = whole[6]
    assert whole == list(instants(schedule, start, 7, start, middle)) + list(
        instants(schedule, start, 7, middle, end)
    )


def test_random_window_across_a_daylight_saving_change_counts_its_real_length() -> None:
    # Night of 28-29 March 2026 in Paris is an hour shorter: a 00:00-04:00 window lasts 3 h.
    schedule = sched(kind="random", per_day=200, timezone="Europe/Paris",
                     windows=[{"start": "00:00", "end": "04:00"}])  # fmt: skip
    got = day_instants(schedule, 1, datetime(2026, 3, 29).date())
    assert len(got) == 200
    assert max(got) - min(got) <= timedelta(hours=3)
    paris = ZoneInfo("Europe/Paris")
    assert all(time(0) <= g.astimezone(paris).time() < time(4) for g in got)


def test_instants_never_precede_the_start_and_stop_at_until() -> None:
    schedule = sched(kind="cron", expression="*/10 * * * *")
    start = datetime(2026, 1, 1, 0, 5, tzinfo=UTC)
    got = list(
        islice(
            instants(schedule, start, 0, start - timedelta(days=1), start + timedelta(hours=1)), 100
        )
    )
    assert got[0] == datetime(2026, 1, 1, 0, 10, tzinfo=UTC)
    assert got[-1] == datetime(2026, 1, 1, 1, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("schedule", "field", "reason"),
    [
        ({"kind": "cron", "expression": "61 * * * *"}, "schedule.cron.expression", "not a cron"),
        ({"kind": "cron", "expression": "0 9 * * *", "timezone": "Mars/Olympus"},
         "schedule.cron.timezone", "not a time zone"),
        ({"kind": "random", "per_day": 2, "windows": [{"start": "10:00", "end": "10:00"}]},
         "schedule.random.windows.0", "zero length"),
        ({"kind": "random", "per_day": 2, "windows": [{"start": "25:00", "end": "10:00"}]},
         "schedule.random.windows.0.start", "pattern"),
        ({"kind": "interval", "every": "6"}, "schedule.interval.every", "unit"),
    ],
)  # fmt: skip
def test_bad_schedules_are_refused_naming_the_field(
    schedule: dict[str, Any], field: str, reason: str
) -> None:
    document = {"name": "c", "experiment": {}, "hosts": {"pairs": [["a", "b"]]},
                "schedule": schedule}  # fmt: skip
    with pytest.raises(ValidationError) as caught:
        CampaignSpec.model_validate(document)
    errors = caught.value.errors()
    assert [".".join(map(str, e["loc"])) for e in errors] == [field], errors
    assert reason in str(errors[0]["msg"]), errors


def test_stop_before_start_and_bad_host_selections_are_refused() -> None:
    base = {"name": "c", "experiment": {}, "schedule": {"kind": "interval", "every": "1h"}}
    cases = [
        ({"hosts": {"pairs": [["a", "b"]]}, "start": "2026-02-01T00:00:00Z",
          "stop": "2026-01-01T00:00:00Z"}, "stop", "after start"),
        ({"hosts": {"pairs": [["a", "a"]]}}, "hosts", "not a path"),
        ({"hosts": {"group": "g"}}, "hosts", "mesh: true"),
        ({"hosts": {"group": "g", "labels": {"site": "x"}, "mesh": True}}, "hosts", "exactly one"),
    ]  # fmt: skip
    for extra, field, reason in cases:
        with pytest.raises(ValidationError) as caught:
            CampaignSpec.model_validate({**base, **extra})
        error = caught.value.errors()[0]
        assert ".".join(map(str, error["loc"])) == field and reason in error["msg"], error


def test_per_window_puts_its_count_in_every_window_each_day() -> None:
    schedule = sched(kind="random", per_window=2, timezone="Europe/London",
                     windows=[{"start": "02:00", "end": "05:00"},
                              {"start": "15:00", "end": "18:00"}])  # fmt: skip
    london = ZoneInfo("Europe/London")
    for day in (datetime(2031, 1, 6).date(), datetime(2031, 7, 6).date()):  # GMT and BST
        got = [g.astimezone(london).time() for g in day_instants(schedule, 3, day)]
        assert sum(time(2) <= t < time(5) for t in got) == 2, got
        assert sum(time(15) <= t < time(18) for t in got) == 2, got
    with pytest.raises(ValidationError, match="exactly one of per_day or per_window"):
        sched(kind="random", per_day=1, per_window=1)


EXAMPLES = Path(__file__).parents[1] / "schemas" / "examples" / "campaigns"


@pytest.mark.parametrize("example", sorted(EXAMPLES.glob("*.yaml")), ids=lambda p: p.stem)
def test_example_campaigns_are_valid_and_their_experiments_too(example: Path) -> None:
    campaign = CampaignSpec.model_validate(yaml.safe_load(example.read_text()))
    submission = submission_for(campaign, ("a", "b"))
    base = submission.base if isinstance(submission, MatrixSpec) else submission
    assert [(f.src, f.dst) for f in base.flows] == [("a", "b")] * len(base.flows)
    start = datetime(2031, 1, 6, tzinfo=UTC)
    week = list(instants(campaign.schedule, start, 1, start, start + timedelta(days=7)))
    assert len(week) >= 7, week
