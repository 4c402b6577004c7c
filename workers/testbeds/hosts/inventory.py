"""Hosts as the plays reach them, from plain data (no database):

{"name": "h1", "address": "10.0.0.1", "port": 22, "user": "root",
 "private_key_path": "/path/key",            # optional: ssh's own defaults otherwise
 "known_hosts_path": "/path/known_hosts",    # optional: check host keys against this file
 "host_key_checking": True,                  # optional: False skips checking for this host
 "prefix": "/opt/ccbench",                   # optional: install prefix on the host
 "python": "/usr/bin/python3"}               # optional: the host's Python 3
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from workers.testbeds.hosts.errors import HostSpecError

DEFAULT_PYTHON = "/usr/bin/python3"
NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")  # host, process and file names


@dataclass(frozen=True)
class Host:
    name: str
    address: str
    port: int = 22
    user: str = "root"
    private_key_path: str | None = None
    known_hosts_path: str | None = None
    host_key_checking: bool = True
    prefix: str | None = None
    python: str = DEFAULT_PYTHON

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], position: int = 0) -> Host:
        where = f"host {position} ({data.get('name', 'unnamed')})"
        unknown = set(data) - {f.name for f in cls.__dataclass_fields__.values()}
        if unknown:
            raise HostSpecError(f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
        for key in ("name", "address"):
            if not isinstance(data.get(key), str) or not data[key]:
                raise HostSpecError(f"{where}: field '{key}' is required (a non-empty string)")
        if not NAME.match(data["name"]):
            raise HostSpecError(f"{where}: field 'name' may hold letters, digits, '.', '_', '-'")
        port = data.get("port", 22)
        if not isinstance(port, int) or not 0 < port < 65536:
            raise HostSpecError(f"{where}: field 'port' must be an integer in 1..65535")
        files: dict[str, str | None] = {}
        for key in ("private_key_path", "known_hosts_path"):
            path = data.get(key)
            if path is not None and not Path(path).is_file():
                raise HostSpecError(f"{where}: field '{key}': {path} is not a readable file")
            # Absolute: ansible-playbook runs in playbooks/.
            files[key] = str(Path(path).resolve()) if path is not None else None
        prefix = data.get("prefix")
        if prefix is not None and not str(prefix).startswith("/"):
            raise HostSpecError(f"{where}: field 'prefix' must be an absolute path")
        return cls(
            name=data["name"],
            address=data["address"],
            port=port,
            user=str(data.get("user", "root")),
            private_key_path=files["private_key_path"],
            known_hosts_path=files["known_hosts_path"],
            host_key_checking=bool(data.get("host_key_checking", True)),
            prefix=prefix,
            python=str(data.get("python", DEFAULT_PYTHON)),
        )

    def inventory_vars(self) -> dict[str, Any]:
        variables: dict[str, Any] = {
            "ansible_host": self.address,
            "ansible_port": self.port,
            "ansible_user": self.user,
            "ansible_python_interpreter": self.python,
        }
        if self.private_key_path:
            variables["ansible_ssh_private_key_file"] = self.private_key_path
        # ssh keeps the first value of each -o option; these come after ansible.cfg's ssh_args
        # (which set neither) and after Ansible's own StrictHostKeyChecking=no, which it adds
        # only when host_key_checking is off (run_playbook keeps it on).
        if not self.host_key_checking:
            ssh = ["-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null"]
        elif self.known_hosts_path:
            ssh = [
                "-o",
                "StrictHostKeyChecking=yes",
                "-o",
                f"UserKnownHostsFile={self.known_hosts_path}",
            ]
        else:
            ssh = []
        if ssh:
            variables["ansible_ssh_extra_args"] = shlex.join(ssh)
        if self.prefix:
            variables["ccbench_prefix"] = self.prefix
        return variables


def parse_hosts(hosts: Sequence[Mapping[str, Any] | Host]) -> list[Host]:
    parsed = [h if isinstance(h, Host) else Host.from_dict(h, i) for i, h in enumerate(hosts)]
    if not parsed:
        raise HostSpecError("no hosts given")
    names = [h.name for h in parsed]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise HostSpecError(f"host names must be unique: {', '.join(duplicates)} repeated")
    return parsed


def inventory(hosts: Sequence[Host]) -> dict[str, Any]:
    return {"all": {"hosts": {h.name: h.inventory_vars() for h in hosts}}}
