#!/usr/bin/env bash
# Installs the Debian `chromium` package for the report test (tests/integration/test_report.py renders the HTML
# report headless, takes a screenshot and dumps the DOM). Idempotent: does nothing when chromium is on the PATH.
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/apt_install.sh"

if command -v chromium >/dev/null 2>&1; then
    echo "chromium already installed: $(chromium --version 2>/dev/null | head -n1)"
    exit 0
fi
apt_install chromium fonts-dejavu-core
echo "installed: $(chromium --version 2>/dev/null | head -n1)"
