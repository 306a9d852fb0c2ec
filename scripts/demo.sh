#!/usr/bin/env bash
# One command on a fresh machine: set up .venv and run the bundled demo cluster through the whole pipeline
# into ./warehouse/ (DuckDB), then print the top-10 namespaces by cost and CO2e.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bash "$ROOT/scripts/setup.sh"
export DO_NOT_TRACK=1
cd "$ROOT"
exec .venv/bin/kubeledger demo "$@"
