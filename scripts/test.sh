#!/usr/bin/env bash
# One command for the whole test suite: installs what the tests need (the project venv, the Debian prometheus and
# chromium packages, Boavizta in its own venv), then runs pytest (which starts Prometheus, Boavizta and the stand-ins
# on 127.0.0.1 itself), dbt's data tests through the pipeline tests and dbt's unit tests in test_dbt_unit_tests.py.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# Setup and lint side by side (they wait on the network and the disk more than on the CPU): the Boavizta venv from
# the start, the lint once the project venv exists, beside the Debian packages and the Spark extra; each one's
# output is printed when it ends, and any failure stops here, before the first test.
setup_tmp="$(mktemp -d)"
side=()  # "<name> <pid>" of the steps running alongside
alongside() {  # name, command...: run in the background, output to $setup_tmp/<name>.log
    local name="$1"; shift
    ("$@") > "$setup_tmp/$name.log" 2>&1 &
    side+=("$name $!")
}
lint() {
    .venv/bin/ruff check --no-cache .
    # SQL lint with the dbt templater (.sqlfluff) on two processes: the dbt templater renders every file in the main
    # one, but nine tenths of the lint's ~150 s of CPU is sqlfluff's parse and rules, which the second process
    # shares while the setup waits on downloads. dbt's compile and partial parse go to a temp dir (the templater
    # takes its target path from sqlfluff config, not from DBT_TARGET_PATH), so nothing is written into the tree
    local tmp="$setup_tmp/lint"
    mkdir -p "$tmp"
    printf '[sqlfluff:templater:dbt]\ntarget_path = %s\n' "$tmp/target" > "$tmp/sqlfluff.cfg"
    KUBELEDGER_WAREHOUSE="$tmp/lint.duckdb" DBT_TARGET_PATH="$tmp/target" DBT_LOG_PATH="$tmp/logs" \
        .venv/bin/sqlfluff lint --processes 2 --config "$tmp/sqlfluff.cfg" dbt_project/models dbt_project/tests
}
setup_start=$(date +%s)
alongside boavizta bash scripts/ci/setup_boavizta.sh
bash scripts/setup.sh
alongside lint lint
bash scripts/ci/setup_prometheus.sh
bash scripts/ci/setup_postgres.sh
bash scripts/ci/setup_chromium.sh
bash scripts/ci/setup_spark.sh
setup_failed=0
for entry in "${side[@]}"; do
    read -r name pid <<<"$entry"
    rc=0; wait "$pid" || rc=$?
    echo "== $name (ran alongside the setup): exit $rc =="
    cat "$setup_tmp/$name.log"
    [[ $rc == 0 ]] || setup_failed=1
done
rm -rf "$setup_tmp"
echo "setup and lint took $(( $(date +%s) - setup_start )) s"
[[ $setup_failed == 0 ]] || exit 1
export DO_NOT_TRACK=1 DAGSTER_HOME="${DAGSTER_HOME:-$ROOT/.dagster_home}"
# The pytest groups, one line each: the group's name is its marker, then its pytest options. `main` is every test
# no other group's marker takes. -n 2 runs a group on two pytest-xdist workers (each with its own ports, temp dirs
# and DAGSTER_HOME, tests/conftest.py); --dist loadscope keeps a module (and its module fixtures, which run the
# pipeline) on one worker (in the spark group the equivalence module, one in-process JVM, and the SIGKILL module,
# CLI runs with a JVM each, run side by side); in `main`, --no-loadscope-reorder hands the modules out in the
# collection order, which tests/conftest.py sets to the longest first (tests/durations.json). `faults` spreads single tests (--dist load): its two modules take
# 19 and 8 min of work, so by module one worker idled half the group. It runs 3 workers on the 2 cores: a third of
# a fault test's time is the product's retry back-off and timeouts (a 5xx cell waits ~40 s), which a third worker
# fills; the warm templates are built once per run (built_once), so a worker more costs no build.
# `serial`: tests that cannot share the machine with another worker.
# A name ending in & starts the group in the background, alongside the groups after it until `serial` or the end
# (which wait for it): `daemon` is the UI backfill through `dagster dev`, whose time is mostly the daemon's fixed
# 30 s ticks between its runs; on a worker of `main` it held that worker 10-15 min for little CPU. The other
# groups run one after another: side by side they took longer than in turn (clean clones, this 2-core machine):
# `spark` beside `faults` 18:54 for both, against 10:46 + 5:52 in turn (its JVMs lose more to a shared machine than
# Python workers do); `faults` beside `main` 19:26 for both, against 13:04 + 5:52 (the retry back-off and source
# timeouts it waits on did not make room for main's work); `spark` beside `main`, at the same priority or at
# nice 5, took half of main's cores (main 25:38 / 27:49). `load` runs on a quiet machine.
# The spark group prints its passed tests' output (-rP): the engines' largest relative difference per mart and the
# Spark dbt timings.
# pytest's exit 5 (no test in a group, e.g. when a single file is given) is not a failure. The end prints each
# group's wall time and test counts (from its JUnit XML), so the figures are in every CI log.
TEST_GROUPS=(  # not GROUPS: bash keeps that name for the user's group ids
    "daemon& --durations=5"
    "main   -n 2 --dist loadscope --no-loadscope-reorder --durations=30"
    "serial --durations=10"
    "load"
    "faults -n 3 --dist load --durations=10"
    "spark  -n 2 --dist loadscope --durations=10 -rP"
)
others=()
for line in "${TEST_GROUPS[@]}"; do read -r name _ <<<"$line"; name="${name%&}"; [[ $name == main ]] || others+=("$name"); done
joined="$(printf ' or %s' "${others[@]}")"
main_expr="not (${joined# or })"
report_dir="$(mktemp -d)"
# state the groups build once and share (the Prometheus scenario's TSDB blocks): removed with report_dir
export KUBELEDGER_TEST_CACHE="$report_dir/cache"
status=0
background=()  # "<name> <pid> <start>" of the groups running alongside
# whether the caller named tests (a path, or path::test): then every group collects those, not its own files
user_paths=0
for arg in "$@"; do [[ $arg != -* && -e ${arg%%::*} ]] && user_paths=1; done
run_group() {  # name, options...: one pytest run of the group; its exit status (5, no test, is 0)
    local name="$1" expr="$1" files=(); shift
    [[ $name == main ]] && expr="$main_expr"
    if [[ $name != main ]]; then
        # the files that name the group's marker: a group whose marker no test names is skipped, and the others
        # collect only their files (a whole collection imports every test module: 13-15 s of CPU in each process,
        # and a group on n pytest-xdist workers collects n times)
        mapfile -t files < <(grep -rlE "mark\.$name\b" tests | sort)
        [[ ${#files[@]} -gt 0 ]] || { echo "no test is marked $name"; return 0; }
        [[ $user_paths == 0 ]] || files=()
    fi
    # each group its own DAGSTER_HOME (tests/conftest.py gives each of its workers a folder in it): groups run side
    # by side, and their workers' numbers (gw0, gw1...) repeat
    local home="$DAGSTER_HOME/$name"
    mkdir -p "$home"
    DAGSTER_HOME="$home" .venv/bin/python -m pytest -m "$expr" "$@" "${files[@]}" --junitxml="$report_dir/$name.xml" \
        || { local rc=$?; [[ $rc == 5 ]] || return $rc; }
}
wait_background() {  # the background groups' exit status and output
    local entry name pid
    for entry in "${background[@]}"; do
        read -r name pid <<<"$entry"
        wait "$pid" || status=$?
        echo "== $name group (ran alongside): its output =="
        cat "$report_dir/$name.log"
    done
    background=()
}
for line in "${TEST_GROUPS[@]}"; do
    read -r name opts <<<"$line"
    if [[ $name == *"&" ]]; then
        name="${name%&}"
        echo "== $name group: -m \"$name\"${opts:+ $opts}, in the background (its output follows when it ends) =="
        # its own --basetemp: pytest's clean-up of old numbered temp dirs never sees a session that is still running
        (
            start=$(date +%s) rc=0
            # shellcheck disable=SC2086  # $opts: the group's options, split on purpose
            run_group "$name" $opts --basetemp="$report_dir/$name-tmp" "$@" || rc=$?
            echo "$name $(( $(date +%s) - start )) alongside" >> "$report_dir/times"
            exit $rc
        ) > "$report_dir/$name.log" 2>&1 &
        background+=("$name $!")
        continue
    fi
    [[ $name == serial ]] && wait_background
    echo "== $name group: -m \"${name/#main/$main_expr}\"${opts:+ $opts} =="
    start=$(date +%s)
    # shellcheck disable=SC2086  # $opts: the group's options, split on purpose
    run_group "$name" $opts "$@" || status=$?
    took=$(( $(date +%s) - start ))
    echo "$name $took" >> "$report_dir/times"
    echo "$name group took $took s"
done
wait_background
.venv/bin/python scripts/ci/group_table.py "$report_dir"
# the modules' durations, for the order tests/conftest.py hands them out in (tests/durations.json)
# (through a temp file: the output may be tests/durations.json itself, which the script also reads)
if [[ -n ${KUBELEDGER_DURATIONS_OUT:-} ]]; then
    .venv/bin/python scripts/ci/durations.py "$report_dir" tests/durations.json > "$report_dir/durations.json" \
        && cp "$report_dir/durations.json" "$KUBELEDGER_DURATIONS_OUT"
fi
rm -rf "$report_dir"
exit $status
