"""The one settings object. Every value can be set from the environment as CCBENCH_<NAME>."""

import os
from functools import lru_cache
from pathlib import Path

from pydantic import Field, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

REPO_ROOT = Path(__file__).resolve().parent.parent


def _default_state_dir() -> Path:
    return Path.home() / ".local" / "share" / "ccbench"


class Settings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CCBENCH_", extra="ignore")

    state_dir: Path = Field(default_factory=_default_state_dir)
    # Empty means the embedded default: a SQLite file (database) and kombu's SQLAlchemy
    # transport on another SQLite file (broker), so one machine needs no server at all.
    database_url: str = ""
    broker_url: str = ""

    api_host: str = "127.0.0.1"
    api_port: int = 8321

    matrix_run_limit: int = 10_000

    # Run liveness: a worker writes heartbeat_at every heartbeat_interval_s while it owns a
    # run; a run whose heartbeat is older than heartbeat_timeout_s belongs to a dead worker.
    heartbeat_interval_s: float = 1.0
    heartbeat_timeout_s: float = 30.0
    # SQLite (embedded stack): how long a write waits for another's lock before it fails.
    sqlite_busy_timeout_s: float = 10.0
    reaper_interval_s: float = 10.0
    # Attempts per run, the first included: a run lost with its worker is queued again
    # until it has used them all, then marked failed.
    run_max_attempts: int = 2
    # Set-up and tear-down allowance added to a run's own duration for its time limit.
    run_time_margin_s: float = 60.0
    # Dispatch (ccbench.dispatch): each live worker gets a message per free slot plus
    # dispatch_prefetch waiting ones; a message unclaimed for dispatch_lease_s is presumed lost
    # and sent again; workers and the scheduler run a dispatch pass every dispatch_interval_s.
    dispatch_prefetch: int = 1
    dispatch_lease_s: float = 600.0
    dispatch_interval_s: float = 1.0

    # Workers on other machines upload run files to the API (ccbench.artifacts): its URL, and
    # the secret shared by the API and the workers that authorises the uploads.
    api_url: str = ""
    worker_token: str = ""
    artifact_max_bytes: int = 8 << 30

    # This worker (ccbench.workerpool): its id (default: host name + a random part kept in
    # state_dir), its pool, and when a silent worker counts as dead.
    worker_id: str = ""
    worker_pool: str = "default"
    worker_timeout_s: float = 30.0
    # Packing runs (workers/packing.py; docs/operations.md): a worker executes up to
    # worker_concurrency runs at once (its Celery pool processes and the slots it registers),
    # each only while the predicted CPU costs of the runs on this host add up to at most
    # pack_cpu_share of its CPUs (a run that alone costs more runs alone). The hosts' workers
    # share the budget through the ledger file pack_ledger (default <state_dir>/packing.json):
    # workers of other installations on the same host must name the same file. A run waits for
    # room at most pack_wait_s (still queued), then goes back to the dispatcher. A run whose
    # checks that load spoils (emulator timing, send jitter, host CPU) failed is run again,
    # alone, up to pack_load_reruns times.
    worker_concurrency: int = Field(default=4, ge=1, le=64)
    pack_cpu_share: float = Field(default=0.5, gt=0.0, le=1.0)
    pack_ledger: Path | None = None
    pack_wait_s: float = Field(default=300.0, ge=0.0)
    pack_load_reruns: int = Field(default=1, ge=0, le=5)

    @model_validator(mode="after")
    def _a_waiting_run_is_not_presumed_lost(self) -> "Settings":
        # A run waiting for room holds its message; past dispatch_lease_s the dispatcher would
        # send it again while it still waits.
        if self.pack_wait_s >= self.dispatch_lease_s:
            raise ValueError(
                f"pack_wait_s ({self.pack_wait_s:g} s) must be below dispatch_lease_s "
                f"({self.dispatch_lease_s:g} s): a run still waiting for room would be sent again"
            )
        return self

    # Encrypts secrets at rest (hosts' SSH private keys): a Fernet key (32 url-safe base64
    # bytes, `ccbench admin secret-key` prints a new one). Empty: the embedded default, a key
    # file created (mode 0600) in state_dir on first use. Changing it makes stored secrets
    # unreadable: hosts then need their keys again.
    secret_key: str = ""

    agents_dir: Path = REPO_ROOT / "agents" / "target" / "release"
    sandbox_python: Path = Path("/usr/bin/python3")

    @property
    def runs_dir(self) -> Path:
        return self.state_dir / "runs"

    @property
    def effective_database_url(self) -> str:
        return self.database_url or f"sqlite:///{self.state_dir / 'ccbench.sqlite'}"

    @property
    def effective_broker_url(self) -> str:
        return self.broker_url or f"sqla+sqlite:///{self.state_dir / 'broker.sqlite'}"

    @property
    def is_embedded_broker(self) -> bool:
        return self.effective_broker_url.startswith("sqla+")


@lru_cache
def get_settings() -> Settings:
    return Settings()


def private_files(settings: Settings | None = None) -> None:
    """Make everything this process creates owner-only (directories 0700, files 0600) and
    close the state directory to others: the database, the broker, logs and run artifacts
    hold every team's data and token hashes. Called by each ccbench process at start."""
    os.umask(0o077)
    state = (settings or get_settings()).state_dir
    if state.is_dir() and state.stat().st_uid == os.geteuid():
        state.chmod(0o700)
