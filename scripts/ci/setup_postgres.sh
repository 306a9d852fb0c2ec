#!/usr/bin/env bash
# Installs the Debian `postgresql` package (initdb, pg_ctl, postgres) for the Dagster-on-PostgreSQL test
# (tests/integration/test_instance_postgres.py; dagster-postgres itself is a project dependency).
# Idempotent: does nothing when the binaries are there. Never starts the service: the test runs its own server on
# 127.0.0.1 with a temporary data folder.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/apt_install.sh"

have_binaries() {
    compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null && compgen -G "/usr/lib/postgresql/*/bin/pg_ctl" >/dev/null
}

if have_binaries; then
    echo "postgresql already installed: $(ls -d /usr/lib/postgresql/*/bin/postgres | head -n1)"
    exit 0
fi
apt_install postgresql
echo "installed: $(ls -d /usr/lib/postgresql/*/bin/postgres | head -n1)"
