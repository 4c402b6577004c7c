"""Request and response shapes of the host inventory. Secrets are write-only: a private key
goes in, only its fingerprint comes out."""

from __future__ import annotations

import re
from datetime import datetime
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

NAME_PATTERN = r"^[a-z0-9][a-z0-9._-]{0,62}$"
Name = Annotated[
    str,
    Field(
        pattern=NAME_PATTERN,
        description="lower-case letters, digits, '.', '_', '-'; at most 63 characters",
    ),
]
LABEL_KEY = re.compile(r"^[a-z][a-z0-9_.-]{0,62}$")
# A host name (RFC 1123 labels) or an IPv4/IPv6 literal.
ADDRESS = re.compile(
    r"^([A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$|^[0-9A-Fa-f:.]+$"
)  # noqa: E501
USER = re.compile(r"^[a-z_][a-z0-9_-]{0,31}$")
CREDENTIAL_REF = re.compile(r"^(file:/\S+|env:[A-Za-z_][A-Za-z0-9_]*)$")
# One OpenSSH public key: type and base64 blob (a comment is dropped).
HOST_KEY = re.compile(r"^(ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(256|384|521)) [A-Za-z0-9+/]+=*$")
INSTALL_PREFIX = re.compile(r"^/[A-Za-z0-9._/-]{0,254}$")

Auth = Literal["private_key", "credential_ref", "worker_default"]


def _check_labels(labels: dict[str, str]) -> dict[str, str]:
    for key, value in labels.items():
        if not LABEL_KEY.match(key):
            raise ValueError(f"label key {key!r}: lower-case letters, digits, '_.-', from a letter")
        if len(value) > 200:
            raise ValueError(f"label {key!r}: value longer than 200 characters")
    return labels


class _HostFields(BaseModel):
    model_config = ConfigDict(extra="forbid")

    @field_validator("address", "data_address", check_fields=False)
    @classmethod
    def _address(cls, v: str | None) -> str | None:
        if v is not None and (len(v) > 255 or not ADDRESS.match(v)):
            raise ValueError("not a host name or IP address")
        return v

    @field_validator("host_key", check_fields=False)
    @classmethod
    def _host_key(cls, v: str | None) -> str | None:
        if v is None:
            return None
        key = " ".join(v.split()[:2])
        if not HOST_KEY.match(key):
            raise ValueError(
                "expected the host's SSH public key as in its ssh_host_*_key.pub or "
                "ssh-keyscan output: '<type> <base64>' (ssh-ed25519, ssh-rsa, ecdsa-sha2-*)"
            )
        return key

    @field_validator("install_prefix", check_fields=False)
    @classmethod
    def _install_prefix(cls, v: str | None) -> str | None:
        if v is not None and (not INSTALL_PREFIX.match(v) or ".." in v.split("/")):
            raise ValueError("an absolute path of letters, digits, '._-/' without '..'")
        return v

    @field_validator("user", check_fields=False)
    @classmethod
    def _user(cls, v: str | None) -> str | None:
        if v is not None and not USER.match(v):
            raise ValueError("not a valid user name")
        return v

    @field_validator("labels", check_fields=False)
    @classmethod
    def _labels(cls, v: dict[str, str] | None) -> dict[str, str] | None:
        return None if v is None else _check_labels(v)

    @field_validator("credential_ref", check_fields=False)
    @classmethod
    def _credential_ref(cls, v: str | None) -> str | None:
        if v is not None and not CREDENTIAL_REF.match(v):
            raise ValueError(
                "expected 'file:/absolute/path' (a key file on the workers) or 'env:NAME' "
                "(an environment variable of the workers holding the key)"
            )
        return v


class HostCreate(_HostFields):
    name: Name
    address: str = Field(description="SSH address: host name or IP")
    port: int = Field(22, ge=1, le=65535)
    user: str = Field("root", description="SSH user (root, or one with sudo without password)")
    labels: dict[str, str] = Field(
        default_factory=dict, description="free-form labels, e.g. site, role, kernel"
    )
    private_key: SecretStr | None = Field(
        None,
        description="OpenSSH/PEM private key without passphrase; stored encrypted, never "
        "returned (only its SHA256 fingerprint)",
    )
    credential_ref: str | None = Field(
        None, description="instead of a key: 'file:/path' or 'env:NAME' on the workers"
    )
    groups: list[Name] = Field(default_factory=list, description="existing groups to join")
    data_address: str | None = Field(
        None,
        description="address on the experiment network, where flows are sent (default: the "
        "SSH address)",
    )
    host_key: str | None = Field(
        None,
        description="the host's SSH public key ('ssh-ed25519 AAAA...'), pinned; without it "
        "the workers' known_hosts must know the host",
    )
    install_prefix: str | None = Field(
        None, description="where the agents are installed on the host (default /opt/ccbench)"
    )

    @model_validator(mode="after")
    def _one_credential(self) -> HostCreate:
        if self.private_key is not None and self.credential_ref is not None:
            raise ValueError("give private_key or credential_ref, not both")
        return self


class HostUpdate(_HostFields):
    """Fields to change; absent ones stay. `private_key: null` or `credential_ref: null` remove
    that credential."""

    address: str | None = None
    port: int | None = Field(None, ge=1, le=65535)
    user: str | None = None
    labels: dict[str, str] | None = None
    private_key: SecretStr | None = None
    credential_ref: str | None = None
    groups: list[Name] | None = None
    data_address: str | None = None
    host_key: str | None = None
    install_prefix: str | None = None

    @model_validator(mode="after")
    def _one_credential(self) -> HostUpdate:
        if self.private_key is not None and self.credential_ref is not None:
            raise ValueError("give private_key or credential_ref, not both")
        return self


class HostOut(BaseModel):
    id: str
    name: str
    address: str
    port: int
    user: str
    labels: dict[str, str]
    auth: Auth
    key_fingerprint: str | None
    credential_ref: str | None
    data_address: str | None
    host_key: str | None
    install_prefix: str | None
    groups: list[str]
    created_at: datetime
    updated_at: datetime


class GroupCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: Name
    labels: dict[str, str] = Field(default_factory=dict)
    hosts: list[Name] = Field(default_factory=list, description="names of existing hosts")

    @field_validator("labels")
    @classmethod
    def _labels(cls, v: dict[str, str]) -> dict[str, str]:
        return _check_labels(v)


class GroupUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    labels: dict[str, str] | None = None
    hosts: list[Name] | None = None

    @field_validator("labels")
    @classmethod
    def _labels(cls, v: dict[str, str] | None) -> dict[str, str] | None:
        return None if v is None else _check_labels(v)


class GroupOut(BaseModel):
    id: str
    name: str
    labels: dict[str, str]
    hosts: list[str]
    created_at: datetime
