#!/usr/bin/env bash
# Write constraints.txt anew: the newest versions PyPI has of pyproject.toml's dependencies
# (with the dev extras), resolved in a fresh venv. Run `make test` after it before committing
# the file: CI installs exactly these versions.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=$(mktemp -d /tmp/ccbench-lock-XXXXXX)
trap 'rm -rf "$venv"' EXIT
/usr/bin/python3 -m venv "$venv"
"$venv/bin/pip" install -q --disable-pip-version-check -e ".[dev]"
{
  echo "# Every Python package ccbench installs, at the versions its CI last passed with (pip"
  echo "# constraints: scripts/install.sh and the images install pyproject.toml's dependencies within"
  echo "# them). Unpinned, each new release on PyPI reached CI untested (cryptography 51's key types"
  echo "# failed mypy on 2026-12-07). \`make lock\` (scripts/lock.sh) writes this file anew."
  "$venv/bin/pip" freeze --exclude-editable
} >constraints.txt
echo "constraints.txt: $(grep -c == constraints.txt) packages; now run make test"
