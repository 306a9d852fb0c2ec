# Sourced by the setup scripts: `venv_install VENV ARGS...` installs ARGS (pip's requirement syntax) into VENV with uv
# (`uv pip install`, the version scripts/lock.sh pins, installed into VENV by its pip), falling back to pip.
# uv resolves the same versions from the same ranges as pip (the two venvs' freezes are identical), in a fifth of
# the time: 12 s instead of 62 s for the project and its test extra, its downloads in parallel (README, "Choices").
# The system's certificate store, as pip's (`--native-tls`), so a registry behind a company CA works for both;
# bytecode compiled at install, as pip does (the first run of a command would otherwise compile what it imports).
UV_VERSION=0.13.9  # also the lock's resolver (scripts/lock.sh)
venv_install() {
    local venv="$1"; shift
    if [[ ! -x "$venv/bin/uv" || "$("$venv/bin/uv" --version 2>/dev/null)" != "uv $UV_VERSION"* ]]; then
        "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "uv==$UV_VERSION" || true
    fi
    if [[ -x "$venv/bin/uv" ]] && "$venv/bin/uv" pip install --quiet --native-tls --compile-bytecode \
            --python "$venv/bin/python" "$@"; then
        return 0
    fi
    echo "uv could not install into $venv; installing with pip" >&2
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$@"
}
