#!/usr/bin/env bash
# Create .venv with kubeledger and its pinned stack (idempotent). Used by demo.sh, test.sh and CI.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PYTHON="${PYTHON:-python3}"
cd "$ROOT"
if [[ ! -x .venv/bin/python ]]; then
    "$PYTHON" -m venv .venv
fi
stamp=".venv/.kubeledger-installed"
if [[ ! -f "$stamp" || pyproject.toml -nt "$stamp" ]]; then
    .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
    .venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[test]"
    touch "$stamp"
fi
