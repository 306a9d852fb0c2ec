#!/usr/bin/env bash
# Installs the Debian `chromium` package for the report test (tests/integration/test_report.py renders the HTML
# report headless, takes a screenshot and dumps the DOM). Idempotent: does nothing when chromium is on the PATH.
set -euo pipefail

if command -v chromium >/dev/null 2>&1; then
    echo "chromium already installed: $(chromium --version 2>/dev/null | head -n1)"
    exit 0
fi

SUDO=""
if [[ "$(id -u)" != "0" ]]; then
    SUDO="sudo"
fi
export DEBIAN_FRONTEND=noninteractive

# refresh the package lists only when apt does not know the package yet
if ! apt-cache show chromium >/dev/null 2>&1; then
    ${SUDO} apt-get update -q
fi
${SUDO} apt-get install -y -q --no-install-recommends chromium fonts-dejavu-core
echo "installed: $(chromium --version 2>/dev/null | head -n1)"
