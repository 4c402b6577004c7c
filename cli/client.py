"""A small REST client for the CLI, with errors a person can act on."""

from __future__ import annotations

import contextlib
import json
import os
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import tenacity
import yaml

from ccbench.settings import Settings, get_settings


class ClientError(Exception):
    """A failure the CLI prints as-is and exits non-zero."""


class Unreachable(ClientError):
    """The API could not be reached, or its proxy answered 502-504: worth retrying."""


# Retries of a request that is safe to repeat: about a minute, backing off to 10 s.
RETRY_FOR_S = 60.0


@dataclass(frozen=True)
class ClientConfig:
    api_url: str
    token: str | None
    source: str


def cli_config_path(settings: Settings) -> Path:
    return settings.state_dir / "cli.json"


def load_config(settings: Settings) -> ClientConfig:
    """CCBENCH_API_URL / CCBENCH_TOKEN win; else the file `ccbench up` wrote."""
    path = cli_config_path(settings)
    stored: dict[str, Any] = json.loads(path.read_text()) if path.exists() else {}
    api_url = os.environ.get("CCBENCH_API_URL") or stored.get("api_url")
    token = os.environ.get("CCBENCH_TOKEN") or stored.get("token")
    source = "environment" if os.environ.get("CCBENCH_TOKEN") else str(path)
    return ClientConfig(
        api_url=api_url or f"http://{settings.api_host}:{settings.api_port}",
        token=token,
        source=source,
    )


class Client:
    def __init__(self, config: ClientConfig, timeout_s: float = 30.0) -> None:
        self.config = config
        headers = {"Authorization": f"Bearer {config.token}"} if config.token else {}
        self._http = httpx.Client(base_url=config.api_url, headers=headers, timeout=timeout_s)

    def send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """The response of a request; clear errors when the API is unreachable or refuses."""
        try:
            response = self._http.request(method, path, **kwargs)
        except httpx.TransportError as exc:
            raise self._unreachable(exc) from exc
        return self._checked(method, path, response)

    @contextlib.contextmanager
    def stream(self, method: str, path: str, **kwargs: Any) -> Iterator[httpx.Response]:
        """A response read as it arrives (a run's bundle), with the same errors as `send`."""
        try:
            with self._http.stream(method, path, **kwargs) as response:
                if response.status_code >= 400:
                    response.read()
                yield self._checked(method, path, response)
        except httpx.TransportError as exc:
            raise self._unreachable(exc) from exc

    def _unreachable(self, exc: Exception) -> Unreachable:
        return Unreachable(
            f"cannot reach the ccbench API at {self.config.api_url} ({exc}). "
            "Start it with `ccbench up` (embedded) or `ccbench api`, or set CCBENCH_API_URL."
        )

    def _checked(self, method: str, path: str, response: httpx.Response) -> httpx.Response:
        if response.status_code == 401:
            raise ClientError(
                f"the API at {self.config.api_url} refused the token from {self.config.source}: "
                f"{_message(response)}. Create one with `ccbench admin create-token --team NAME` "
                "and set CCBENCH_TOKEN."
            )
        if response.status_code in (502, 503, 504):
            raise Unreachable(f"{method} {path}: the API answered {response.status_code}")
        if response.status_code >= 500:
            raise ClientError(
                f"{method} {path}: the API failed ({response.status_code}): {_message(response)}"
            )
        if response.status_code >= 400:
            raise ClientError(_refusal(response))
        return response

    def request(self, method: str, path: str, **kwargs: Any) -> Any:
        """JSON, or text for other content types."""
        response = self.send(method, path, **kwargs)
        if not response.headers.get("content-type", "").startswith("application/json"):
            return response.text
        return response.json()

    def download(self, path: str, **kwargs: Any) -> bytes:
        return self.send("GET", path, **kwargs).content

    def get(self, path: str, **kwargs: Any) -> Any:
        return self.request("GET", path, **kwargs)

    def post(self, path: str, **kwargs: Any) -> Any:
        return self.request("POST", path, **kwargs)

    def post_once(self, path: str, body: Any) -> Any:
        """POST with an Idempotency-Key, retried while the API is unreachable: a request whose
        response was lost is repeated with the same key, so it takes effect once."""
        headers = {"Idempotency-Key": str(uuid.uuid4())}
        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception_type(Unreachable),
            stop=tenacity.stop_after_delay(RETRY_FOR_S),
            wait=tenacity.wait_exponential(multiplier=0.5, max=10),
            before_sleep=lambda state: print(
                f"retrying ({state.outcome.exception() if state.outcome else ''})",
                file=sys.stderr,
            ),
            reraise=True,
        )
        return retrying(self.post, path, json=body, headers=headers)


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def _refusal(response: httpx.Response) -> str:
    """The API's message, once: a 422's `message` repeats its first fields (ValidationFailed:
    "<what>: <field>: <reason>; ..."), so with `errors` it is "<what>:" and one line a field."""
    body = _json(response)
    errors = body.get("errors") if isinstance(body, dict) else None
    if not errors:
        return _message(response)
    what = _message(response).partition(": ")[0]
    return what + ":" + "".join(f"\n  {e['field']}: {e['reason']}" for e in errors)


def _message(response: httpx.Response) -> str:
    body = _json(response)
    if isinstance(body, dict):
        return str(body.get("message") or body.get("detail") or body)
    return response.text[:200]


def client() -> Client:
    """A client for the configured API (environment, else the embedded stack's file)."""
    return Client(load_config(get_settings()))


def load_document(path: Path) -> Any:
    """A spec file (YAML, or JSON, which is YAML) as the API takes it."""
    try:
        text = path.read_text()
    except OSError as exc:
        raise ClientError(f"cannot read {path}: {exc.strerror}") from exc
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ClientError(f"{path} is not valid YAML/JSON: {exc}") from exc
