#!/usr/bin/env bash
# Installs the Debian `prometheus` package (prometheus + promtool binaries) for the integration tests.
# Idempotent: does nothing when both binaries are on the PATH. Never starts the service: tests run the binary.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/apt_install.sh"

if command -v prometheus >/dev/null 2>&1 && command -v promtool >/dev/null 2>&1; then
    echo "prometheus already installed: $(prometheus --version 2>&1 | head -n1)"
    exit 0
fi
apt_install prometheus
echo "installed: $(prometheus --version 2>&1 | head -n1)"
