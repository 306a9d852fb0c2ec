"""The cloud bill end to end without the pipeline: the FinOps Foundation's FOCUS sample bills (tests/fixtures/focus)
and a recent synthetic bill are loaded by pipelines/sources/focus.py into a temp warehouse, dbt builds only
`+fct_cloud_cost_daily` there, and the serving copy is answered by the real HTTP server (/model/cloudCost,
/cloudCost). Every expected number is computed here from the bill files themselves.

The two AWS samples share their accounts and instance ids, so they are built one after the other on the same
warehouse: the second load replaces the sample day (a restated bill), which the test checks too.
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import dagster as dg
import duckdb
import pytest

from pipelines import DBT_PROJECT_DIR, dbt_executable
from pipelines.engines import TEST_SELECTION_ENV
from pipelines.settings import BillingSettings, Settings, load_settings
from pipelines.sources.focus import load_focus_bills
from pipelines.timeutil import utc_now
from pipelines.warehouse.connection import connect, ensure_raw_schema
from pipelines.warehouse.publish import publish_serving_copy
from tests.fixtures.api_client import get_json, serve_api

pytestmark = pytest.mark.integration

FIXTURES = Path(__file__).parents[1] / "fixtures" / "focus"
SAMPLES_FIRST = ("aws_savings_plan_all_upfront_75pct.csv", "gcp_resource_cud_no_upfront_100pct.csv",
                 "azure_reservation_all_upfront_100pct.csv")
SAMPLE_SECOND = "aws_reserved_instance_partial_upfront_100pct.csv"
SAMPLE_DAY = date(2026, 2, 1)
SYNTHETIC = "synthetic_recent.csv"
TOL = {"rel": 1e-9, "abs": 1e-6}


@dataclass
class Billed:
    warehouse: Path
    marts: dict[str, list[dict[str, Any]]]  # sample file -> its mart rows (built with the file's build)
    raw_after_restatement: list[tuple[str, int]]  # (source file name, rows) on SAMPLE_DAY after the second load
    base: str  # the API server over the published serving copy


def _file_rows(name: str) -> list[dict[str, str]]:
    with (FIXTURES / name).open(newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _num(row: dict[str, str], col: str) -> float:
    return float(row[col]) if row.get(col) else 0.0


def _synthetic_bill(path: Path, today: date) -> None:
    """Seven complete days before today: EC2 under a savings plan (list 10, effective 7), S3 on demand (2), a
    credit and a tax row; tags carry a team."""
    head = ("BillingPeriodStart,BillingPeriodEnd,ChargePeriodStart,ChargePeriodEnd,ChargeCategory,ChargeClass,"
            "ProviderName,BillingAccountId,SubAccountId,ServiceName,RegionId,ResourceId,ListCost,BilledCost,"
            "EffectiveCost,ContractedCost,BillingCurrency,CommitmentDiscountId,CommitmentDiscountStatus,Tags")
    lines = [head]
    for back in range(1, 8):
        d = today - timedelta(days=back)
        p = f"{d}T00:00:00Z,{d + timedelta(days=1)}T00:00:00Z"
        common = f"{p},{p}"
        lines.append(f'{common},Usage,,Amazon Web Services,payer-1,acct-1,Amazon Elastic Compute Cloud,us-east-1,'
                     f'i-1,10,0,7,10,USD,sp-1,Used,"{{""team"":""a"",""user:env"":""prod""}}"')
        lines.append(f'{common},Usage,,Amazon Web Services,payer-1,acct-2,Amazon Simple Storage Service,us-east-1,'
                     f'bucket-1,2,2,2,2,USD,,,"{{""team"":""b""}}"')
    d = today - timedelta(days=2)
    common = f"{d}T00:00:00Z,{d + timedelta(days=1)}T00:00:00Z,{d}T00:00:00Z,{d + timedelta(days=1)}T00:00:00Z"
    lines.append(f"{common},Credit,,Amazon Web Services,payer-1,acct-2,Amazon Simple Storage Service,us-east-1,,"
                 "0,-0.5,-0.5,0,USD,,,")
    lines.append(f"{common},Tax,,Amazon Web Services,payer-1,acct-1,Tax,,,1,1,1,1,USD,,,")
    path.write_text("\n".join(lines) + "\n")


def _dbt(tmp: Path, warehouse: Path, *command: str) -> None:
    """dbt in its own process (dbt-duckdb keeps the warehouse open in the process that ran it); the second call
    reuses the first one's partial parse (same target folder and profile)."""
    args = [dbt_executable(), *command, "--project-dir", str(DBT_PROJECT_DIR),
            "--profiles-dir", str(DBT_PROJECT_DIR), "--target-path", str(tmp / "target"),
            "--log-path", str(tmp / "logs")]
    # the engines' test selection: fct_cloud_cost_daily reads fct_asset_daily (the reconciled resources), and the
    # tests that also read marts this selection does not build are left out, as in every engine's dbt call
    env = {**os.environ, "KUBELEDGER_WAREHOUSE": str(warehouse), "KUBELEDGER_DUCKDB_MEMORY": "1GB",
           "DO_NOT_TRACK": "1", **TEST_SELECTION_ENV}
    res = subprocess.run(args, cwd=tmp, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert res.returncode == 0, f"dbt build failed:\n{res.stdout[-4000:]}"


def _load(warehouse: Path, folder: Path, start: date, end: date) -> dict[str, Any]:
    con = connect(warehouse)
    try:
        summary = load_focus_bills(Settings(billing=BillingSettings(focus_path=str(folder), reread_days=0)), con,
                                   start, end)
    finally:
        con.close()
    assert not summary["problems"], [p.line() for p in summary["problems"]]
    return summary


def _mart(warehouse: Path, account: str) -> list[dict[str, Any]]:
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        cur = con.execute("select * from marts.fct_cloud_cost_daily where billing_account_id = ?", [account])
        cols = [d[0] for d in cur.description]
        return [dict(zip(cols, r, strict=True)) for r in cur.fetchall()]
    finally:
        con.close()


@pytest.fixture(scope="module")
def billed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Billed]:
    tmp = tmp_path_factory.mktemp("focus")
    warehouse = tmp / "kubeledger.duckdb"
    with connect(warehouse) as con:
        ensure_raw_schema(con)
    today = utc_now().date()
    first, second = tmp / "bills-1", tmp / "bills-2"
    first.mkdir()
    second.mkdir()
    for name in SAMPLES_FIRST:
        shutil.copy(FIXTURES / name, first / name)
    _synthetic_bill(first / SYNTHETIC, today)
    shutil.copy(FIXTURES / SAMPLE_SECOND, second / SAMPLE_SECOND)
    once = _load(warehouse, first, SAMPLE_DAY, today)
    assert _load(warehouse, first, SAMPLE_DAY, today)["rows"] == once["rows"]  # idempotent
    # the data tests of the models run here; their dbt unit tests run in test_dbt_unit_tests.py
    _dbt(tmp, warehouse, "build", "--select", "+fct_cloud_cost_daily", "--exclude-resource-type", "unit_test")
    marts = {name: _mart(warehouse, _file_rows(name)[0]["BillingAccountId"]) for name in SAMPLES_FIRST}
    _load(warehouse, second, SAMPLE_DAY, SAMPLE_DAY + timedelta(days=1))  # restates the sample day only
    _dbt(tmp, warehouse, "run", "--select", "fct_cloud_cost_daily")
    marts[SAMPLE_SECOND] = _mart(warehouse, _file_rows(SAMPLE_SECOND)[0]["BillingAccountId"])
    with duckdb.connect(str(warehouse), read_only=True) as con:
        raw = con.execute("select regexp_extract(source_file, '[^/]+$'), count(*) from raw.focus_charges "
                          "where charge_date = ? group by 1 order by 1", [SAMPLE_DAY]).fetchall()
    serving = tmp / "serving.duckdb"
    publish_serving_copy(warehouse, serving)
    with serve_api(serving) as base:
        yield Billed(warehouse, marts, raw, base)


ALL_SAMPLES = (*SAMPLES_FIRST, SAMPLE_SECOND)


@pytest.mark.parametrize("name", ALL_SAMPLES)
def test_sample_bill_totals_and_amortisation_match_the_file(billed: Billed, name: str) -> None:
    rows, mart = _file_rows(name), billed.marts[name]
    assert mart, f"{name}: no mart rows"
    assert sum(r["charge_rows"] for r in mart) == len(rows)
    for col, mcol in (("BilledCost", "billed_cost"), ("EffectiveCost", "effective_cost"), ("ListCost", "list_cost"),
                      ("ContractedCost", "contracted_cost")):
        assert sum(r[mcol] for r in mart) == pytest.approx(sum(_num(r, col) for r in rows), **TOL), (name, col)
    purchases = [r for r in rows if r["ChargeCategory"] == "Purchase"]
    committed = [r for r in rows if r["ChargeCategory"] == "Usage" and r["CommitmentDiscountId"]]
    assert purchases and committed, f"{name}: a commitment scenario has purchase and covered usage rows"
    # FOCUS amortisation: the purchase is invoiced (BilledCost) but carries no EffectiveCost; its cost reaches
    # EffectiveCost on the usage rows it covers, which are billed 0
    by_category = {c: [r for r in mart if r["charge_category"] == c] for c in ("Purchase", "Usage")}
    assert sum(r["effective_cost"] for r in by_category["Purchase"]) == pytest.approx(
        sum(_num(r, "EffectiveCost") for r in purchases), **TOL)
    assert sum(r["commitment_purchase_billed_cost"] for r in mart) == pytest.approx(
        sum(_num(r, "BilledCost") for r in purchases if r["CommitmentDiscountId"]), **TOL)
    assert sum(r["commitment_amortized_cost"] for r in mart) == pytest.approx(
        sum(_num(r, "EffectiveCost") for r in committed), **TOL)
    assert sum(r["commitment_unused_cost"] for r in mart) == pytest.approx(
        sum(_num(r, "EffectiveCost") for r in committed if r["CommitmentDiscountStatus"] == "Unused"), **TOL)
    # the day's amortised total is the effective cost of every row but the purchases (never billed + effective)
    assert sum(r["effective_cost"] for r in mart) == pytest.approx(
        sum(_num(r, "EffectiveCost") for r in rows if r["ChargeCategory"] != "Purchase"), **TOL)
    # the commitment saves against list on every hour it covers
    assert sum(r["list_cost"] - r["effective_cost"] for r in by_category["Usage"] if r["commitment_amortized_cost"]
               ) == pytest.approx(sum(_num(r, "ListCost") - _num(r, "EffectiveCost") for r in committed), **TOL)


def test_a_restated_day_replaces_the_rows_loaded_for_it(billed: Billed) -> None:
    assert billed.raw_after_restatement == [(SAMPLE_SECOND, len(_file_rows(SAMPLE_SECOND)))]


def _window() -> str:
    today = utc_now().date()
    return f"{today - timedelta(days=7)}T00:00:00Z,{today}T00:00:00Z"


def test_model_cloud_cost_answers_in_kubecost_shape(billed: Billed) -> None:
    status, body = get_json(billed.base, "/model/cloudCost", window="7d", aggregate="service", accumulate="day")
    assert status == 200, body
    assert body["code"] == 200 and set(body["data"]) == {"sets"}
    sets = body["data"]["sets"]
    assert len(sets) == 7
    for s in sets:
        assert set(s) == {"cloudCosts", "window", "aggregationProperties"} and s["aggregationProperties"] == ["service"]
        ec2 = s["cloudCosts"]["Amazon Elastic Compute Cloud"]
        assert ec2["properties"]["service"] == "Amazon Elastic Compute Cloud"
        assert set(ec2["window"]) == {"start", "end"}
        for metric in ("listCost", "netCost", "amortizedNetCost", "invoicedCost", "amortizedCost"):
            assert set(ec2[metric]) == {"cost", "kubernetesPercent"}
        assert ec2["listCost"]["cost"] == pytest.approx(10) and ec2["amortizedNetCost"]["cost"] == pytest.approx(7)
        assert ec2["invoicedCost"]["cost"] == pytest.approx(0)


def test_cloud_cost_accumulates_filters_and_aggregates_by_label(billed: Billed) -> None:
    status, body = get_json(billed.base, "/cloudCost", window=_window(), aggregate="accountID,label:team",
                            accumulate="true", filter='provider:"Amazon Web Services"+category:"Usage","Credit"')
    assert status == 200, body
    (one,) = body["data"]["sets"]
    got = {k: (v["amortizedNetCost"]["cost"], v["amortizedCost"]["cost"], v["netCost"]["cost"])
           for k, v in one["cloudCosts"].items()}
    # seven days: EC2 7/day (team a, acct-1); S3 2/day (team b, acct-2) and one credit of -0.5 (no tags)
    assert got == {"acct-1/a": (pytest.approx(49), pytest.approx(49), pytest.approx(0)),
                   "acct-2/b": (pytest.approx(14), pytest.approx(14), pytest.approx(14)),
                   "acct-2/__unallocated__": (pytest.approx(-0.5), pytest.approx(0), pytest.approx(-0.5))}
    assert one["cloudCosts"]["acct-1/a"]["properties"]["labels"] == {"team": "a"}
    # AWS-style tag keys (`user:env`) in aggregate and filter
    status, body = get_json(billed.base, "/model/cloudCost", window=_window(), aggregate="label:user:env",
                            accumulate="true", filter='label[user:env]:"prod"')
    assert status == 200, body
    assert {k: v["listCost"]["cost"] for k, v in body["data"]["sets"][0]["cloudCosts"].items()} == {
        "prod": pytest.approx(70)}


@pytest.mark.parametrize(("params", "param"), [
    ({"window": "7d", "aggregate": "namespace"}, "aggregate"),
    ({"window": "7d", "costMetric": "totalCost"}, "costMetric"),
    ({"window": "7d", "filter": 'cluster:"a"'}, "filter"),
    ({"window": "7d", "accumulate": "hour"}, "accumulate"),
    ({"window": "soon"}, "window"),
])
def test_bad_parameters_are_a_400_naming_them(billed: Billed, params: dict[str, str], param: str) -> None:
    status, body = get_json(billed.base, "/model/cloudCost", **params)
    assert status == 400, body
    assert body["message"].startswith(f"{param}:"), body


def test_no_bill_is_a_200_with_empty_sets_and_a_warning(tmp_path: Path) -> None:
    serving = tmp_path / "serving.duckdb"
    duckdb.connect(str(serving)).close()
    with serve_api(serving) as base:
        status, body = get_json(base, "/model/cloudCost", window="7d", aggregate="service", accumulate="day")
    assert status == 200, body
    assert len(body["data"]["sets"]) == 7 and all(s["cloudCosts"] == {} for s in body["data"]["sets"])
    assert "no billing source is configured" in body["warning"]


def test_a_missing_bill_degrades_the_source_and_never_fails_the_run(tmp_path: Path) -> None:
    from pipelines.dagster_defs.assets_extract import raw_focus_charges
    from pipelines.dagster_defs.partitions import with_first_day
    from pipelines.dagster_defs.resources import KubeledgerResource

    config = tmp_path / "kubeledger.yaml"
    config.write_text("warehouse: {path: wh/w.duckdb, serving_path: wh/s.duckdb, parquet_path: wh/parquet}\n"
                      "billing: {focus_path: bills/, reread_days: 3}\nschedule: {start_date: '2026-01-01'}\n")
    (asset,) = with_first_day([raw_focus_charges], date(2026, 1, 1))
    result = dg.materialize([asset], partition_key="2026-02-01",
                            resources={"kubeledger": KubeledgerResource(config_path=str(config))})
    assert result.success
    with duckdb.connect(str(load_settings(str(config)).warehouse_path), read_only=True) as con:
        rows = con.execute("select scope, status, message, hint, affected from raw.source_health "
                           "where source = 'billing'").fetchall()
    assert [(r[0], r[1]) for r in rows] == [("2026-02-01", "degraded")]
    assert "not found" in rows[0][2] and "re-run the day" in rows[0][3]
    assert json.loads(rows[0][4]) == [str(tmp_path / "bills")]
    (event,) = result.asset_materializations_for_node(asset.node_def.name)
    assert "What to do:" in event.metadata["problems"].value[0]
