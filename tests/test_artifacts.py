"""A worker on another machine uploads a run's files to the API (workers/artifacts.py): a log
that grows while it is sent arrives as the prefix it had when the upload began, and whole
once it has stopped growing."""

from __future__ import annotations

import os
import secrets
import threading
from pathlib import Path

import httpx
import pytest
import yaml

from ccbench.settings import REPO_ROOT, get_settings
from tests.processes import Api
from tests.services import cancel_leftover_runs, free_port
from workers.artifacts import Uploader

pytestmark = pytest.mark.services


def test_a_log_growing_during_its_upload_arrives_whole_in_the_end(
    team_token: tuple[str, str], tmp_path: Path
) -> None:
    _, token = team_token
    worker_token = "wt_" + secrets.token_urlsafe(24)
    api = Api(free_port(), {**os.environ, "CCBENCH_WORKER_TOKEN": worker_token},
              tmp_path / "api.log")  # fmt: skip
    headers = {"Authorization": f"Bearer {token}"}
    try:
        spec = yaml.safe_load(
            (REPO_ROOT / "schemas/examples/dumbbell-reno-vs-cubic.yaml").read_text()
        )
        created = httpx.post(f"{api.url}/v1/experiments", json=spec, headers=headers)
        assert created.status_code == 201, created.text
        run_id = httpx.get(f"{api.url}/v1/experiments/{created.json()['id']}",
                           headers=headers).json()["runs"][0]["id"]  # fmt: skip
        cancel_leftover_runs()  # no worker here: the run only owns the files
        run_dir = tmp_path / "run"
        run_dir.mkdir()
        log = run_dir / "run.log"
        log.write_bytes(b"x" * 4_000_000)
        settings = get_settings().model_copy(
            update={"api_url": api.url, "worker_token": worker_token}
        )
        uploader = Uploader(settings, run_id, 1, run_dir)
        stop = threading.Event()

        def grow() -> None:  # the run appends to its log while the upload reads it
            with log.open("ab") as handle:
                while not stop.is_set():
                    handle.write(b"y" * 4096)
                    handle.flush()

        writer = threading.Thread(target=grow)
        writer.start()
        try:
            assert uploader.everything() == []  # not "too much data for Content-Length"
        finally:
            stop.set()
            writer.join()
        assert uploader.everything() == []
        stored = httpx.get(f"{api.url}/v1/runs/{run_id}/files/run.log", headers=headers)
        assert stored.status_code == 200, stored.text
        assert stored.content == log.read_bytes()
    finally:
        api.kill_hard()
