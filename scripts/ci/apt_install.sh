#!/usr/bin/env bash
# Shared by the scripts/ci/setup_*.sh scripts: `apt_install PACKAGE...` installs Debian packages without
# recommends, refreshing the package lists only when apt does not know a package yet, and without starting any
# service they ship (a policy-rc.d that exits 101 for the duration; containers and CI runners have no init).
# Source it, then call apt_install.

apt_install() {
    local sudo="" policy=/usr/sbin/policy-rc.d created=0 pkg
    [[ "$(id -u)" == "0" ]] || sudo="sudo"
    export DEBIAN_FRONTEND=noninteractive
    for pkg in "$@"; do
        if ! apt-cache show "$pkg" >/dev/null 2>&1; then
            ${sudo} apt-get update -q
            break
        fi
    done
    if [[ ! -e "${policy}" ]]; then
        printf '#!/bin/sh\nexit 101\n' | ${sudo} tee "${policy}" >/dev/null
        ${sudo} chmod +x "${policy}"
        created=1
    fi
    local rc=0
    ${sudo} apt-get install -y -q --no-install-recommends "$@" || rc=$?
    if [[ ${created} == 1 ]]; then ${sudo} rm -f "${policy}"; fi
    return ${rc}
}
