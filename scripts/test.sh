#!/usr/bin/env bash
# One command for the whole test suite: installs what the tests need (the project venv, the Debian prometheus
# package, Boavizta in its own venv), then runs pytest (which starts Prometheus, Boavizta and the stand-ins on
# 127.0.0.1 itself), dbt's data tests through the pipeline tests and dbt's unit tests in test_dbt_unit_tests.py.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/setup.sh
bash scripts/ci/setup_prometheus.sh
bash scripts/ci/setup_boavizta.sh
export DO_NOT_TRACK=1 DAGSTER_HOME="${DAGSTER_HOME:-$ROOT/.dagster_home}"
.venv/bin/ruff check .
exec .venv/bin/python -m pytest "$@"
