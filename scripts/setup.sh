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
    source scripts/venv_install.sh
    venv_install .venv -e ".[test]"
    touch "$stamp"
fi
