"""A small REST client for the CLI, with errors a person can act on."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from ccbench.settings import Settings, get_settings


class ClientError(Exception):
    """A failure the CLI prints as-is and exits non-zero."""


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
            raise ClientError(
                f"cannot reach the ccbench API at {self.config.api_url} ({exc}). "
                "Start it with `ccbench up` (embedded) or `ccbench api`, or set CCBENCH_API_URL."
            ) from exc
        if response.status_code == 401:
            raise ClientError(
                f"the API at {self.config.api_url} refused the token from {self.config.source}: "
                f"{_message(response)}. Create one with `ccbench admin create-token --team NAME` "
                "and set CCBENCH_TOKEN."
            )
        if response.status_code >= 400:
            detail = _message(response)
            body = _json(response)
            errors = body.get("errors") if isinstance(body, dict) else None
            if errors:
                detail += "".join(f"\n  - {e['field']}: {e['reason']}" for e in errors)
            raise ClientError(f"{method} {path} failed ({response.status_code}): {detail}")
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


def _json(response: httpx.Response) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def _message(response: httpx.Response) -> str:
    body = _json(response)
    if isinstance(body, dict):
        return str(body.get("message") or body.get("detail") or body)
    return response.text[:200]


def client() -> Client:
    """A client for the configured API (environment, else the embedded stack's file)."""
    return Client(load_config(get_settings()))
