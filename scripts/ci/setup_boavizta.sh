#!/usr/bin/env bash
# Creates .boavenv (a separate venv) with the Boavizta API for the integration tests.
# Separate process + venv on purpose: boaviztapi is AGPL, so kubeledger never imports it.
# Idempotent: does nothing when .boavenv already has uvicorn and the pinned version.
set -euo pipefail

BOAVIZTA_VERSION="${BOAVIZTA_VERSION:-2.5.0}"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="${ROOT}/.boavenv"
PYTHON="${PYTHON:-python3}"

installed_version() {
    "${VENV}/bin/python" -c 'import importlib.metadata as m; print(m.version("boaviztapi"))' 2>/dev/null || true
}

if [[ -x "${VENV}/bin/uvicorn" && "$(installed_version)" == "${BOAVIZTA_VERSION}" ]]; then
    echo "boaviztapi ${BOAVIZTA_VERSION} already installed in ${VENV}"
    exit 0
fi

"${PYTHON}" -m venv "${VENV}"
source "${ROOT}/scripts/venv_install.sh"
venv_install "${VENV}" "boaviztapi==${BOAVIZTA_VERSION}"
# uvicorn is a boaviztapi dependency; install it explicitly in case a release drops it
[[ -x "${VENV}/bin/uvicorn" ]] || venv_install "${VENV}" uvicorn
echo "boaviztapi $(installed_version) installed in ${VENV}"
