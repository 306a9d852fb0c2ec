#!/usr/bin/env bash
# Regenerates requirements.lock, the hash-pinned dependency set the Dockerfile installs (`pip install
# --require-hashes`): pyproject.toml's runtime dependencies ([project] dependencies and the `objectstore` extra:
# the image reads bills from object storage) and its build backend
# ([build-system] requires: setuptools, wheel; the image installs the package itself editable with
# --no-build-isolation from them), resolved for CPython 3.11 on Linux x86_64 (the base image's), wheels only (the
# slim image has no compiler, and an sdist would build with unpinned build dependencies).
#
#   bash scripts/lock.sh                          # after editing the dependencies: keeps every pin that still fits
#   bash scripts/lock.sh --upgrade                # move everything to the newest versions the ranges allow
#   bash scripts/lock.sh --upgrade-package pandas # one package (and what it needs)
#
# --no-strip-extras: pip's --require-hashes takes a requirement with extras (dagster-dbt asks for sqlglot[rs]) as
# pinned only when the lock names it with them (sqlglot[rs]==...).
# Extra arguments go to `uv pip compile`. The resolver is uv at a pinned version: the one on PATH when it is that
# version, else installed into a venv of its own under ${TMPDIR:-/tmp} (never into .venv). PyPI by default;
# KUBELEDGER_LOCK_INDEX_URL points it at a mirror (the hashes are the files', the same on any mirror).
# tests/unit/test_requirements_lock.py checks the result against pyproject.toml and the Dockerfile.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
source "$ROOT/scripts/venv_install.sh"  # UV_VERSION: the one uv of the setup and the lock
LOCK="$ROOT/requirements.lock"

uv_bin="$(command -v uv || true)"
if [[ -z $uv_bin || "$("$uv_bin" --version)" != "uv $UV_VERSION"* ]]; then
    tool="${TMPDIR:-/tmp}/kubeledger-locktool-$UV_VERSION"
    [[ -x $tool/bin/uv ]] || { python3 -m venv "$tool" && "$tool/bin/python" -m pip install -q "uv==$UV_VERSION"; }
    uv_bin="$tool/bin/uv"
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
# uv keeps the pins of its output file while they still satisfy the inputs: start from the current lock
[[ -f $LOCK ]] && cp "$LOCK" "$work/requirements.lock"
cd "$ROOT"
python3 -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['build-system']['requires']))" \
    | "$uv_bin" pip compile pyproject.toml - \
        --no-config --python-version 3.11 --python-platform x86_64-unknown-linux-gnu --only-binary :all: \
        --generate-hashes --no-strip-extras --index-url "${KUBELEDGER_LOCK_INDEX_URL:-https://pypi.org/simple}" \
        --custom-compile-command "bash scripts/lock.sh" --quiet \
        --extra objectstore --output-file "$work/requirements.lock" "$@"
{
    echo "# kubeledger's image dependencies, every file pinned by hash: pyproject.toml's runtime dependencies and"
    echo "# its objectstore extra (the entries 'via kubeledger (pyproject.toml)' and what they need) and its"
    echo "# [build-system] requires (setuptools and wheel, the two entries without a 'via'), for CPython 3.11 on"
    echo "# Linux x86_64, wheels only."
    echo "# Do not edit: regenerate with \`bash scripts/lock.sh\` (README, \"Run it in a cluster\")."
    cat "$work/requirements.lock"  # uv writes the whole file anew: no header of ours left in it
} > "$LOCK"
echo "wrote $LOCK ($(grep -c '^[A-Za-z0-9]' "$LOCK") packages)"
