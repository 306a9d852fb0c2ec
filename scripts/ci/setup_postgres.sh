#!/usr/bin/env bash
# Installs the Debian `postgresql` package (initdb, pg_ctl, postgres) for the Dagster-on-PostgreSQL test
# (tests/integration/test_instance_postgres.py; dagster-postgres itself is a project dependency).
# Idempotent: does nothing when the binaries are there. Never starts the service: the test runs its own server on
# 127.0.0.1 with a temporary data folder.
set -euo pipefail

have_binaries() {
    compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null && compgen -G "/usr/lib/postgresql/*/bin/pg_ctl" >/dev/null
}

if have_binaries; then
    echo "postgresql already installed: $(ls -d /usr/lib/postgresql/*/bin/postgres | head -n1)"
else
    SUDO=""
    if [[ "$(id -u)" != "0" ]]; then
        SUDO="sudo"
    fi
    export DEBIAN_FRONTEND=noninteractive
    # refresh the package lists only when apt does not know the package yet
    if ! apt-cache show postgresql >/dev/null 2>&1; then
        ${SUDO} apt-get update -q
    fi
    # policy-rc.d exit 101 keeps the post-install script from starting the service (containers, CI runners)
    POLICY=/usr/sbin/policy-rc.d
    CREATED_POLICY=0
    if [[ ! -e "${POLICY}" ]]; then
        printf '#!/bin/sh\nexit 101\n' | ${SUDO} tee "${POLICY}" >/dev/null
        ${SUDO} chmod +x "${POLICY}"
        CREATED_POLICY=1
    fi
    trap 'if [[ ${CREATED_POLICY} == 1 ]]; then ${SUDO} rm -f "${POLICY}"; fi' EXIT
    ${SUDO} apt-get install -y -q --no-install-recommends postgresql
    echo "installed: $(ls -d /usr/lib/postgresql/*/bin/postgres | head -n1)"
fi
