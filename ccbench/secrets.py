"""Secrets at rest (hosts' SSH private keys): Fernet (AES-128-CBC + HMAC-SHA256) with the key
from settings. Ciphertexts never leave the service; plaintexts only reach the worker that
needs them, written to a 0600 file for the run."""

from __future__ import annotations

import os
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken

from ccbench.settings import Settings, get_settings


class SecretUnavailable(Exception):
    """A stored secret cannot be decrypted with the configured key."""


def new_key() -> str:
    return Fernet.generate_key().decode()


def _key_file(settings: Settings) -> Path:
    return settings.state_dir / "secret.key"


def _fernet(settings: Settings) -> Fernet:
    key = settings.secret_key
    if not key:
        path = _key_file(settings)
        if not path.exists():
            path.parent.mkdir(parents=True, exist_ok=True)
            # O_EXCL: two processes starting together agree on one key.
            try:
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            except FileExistsError:
                pass
            else:
                with os.fdopen(fd, "w") as f:
                    f.write(new_key())
        key = path.read_text().strip()
    try:
        return Fernet(key.encode())
    except ValueError as exc:
        raise SecretUnavailable(
            "CCBENCH_SECRET_KEY is not a Fernet key (32 url-safe base64-encoded bytes)"
        ) from exc


def encrypt(plaintext: str, settings: Settings | None = None) -> str:
    return _fernet(settings or get_settings()).encrypt(plaintext.encode()).decode()


def decrypt(ciphertext: str, settings: Settings | None = None) -> str:
    try:
        return _fernet(settings or get_settings()).decrypt(ciphertext.encode()).decode()
    except InvalidToken as exc:
        raise SecretUnavailable(
            "a stored secret cannot be decrypted with the configured secret key "
            "(was CCBENCH_SECRET_KEY changed?)"
        ) from exc
