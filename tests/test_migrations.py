"""Migrations keep what is stored. On SQLite, Alembic's batch mode rebuilds a table it alters
(copy, drop, rename): with foreign keys enforced, dropping `experiments` cascaded to every run,
flow result and tag (migration 0007 emptied an embedded user's database)."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from ccbench.db.migrate import upgrade

NOW = "2026-11-24 12:00:00"


def _populate_at_0006(path: Path) -> None:
    """One team, experiment, run, flow result and tag, as a 0006 database holds them."""
    db = sqlite3.connect(path)
    db.execute("INSERT INTO teams (id, name, created_at) VALUES ('t1', 'lab', ?)", (NOW,))
    db.execute(
        "INSERT INTO experiments (id, team_id, name, description, kind, submission, axes, "
        "status, run_count, created_at, updated_at) VALUES ('e1', 't1', 'sweep', '', "
        "'experiment', '{}', '[]', 'done', 1, ?, ?)",
        (NOW, NOW),
    )
    db.execute("INSERT INTO experiment_tags (experiment_id, tag) VALUES ('e1', 'kept')")
    db.execute(
        "INSERT INTO runs (id, experiment_id, order_index, point_index, repetition, "
        "axis_values, spec, seed, status, attempt, progress, queued_at, timings, provenance, "
        "aggregate) VALUES ('r1', 'e1', 0, 0, 0, '{}', '{}', 1, 'done', 1, '{}', ?, '{}', "
        "'{}', ?)",
        (NOW, json.dumps({"aggregate": {"goodput_bps": 9.6e6}})),
    )
    db.execute(
        "INSERT INTO flow_results (run_id, flow_index, algorithm, metrics) "
        "VALUES ('r1', 0, 'reno', '{}')"
    )
    db.commit()
    db.close()


def test_upgrading_an_embedded_database_keeps_its_runs(tmp_path: Path) -> None:
    path = tmp_path / "ccbench.sqlite"
    url = f"sqlite:///{path}"
    upgrade(url, "0006")
    _populate_at_0006(path)
    upgrade(url)  # 0007 rebuilds experiments (and api_tokens) in batch mode
    db = sqlite3.connect(path)
    counts = {
        table: db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]  # noqa: S608
        for table in ("teams", "experiments", "runs", "flow_results", "experiment_tags")
    }
    assert counts == dict.fromkeys(counts, 1), counts
    assert db.execute("PRAGMA foreign_key_check").fetchall() == []
    aggregate = json.loads(db.execute("SELECT aggregate FROM runs").fetchone()[0])
    assert aggregate["aggregate"]["goodput_bps"] == 9.6e6
    db.close()
