"""SQLAlchemy 2 typed models. PostgreSQL in production, SQLite embedded; one set of migrations."""

import uuid
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    DateTime,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Text,
    UniqueConstraint,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.engine import Dialect
from sqlalchemy.orm import DeclarativeBase, Mapped, mapped_column, relationship
from sqlalchemy.types import TypeDecorator

from schemas.limits import (
    AXIS_PATH_MAX,
    FACET_VALUE_MAX,
    ID_LENGTH,
    IDEMPOTENCY_KEY_MAX,
    NAME_MAX,
    TAG_MAX,
)

NAMING_CONVENTION = {
    "ix": "ix_%(column_0_label)s",
    "uq": "uq_%(table_name)s_%(column_0_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}

JsonType = JSON().with_variant(JSONB(), "postgresql")


class UtcDateTime(TypeDecorator[datetime]):
    """A point in time, stored in UTC and always read back with its offset. PostgreSQL keeps
    `timestamptz`; SQLite keeps text without an offset, which would come back naive."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("a timestamp without a time zone cannot be stored")
        return value.astimezone(UTC)

    def process_result_value(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


def new_id() -> str:
    return uuid.uuid4().hex


def utcnow() -> datetime:
    return datetime.now(UTC)


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING_CONVENTION)
    type_annotation_map = {dict[str, Any]: JsonType, list[Any]: JsonType, datetime: UtcDateTime}


class Team(Base):
    __tablename__ = "teams"

    id: Mapped[str] = mapped_column(String(ID_LENGTH), primary_key=True, default=new_id)
    name: Mapped[str] = mapped_column(String(NAME_MAX), unique=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


class ApiToken(Base):
    __tablename__ = "api_tokens"

    id: Mapped[str] = mapped_column(String(ID_LENGTH), primary_key=True, default=new_id)
    team_id: Mapped[str] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(NAME_MAX))
    # sha256 of the secret: the secret itself is shown once, at creation.
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    revoked_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    # None: the token does not expire. A revoked or expired token is refused at once.
    expires_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    # What the token may do (ccbench.access.Scope): read < write < admin.
    scope: Mapped[str] = mapped_column(String(8))

    team: Mapped[Team] = relationship()


class Experiment(Base):
    __tablename__ = "experiments"

    id: Mapped[str] = mapped_column(String(ID_LENGTH), primary_key=True, default=new_id)
    team_id: Mapped[str] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(NAME_MAX), index=True)
    description: Mapped[str] = mapped_column(Text, default="")
    # Free text the team adds after the fact (PATCH); the description is the submission's.
    notes: Mapped[str] = mapped_column(Text, default="")
    kind: Mapped[str] = mapped_column(String(16))  # experiment | matrix
    # The submission as validated and normalised (SI units): the source of every run's spec.
    submission: Mapped[dict[str, Any]] = mapped_column()
    # Matrix axis paths in order (empty for a single experiment): the report groups by them.
    axes: Mapped[list[Any]] = mapped_column(default=list)
    status: Mapped[str] = mapped_column(String(16), index=True)
    run_count: Mapped[int] = mapped_column(Integer)
    cancel_requested_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, onupdate=utcnow)
    # An occurrence of a campaign measures one path (sender -> receiver) per experiment.
    campaign_id: Mapped[str | None] = mapped_column(
        ForeignKey("campaigns.id", ondelete="SET NULL"), index=True
    )
    occurrence_id: Mapped[str | None] = mapped_column(
        ForeignKey("campaign_occurrences.id", ondelete="SET NULL"), index=True
    )
    path: Mapped[str | None] = mapped_column(String(130))  # "h1->h2"
    # "Run again": the experiment whose stored submission this one was cloned from.
    source_experiment_id: Mapped[str | None] = mapped_column(
        ForeignKey("experiments.id", ondelete="SET NULL"), index=True
    )
    # Derived for browsing (ccbench.browse), written with the experiment and by every
    # refresh of its status: the algorithm ids and testbed kinds of its runs (space
    # separated, sorted), run counts by status (queued, running = any active state, done,
    # failed, cancelled) and the median of each aggregate metric over its done runs.
    algorithms: Mapped[str] = mapped_column(String(500), default="")
    testbed: Mapped[str] = mapped_column(String(32), default="")
    status_counts: Mapped[dict[str, Any]] = mapped_column(default=dict)
    summary: Mapped[dict[str, Any]] = mapped_column(default=dict)

    tags: Mapped[list["ExperimentTag"]] = relationship(
        cascade="all, delete-orphan", lazy="selectin", order_by="ExperimentTag.tag"
    )

    __table_args__ = (Index("ix_experiments_team_created", "team_id", "created_at"),)


class Campaign(Base):
    """A measurement campaign (schemas.campaign.CampaignSpec) and where its schedule stands:
    the scheduler fires the occurrence due at `next_due_at` (ccbench.campaigns.firing)."""

    __tablename__ = "campaigns"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    team_id: Mapped[str] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(NAME_MAX), index=True)
    spec: Mapped[dict[str, Any]] = mapped_column()  # the CampaignSpec, validated, start set
    state: Mapped[str] = mapped_column(String(16), index=True)  # active|paused|finished|stopped
    seed: Mapped[int] = mapped_column(Integer)
    next_due_at: Mapped[datetime | None] = mapped_column(UtcDateTime(), index=True)
    last_due_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    fired: Mapped[int] = mapped_column(Integer, default=0)
    missed: Mapped[int] = mapped_column(Integer, default=0)
    failed: Mapped[int] = mapped_column(Integer, default=0)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, onupdate=utcnow)


class CampaignOccurrence(Base):
    """One due instant of a campaign: fired (its experiments created), missed (no scheduler
    ran, catch-up skip) or failed (e.g. a host it names is gone). Unique per instant: two
    schedulers cannot both fire it."""

    __tablename__ = "campaign_occurrences"

    id: Mapped[str] = mapped_column(String(32), primary_key=True, default=new_id)
    campaign_id: Mapped[str] = mapped_column(
        ForeignKey("campaigns.id", ondelete="CASCADE"), index=True
    )
    due_at: Mapped[datetime] = mapped_column(UtcDateTime())
    state: Mapped[str] = mapped_column(String(16))  # fired | missed | failed
    fired_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    error: Mapped[str | None] = mapped_column(Text)

    __table_args__ = (
        UniqueConstraint("campaign_id", "due_at", name="uq_campaign_occurrences_campaign_due"),
    )


class HostReservation(Base):
    """A host of a team's inventory in use by one run (hosts testbed): no other run starts on
    it until the reservation is released, when the run ends or its worker is found dead."""

    __tablename__ = "host_reservations"

    team_id: Mapped[str] = mapped_column(
        ForeignKey("teams.id", ondelete="CASCADE"), primary_key=True
    )
    host: Mapped[str] = mapped_column(String(63), primary_key=True)
    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


class ExperimentTag(Base):
    __tablename__ = "experiment_tags"

    experiment_id: Mapped[str] = mapped_column(
        ForeignKey("experiments.id", ondelete="CASCADE"), primary_key=True
    )
    tag: Mapped[str] = mapped_column(String(TAG_MAX), primary_key=True, index=True)


class ExperimentFacet(Base):
    """A (field path, value) that some run of the experiment has in its spec: what the
    listing's parameter filters match (ccbench.browse.facets). Paths are written as matrix
    axes are (`flows[*].algorithm` for any flow, `flows[1].start` for one); values in their
    canonical text (ccbench.browse.canonical)."""

    __tablename__ = "experiment_facets"

    experiment_id: Mapped[str] = mapped_column(
        ForeignKey("experiments.id", ondelete="CASCADE"), primary_key=True
    )
    key: Mapped[str] = mapped_column(String(AXIS_PATH_MAX), primary_key=True)
    value: Mapped[str] = mapped_column(String(FACET_VALUE_MAX), primary_key=True)

    __table_args__ = (Index("ix_experiment_facets_key_value", "key", "value"),)


class ExperimentPin(Base):
    """An experiment a team pinned as a favourite (its own, or one shared with it)."""

    __tablename__ = "experiment_pins"

    team_id: Mapped[str] = mapped_column(
        ForeignKey("teams.id", ondelete="CASCADE"), primary_key=True
    )
    experiment_id: Mapped[str] = mapped_column(
        ForeignKey("experiments.id", ondelete="CASCADE"), primary_key=True, index=True
    )
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


class Grant(Base):
    """Read access to one resource of a team (ccbench.sharing), keyed by its kind
    (`experiment`, `campaign`) and id: for one other team, or for every team (public) when
    `grantee_team_id` is None."""

    __tablename__ = "grants"

    id: Mapped[str] = mapped_column(String(ID_LENGTH), primary_key=True, default=new_id)
    resource_kind: Mapped[str] = mapped_column(String(16))
    resource_id: Mapped[str] = mapped_column(String(ID_LENGTH))
    owner_team_id: Mapped[str] = mapped_column(
        ForeignKey("teams.id", ondelete="CASCADE"), index=True
    )
    grantee_team_id: Mapped[str | None] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)

    __table_args__ = (
        UniqueConstraint(
            "resource_kind", "resource_id", "grantee_team_id", name="uq_grants_resource_grantee"
        ),
        # One public grant per resource (NULLs are distinct in the constraint above).
        Index(
            "uq_grants_resource_public",
            "resource_kind",
            "resource_id",
            unique=True,
            postgresql_where=text("grantee_team_id IS NULL"),
            sqlite_where=text("grantee_team_id IS NULL"),
        ),
        Index("ix_grants_grantee", "resource_kind", "grantee_team_id"),
    )


class Run(Base):
    __tablename__ = "runs"

    id: Mapped[str] = mapped_column(String(ID_LENGTH), primary_key=True, default=new_id)
    experiment_id: Mapped[str] = mapped_column(
        ForeignKey("experiments.id", ondelete="CASCADE"), index=True
    )
    # Position in execution order (shuffled when the matrix asks for it).
    order_index: Mapped[int] = mapped_column(Integer)
    point_index: Mapped[int] = mapped_column(Integer)
    repetition: Mapped[int] = mapped_column(Integer)
    axis_values: Mapped[dict[str, Any]] = mapped_column(default=dict)
    spec: Mapped[dict[str, Any]] = mapped_column()
    seed: Mapped[int] = mapped_column(Integer)

    status: Mapped[str] = mapped_column(String(16), index=True)
    # When a queued run's message was last sent to the broker (ccbench.dispatch); None: it has
    # none yet, so a dispatcher sends it (after a crash at any instant, within seconds).
    dispatched_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    # The worker whose queue got that message (ccbench.workerpool).
    dispatched_to: Mapped[str | None] = mapped_column(String(120))
    attempt: Mapped[int] = mapped_column(Integer, default=0)
    worker_id: Mapped[str | None] = mapped_column(String(200))
    heartbeat_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    progress: Mapped[dict[str, Any]] = mapped_column(default=dict)
    queued_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    started_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    finished_at: Mapped[datetime | None] = mapped_column(UtcDateTime())
    # Per-phase timings in seconds: provisioning, running, collecting, analyzing.
    timings: Mapped[dict[str, Any]] = mapped_column(default=dict)
    error: Mapped[str | None] = mapped_column(Text)
    # Host kernel, probed capabilities, exact tc/sysctl/ethtool commands, versions, seed.
    provenance: Mapped[dict[str, Any]] = mapped_column(default=dict)
    aggregate: Mapped[dict[str, Any]] = mapped_column(default=dict)
    artifacts_dir: Mapped[str | None] = mapped_column(Text)
    # Packing (workers/packing.py): how many other runs held the host's CPU budget at some
    # moment of this run's latest attempt (None until an attempt has finished), and how many
    # times it was run again, alone, because checks that load spoils failed.
    runs_beside: Mapped[int | None] = mapped_column(Integer)
    load_reruns: Mapped[int] = mapped_column(Integer, default=0)

    flows: Mapped[list["FlowResult"]] = relationship(
        cascade="all, delete-orphan", order_by="FlowResult.flow_index"
    )

    __table_args__ = (Index("ix_runs_experiment_order", "experiment_id", "order_index"),)


class Worker(Base):
    """A worker process as it registered (ccbench.workerpool): live while it heartbeats."""

    __tablename__ = "workers"

    id: Mapped[str] = mapped_column(String(120), primary_key=True)
    pool: Mapped[str] = mapped_column(String(63), index=True)
    # ccbench.workerpool.Capabilities: testbeds, congestion_controls, bpf, netem, nfqueue.
    capabilities: Mapped[dict[str, Any]] = mapped_column(default=dict)
    slots: Mapped[int] = mapped_column(Integer, default=1)  # runs it executes at once
    version: Mapped[str] = mapped_column(String(64), default="")
    host: Mapped[str] = mapped_column(String(255), default="")
    pid: Mapped[int] = mapped_column(Integer, default=0)
    started_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    heartbeat_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    stopped_at: Mapped[datetime | None] = mapped_column(UtcDateTime())


class IdempotencyKey(Base):
    """A submission's Idempotency-Key: a retried request with the same key and body gets the
    experiment the first one created instead of a duplicate."""

    __tablename__ = "idempotency_keys"

    team_id: Mapped[str] = mapped_column(
        ForeignKey("teams.id", ondelete="CASCADE"), primary_key=True
    )
    key: Mapped[str] = mapped_column(String(IDEMPOTENCY_KEY_MAX), primary_key=True)
    request_sha256: Mapped[str] = mapped_column(String(64))
    experiment_id: Mapped[str] = mapped_column(
        ForeignKey("experiments.id", ondelete="CASCADE"), index=True
    )
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)


class FlowResult(Base):
    __tablename__ = "flow_results"

    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    flow_index: Mapped[int] = mapped_column(Integer, primary_key=True)
    algorithm: Mapped[str] = mapped_column(String(ID_LENGTH))
    metrics: Mapped[dict[str, Any]] = mapped_column(default=dict)


class RunSeries(Base):
    """A down-sampled time series of a run, stored columnar: {"t": [...], "<column>": [...]}."""

    __tablename__ = "run_series"

    run_id: Mapped[str] = mapped_column(ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True)
    name: Mapped[str] = mapped_column(String(64), primary_key=True)  # e.g. "flow.0", "queue"
    data: Mapped[dict[str, Any]] = mapped_column()


class Host(Base):
    """An experiment host of a team's `hosts` testbed, reached over SSH.

    `private_key_encrypted` holds the SSH private key encrypted with the settings' secret key
    (ccbench.secrets); no endpoint returns it. `credential_ref` instead names where the worker
    finds the key (`file:/path` or `env:NAME`); neither: the worker's own SSH configuration."""

    __tablename__ = "hosts"

    id: Mapped[str] = mapped_column(String(ID_LENGTH), primary_key=True, default=new_id)
    team_id: Mapped[str] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(63))
    address: Mapped[str] = mapped_column(String(255))
    port: Mapped[int] = mapped_column(Integer, default=22)
    user: Mapped[str] = mapped_column(String(ID_LENGTH), default="root")
    labels: Mapped[dict[str, Any]] = mapped_column(default=dict)
    private_key_encrypted: Mapped[str | None] = mapped_column(Text)
    key_fingerprint: Mapped[str | None] = mapped_column(String(100))
    credential_ref: Mapped[str | None] = mapped_column(String(300))
    # The experiment network's address when it differs from the SSH (management) address.
    data_address: Mapped[str | None] = mapped_column(String(255))
    # The host's SSH public key ("ssh-ed25519 AAAA..."), pinned; none: the worker's known_hosts.
    host_key: Mapped[str | None] = mapped_column(Text)
    # Where the playbooks install the agents on the host (none: the role's /opt/ccbench).
    install_prefix: Mapped[str | None] = mapped_column(String(255))
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow, onupdate=utcnow)

    __table_args__ = (UniqueConstraint("team_id", "name", name="uq_hosts_team_id_name"),)


class HostGroup(Base):
    __tablename__ = "host_groups"

    id: Mapped[str] = mapped_column(String(ID_LENGTH), primary_key=True, default=new_id)
    team_id: Mapped[str] = mapped_column(ForeignKey("teams.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(63))
    labels: Mapped[dict[str, Any]] = mapped_column(default=dict)
    created_at: Mapped[datetime] = mapped_column(UtcDateTime(), default=utcnow)

    hosts: Mapped[list[Host]] = relationship(
        secondary="host_group_members", lazy="selectin", order_by="Host.name"
    )

    __table_args__ = (UniqueConstraint("team_id", "name", name="uq_host_groups_team_id_name"),)


class HostGroupMember(Base):
    __tablename__ = "host_group_members"

    group_id: Mapped[str] = mapped_column(
        ForeignKey("host_groups.id", ondelete="CASCADE"), primary_key=True
    )
    host_id: Mapped[str] = mapped_column(
        ForeignKey("hosts.id", ondelete="CASCADE"), primary_key=True, index=True
    )
