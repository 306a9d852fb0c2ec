#!/usr/bin/env bash
# Installs the Debian `prometheus` package (prometheus + promtool binaries) for the integration tests.
# Idempotent: does nothing when both binaries are on the PATH. Never starts the service: tests run the binary.
set -euo pipefail

if command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1; then
    echo "prometheus already installed: $(prometheus --version 2>&1 | head -n1)"
    exit 0
fi

SUDO=""
if [[ "$(id -u)" != "0" ]]; then
    SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive

# refresh the package lists only when apt does not know the package yet
if ! apt-cache show prometheus >/dev/null 2>&1; then
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
${SUDO} apt-get install -y -q --no-install-recommends prometheus
echo "installed: $(prometheus --version 2>&1 | head -n1)"
