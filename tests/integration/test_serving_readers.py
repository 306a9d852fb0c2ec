"""Readers of the serving copy never see an error, a lock or a half-published day while the pipeline publishes.

A separate reader process opens the serving copy read-only in a tight loop (open, query, close) while the real
CLI materialises two more days on a warehouse that already has D1 published."""

import json
import subprocess
import sys
import textwrap
import time
from datetime import date

import pytest

from tests.fixtures.pipeline_workdir import D1, D2, D3, day_totals, kill_group, published_workdir, run_cli

pytestmark = pytest.mark.integration

READER = textwrap.dedent("""
    import json, sys, time, traceback
    import duckdb

    serving, out_path, stop_path = sys.argv[1:4]
    with open(out_path, "w") as out:
        while True:
            stopping = __import__("os").path.exists(stop_path)
            t0 = time.time()
            try:
                con = duckdb.connect(serving, read_only=True)
                try:
                    alloc = con.execute(
                        "select usage_date, count(*), sum(total_cost) from marts.fct_allocation_daily "
                        "group by 1 order by 1").fetchall()
                    cluster = con.execute(
                        "select usage_date, count(*), sum(total_cost) from marts.fct_cluster_daily "
                        "group by 1 order by 1").fetchall()
                finally:
                    con.close()
                rec = {"t": t0, "alloc": [[str(d), n, c] for d, n, c in alloc],
                       "cluster": [[str(d), n, c] for d, n, c in cluster]}
            except Exception as exc:  # every failure is a finding
                rec = {"t": t0, "error": repr(exc), "trace": traceback.format_exc()}
            out.write(json.dumps(rec) + "\\n")
            out.flush()
            if stopping:
                break
            time.sleep(0.1)
""")


def read_records(path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def wait_for_records(path, n: int, proc: subprocess.Popen, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and len(read_records(path)) >= n:
            return
        if proc.poll() is not None:
            raise AssertionError(f"reader exited early with {proc.returncode}")
        time.sleep(0.1)
    raise AssertionError(f"reader wrote fewer than {n} records in {timeout} s")


def test_readers_only_see_complete_published_states(tmp_path_factory):
    workdir = published_workdir(tmp_path_factory, "readers")
    serving = workdir / "wh" / "serving.duckdb"
    initial = day_totals(serving)
    assert sorted(initial) == [D1]

    out, stop = workdir / "reads.jsonl", workdir / "stop"
    reader = subprocess.Popen([sys.executable, "-c", READER, str(serving), str(out), str(stop)],
                              start_new_session=True, stderr=subprocess.PIPE, text=True)
    try:
        wait_for_records(out, 3, reader)  # the reader is reading before the pipeline starts
        t0 = time.monotonic()
        run_cli(workdir, "materialize", "--date", D2.isoformat())
        run_cli(workdir, "materialize", "--date", D3.isoformat())
        pipeline_s = time.monotonic() - t0
        n_before_stop = len(read_records(out))
        wait_for_records(out, n_before_stop + 3, reader)  # a few reads of the final state
        stop.touch()
        _, stderr = reader.communicate(timeout=60)
        assert reader.returncode == 0, stderr[-4000:]
    finally:
        if reader.poll() is None:
            kill_group(reader, grace=2)

    records = read_records(out)
    errors = [r for r in records if "error" in r]
    assert not errors, f"{len(errors)} of {len(records)} reads failed; first: {errors[0]['trace']}"
    assert len(records) > 20, f"only {len(records)} reads in {pipeline_s:.0f} s"

    final_alloc = day_totals(serving)
    final_cluster = day_totals(serving, "fct_cluster_daily")
    assert sorted(final_alloc) == [D1, D2, D3]
    # D1 was not touched by materialising D2 and D3
    assert final_alloc[D1][0] == initial[D1][0]
    assert final_alloc[D1][1] == pytest.approx(initial[D1][1], rel=1e-12)

    allowed = [{D1}, {D1, D2}, {D1, D2, D3}]
    seen_states = []
    for rec in records:
        for table, final in (("alloc", final_alloc), ("cluster", final_cluster)):
            days = {date.fromisoformat(d) for d, _, _ in rec[table]}
            assert days in allowed, f"a reader saw days {sorted(days)} in {table}"
            for d, n, cost in rec[table]:
                day = date.fromisoformat(d)
                # a day is visible only complete: its rows and totals are already the final ones
                assert n == final[day][0], f"{table} {d}: {n} rows seen, {final[day][0]} final"
                assert cost == pytest.approx(final[day][1], rel=1e-9), f"{table} {d}: half-written totals"
        alloc_days = {d for d, _, _ in rec["alloc"]}
        assert alloc_days == {d for d, _, _ in rec["cluster"]}, "one read saw two different publications"
        state = frozenset(alloc_days)
        if not seen_states or seen_states[-1] != state:
            seen_states.append(state)
    # the states only move forward: {D1} -> ({D1, D2} ->) {D1, D2, D3}
    sizes = [len(s) for s in seen_states]
    assert sizes == sorted(sizes), f"states went backwards: {[sorted(s) for s in seen_states]}"
    assert seen_states[0] == {str(D1)} and seen_states[-1] == {str(D1), str(D2), str(D3)}
