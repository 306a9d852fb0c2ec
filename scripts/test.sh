#!/usr/bin/env bash
# One command for the whole test suite: installs what the tests need (the project venv, the Debian prometheus and
# chromium packages, Boavizta in its own venv), then runs pytest (which starts Prometheus, Boavizta and the stand-ins
# on 127.0.0.1 itself), dbt's data tests through the pipeline tests and dbt's unit tests in test_dbt_unit_tests.py.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
bash scripts/setup.sh
bash scripts/ci/setup_prometheus.sh
bash scripts/ci/setup_boavizta.sh
bash scripts/ci/setup_postgres.sh
bash scripts/ci/setup_chromium.sh
bash scripts/ci/setup_spark.sh
export DO_NOT_TRACK=1 DAGSTER_HOME="${DAGSTER_HOME:-$ROOT/.dagster_home}"
.venv/bin/ruff check --no-cache .
# SQL lint with the dbt templater (.sqlfluff): dbt's compile and partial parse go to a temp dir (the templater takes
# its target path from sqlfluff config, not from DBT_TARGET_PATH), so nothing is written into the tree
lint_tmp="$(mktemp -d)"
printf '[sqlfluff:templater:dbt]\ntarget_path = %s\n' "$lint_tmp/target" > "$lint_tmp/sqlfluff.cfg"
KUBELEDGER_WAREHOUSE="$lint_tmp/lint.duckdb" DBT_TARGET_PATH="$lint_tmp/target" DBT_LOG_PATH="$lint_tmp/logs" \
    .venv/bin/sqlfluff lint --config "$lint_tmp/sqlfluff.cfg" dbt_project/models dbt_project/tests
rm -rf "$lint_tmp"
# Three groups, so the load tests' and the Spark engine's times show on their own; pytest's exit 5 (no test in a
# group, e.g. when a single file is given) is not a failure.
status=0
.venv/bin/python -m pytest -m "not load and not spark" --durations=15 "$@" || { rc=$?; [[ $rc == 5 ]] || status=$rc; }
echo "== load group: the API server under 200 concurrent clients and publishes during requests =="
start=$(date +%s)
.venv/bin/python -m pytest -m load "$@" || { rc=$?; [[ $rc == 5 ]] || status=$rc; }
echo "load group took $(( $(date +%s) - start )) s"
echo "== spark group: the dbt project on Spark (local[2], one JVM per test module) against the DuckDB engine =="
start=$(date +%s)
.venv/bin/python -m pytest -m spark --durations=10 "$@" || { rc=$?; [[ $rc == 5 ]] || status=$rc; }
echo "spark group took $(( $(date +%s) - start )) s"
exit $status
