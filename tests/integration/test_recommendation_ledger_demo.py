"""`kubeledger recommend --dismiss` on a copy of a warehouse the pipeline built (the demo day every integration test
shares: tests/fixtures/pipeline_workdir.py published_workdir, built once per pytest run): a real recommendation id is
recorded in raw.recommendation_actions of the working warehouse, an unknown id and a missing reason are one line.
The built marts carry the ledger's columns, all open with the empty ledger. The mart arithmetic of a dismissal and of
an applied change is in the dbt unit tests (ut_rec_dismissed_counts_nothing, ut_recommendation_outcome_realised_saving).
"""

from __future__ import annotations

import subprocess

import duckdb
import pytest

from tests.fixtures.pipeline_workdir import cli_args, cli_env, published_workdir

pytestmark = pytest.mark.integration


def _run(workdir, *args):
    return subprocess.run(cli_args(workdir, "recommend", *args), cwd=workdir, env=cli_env(), capture_output=True,
                          text=True, timeout=120)


def test_dismiss_a_built_recommendation(tmp_path_factory):
    workdir = published_workdir(tmp_path_factory, "ledger")
    warehouse = workdir / "wh" / "kubeledger.duckdb"
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        rec_id, cluster, kind = con.execute(
            "select recommendation_id, cluster, kind from marts.fct_recommendation_daily "
            "order by saving_usd_per_month desc, recommendation_id limit 1").fetchone()
        statuses = con.execute("select distinct coalesce(status, '?') from marts.fct_recommendation_daily").fetchall()
        outcomes = con.execute("select count(*) from marts.fct_recommendation_outcome_daily").fetchone()[0]
    finally:
        con.close()
    assert statuses == [("open",)] and outcomes == 0  # an empty ledger: every row open, no outcome

    ok = _run(workdir, "--dismiss", rec_id, "--reason", "owned by another team")
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith(f"recorded: {rec_id}: dismissed")

    unknown = _run(workdir, "--dismiss", "container_rightsizing:demo/nope", "--reason", "x")
    assert unknown.returncode == 2 and unknown.stderr.count("\n") == 1, unknown.stderr
    assert "'container_rightsizing:demo/nope'" in unknown.stderr and "kubeledger recommend --format" in unknown.stderr
    no_reason = _run(workdir, "--dismiss", rec_id)
    assert no_reason.returncode == 2 and "needs --reason" in no_reason.stderr and no_reason.stderr.count("\n") == 1

    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        rows = con.execute("select recommendation_id, cluster, kind, status, reason, applied_date "
                           "from raw.recommendation_actions").fetchall()
    finally:
        con.close()
    assert rows == [(rec_id, cluster, kind, "dismissed", "owned by another team", None)]
