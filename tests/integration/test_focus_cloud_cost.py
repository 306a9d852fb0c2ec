"""The cloud bill end to end without the pipeline: the FinOps Foundation's FOCUS sample bills (tests/fixtures/focus),
a recent synthetic bill and an AWS CUR 2.0 export written here are loaded by pipelines/sources/focus.py and cur2.py
into a temp warehouse, dbt builds only
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
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

import dagster as dg
import duckdb
import pytest

from pipelines import DBT_PROJECT_DIR, dbt_executable
from pipelines.engines import TEST_SELECTION_ENV
from pipelines.settings import BillingSettings, Settings, load_settings
from pipelines.sources.cur2 import load_cur2_bills
from pipelines.sources.focus import load_focus_bills
from pipelines.timeutil import utc_now
from pipelines.warehouse.connection import connect, ensure_raw_schema
from pipelines.warehouse.publish import publish_serving_copy
from tests.fixtures.api_client import get_json, serve_api
from tests.fixtures.cur2 import charge_category, effective_cost, write_cur2

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
    cur2_rows: list[dict[str, Any]]  # the CUR 2.0 sample's line items
    cur2_mart: list[dict[str, Any]]  # its mart rows (its own payer account)


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


CUR2_PAYER = "210987654321"
CUR2_DAY = datetime(2026, 2, 3)
SP_ARN = "arn:aws:savingsplans::210987654321:savingsplan/3f1c2d4e-0000-4a5b-9c8d-000000000001"
RI_ARN = "arn:aws:ec2:us-east-1:210987654321:reserved-instances/0b7f1a2c-0000-4d3e-8f9a-000000000002"


def _cur2_sample() -> list[dict[str, Any]]:
    """One day of a CUR 2.0 export: on-demand usage, usage covered by a savings plan with its negation and the plan's
    recurring fee, usage covered by a no-upfront reserved instance (DiscountedUsage) with the RI's fee, tax and a
    credit. Both commitments are paid by the hour: what they are invoiced for the hour is what they amortise to."""
    start, end = CUR2_DAY, CUR2_DAY + timedelta(hours=1)
    common = {"bill_billing_period_start_date": datetime(2026, 2, 1), "bill_billing_period_end_date":
              datetime(2026, 3, 1), "bill_payer_account_id": CUR2_PAYER, "bill_invoicing_entity": "AWS",
              "line_item_usage_start_date": start, "line_item_usage_end_date": end,
              "line_item_usage_account_id": "109876543210", "line_item_currency_code": "USD",
              "line_item_product_code": "AmazonEC2", "product_servicecode": "AmazonEC2",
              "product_region_code": "us-east-1"}
    sp = {"savings_plan_savings_plan_a_r_n": SP_ARN}
    ri = {"reservation_reservation_a_r_n": RI_ARN}
    rows = [
        {"line_item_line_item_type": "Usage", "line_item_resource_id": "i-0ondemand0000001",
         "line_item_usage_amount": 1.0, "line_item_unblended_cost": 0.192, "pricing_public_on_demand_cost": 0.192,
         "resource_tags": {"user:team": "web"}},
        {"line_item_line_item_type": "SavingsPlanCoveredUsage", "line_item_resource_id": "i-0savingsplan00001",
         "line_item_usage_amount": 1.0, "line_item_unblended_cost": 0.384, "pricing_public_on_demand_cost": 0.384,
         "savings_plan_savings_plan_effective_cost": 0.2688, **sp},
        {"line_item_line_item_type": "SavingsPlanNegation", "line_item_resource_id": "i-0savingsplan00001",
         "line_item_usage_amount": 1.0, "line_item_unblended_cost": -0.384, "pricing_public_on_demand_cost": 0.0,
         **sp},
        {"line_item_line_item_type": "SavingsPlanRecurringFee", "line_item_resource_id": SP_ARN,
         "line_item_product_code": "ComputeSavingsPlans", "product_servicecode": None, "product_region_code": None,
         "line_item_usage_amount": 1.0, "line_item_unblended_cost": 0.3,
         "savings_plan_total_commitment_to_date": 0.3, "savings_plan_used_commitment": 0.2688, **sp},
        {"line_item_line_item_type": "DiscountedUsage", "line_item_resource_id": "i-0reserved00000001",
         "line_item_usage_amount": 1.0, "line_item_unblended_cost": 0.0, "pricing_public_on_demand_cost": 0.096,
         "reservation_effective_cost": 0.038, **ri},
        {"line_item_line_item_type": "RIFee", "line_item_resource_id": None, "line_item_usage_amount": 1.0,
         "line_item_unblended_cost": 0.045, "reservation_unused_amortized_upfront_fee_for_billing_period": 0.0,
         "reservation_unused_recurring_fee": 0.007, **ri},
        {"line_item_line_item_type": "Tax", "line_item_resource_id": None, "line_item_unblended_cost": 0.0921},
        {"line_item_line_item_type": "Credit", "line_item_resource_id": None, "line_item_unblended_cost": -0.05},
    ]
    return [{**common, **r} for r in rows]


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


def _load(warehouse: Path, folder: Path, start: date, end: date, cur2: Path | None = None) -> dict[str, Any]:
    con = connect(warehouse)
    try:
        if cur2 is not None:
            summary = load_cur2_bills(Settings(billing=BillingSettings(cur2_path=str(cur2), reread_days=0)), con,
                                      start, end)
        else:
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
    cur2_rows = _cur2_sample()
    cur2 = write_cur2(tmp / "cur2.parquet", cur2_rows)
    for _ in range(2):  # idempotent too: the second load replaces the day's rows
        assert _load(warehouse, tmp, CUR2_DAY.date(), CUR2_DAY.date() + timedelta(days=1), cur2)["rows"] == len(
            cur2_rows)
    # the data tests of the models run here; their dbt unit tests run in test_dbt_unit_tests.py
    _dbt(tmp, warehouse, "build", "--select", "+fct_cloud_cost_daily", "--exclude-resource-type", "unit_test")
    marts = {name: _mart(warehouse, _file_rows(name)[0]["BillingAccountId"]) for name in SAMPLES_FIRST}
    cur2_mart = _mart(warehouse, CUR2_PAYER)
    _load(warehouse, second, SAMPLE_DAY, SAMPLE_DAY + timedelta(days=1))  # restates the sample day only
    _dbt(tmp, warehouse, "run", "--select", "fct_cloud_cost_daily")
    marts[SAMPLE_SECOND] = _mart(warehouse, _file_rows(SAMPLE_SECOND)[0]["BillingAccountId"])
    with duckdb.connect(str(warehouse), read_only=True) as con:
        raw = con.execute("select regexp_extract(source_file, '[^/]+$'), count(*) from raw.focus_charges "
                          "where charge_date = ? group by 1 order by 1", [SAMPLE_DAY]).fetchall()
    serving = tmp / "serving.duckdb"
    publish_serving_copy(warehouse, serving)
    with serve_api(serving) as base:
        yield Billed(warehouse, marts, raw, base, cur2_rows, cur2_mart)


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


def test_cur2_export_lands_as_focus_categories_with_amortised_costs(billed: Billed) -> None:
    """The CUR 2.0 sample's day in fct_cloud_cost_daily: per FOCUS category, list, billed and effective cost as the
    documented mapping computes them from the sample's rows (tests/fixtures/cur2.py restates it)."""
    rows, mart = billed.cur2_rows, billed.cur2_mart
    assert sum(r["charge_rows"] for r in mart) == len(rows)
    assert {(r["usage_date"], r["provider_name"]) for r in mart} == {(CUR2_DAY.date(), "AWS")}
    for category in ("Usage", "Purchase", "Tax", "Credit"):
        mine = [r for r in rows if charge_category(r) == category]
        got = [r for r in mart if r["charge_category"] == category]
        assert mine and got, category
        assert sum(r["billed_cost"] for r in got) == pytest.approx(
            sum(r["line_item_unblended_cost"] for r in mine), **TOL), category
        assert sum(r["effective_cost"] for r in got) == pytest.approx(sum(effective_cost(r) for r in mine), **TOL)
        assert sum(r["list_cost"] or 0 for r in got) == pytest.approx(
            sum(r.get("pricing_public_on_demand_cost") or 0 for r in mine), **TOL), category
    assert {r["charge_category"] for r in mart} == {"Usage", "Purchase", "Tax", "Credit"}
    # the savings plan: covered usage billed at on-demand and negated (0 billed), amortised at the plan's rate; the
    # recurring fee is invoiced whole and keeps only the unused commitment as effective cost
    def line(resource: str | None, category: str) -> dict[str, Any]:
        (one,) = [r for r in mart if r["resource_id"] == resource and r["charge_category"] == category]
        return one

    covered = line("i-0savingsplan00001", "Usage")
    assert (covered["billed_cost"], covered["charge_rows"]) == (pytest.approx(0.0, abs=1e-12), 2)
    assert covered["effective_cost"] == pytest.approx(0.2688, **TOL)
    assert covered["commitment_amortized_cost"] == pytest.approx(covered["effective_cost"], **TOL)
    assert line(SP_ARN, "Purchase")["commitment_purchase_billed_cost"] == pytest.approx(0.3, **TOL)
    assert line("i-0reserved00000001", "Usage")["list_cost"] == pytest.approx(0.096, **TOL)
    # no upfront payments: the hour's invoice (billed) is the hour's amortised cost (effective)
    assert sum(r["billed_cost"] for r in mart) == pytest.approx(sum(r["effective_cost"] for r in mart), **TOL)
    tagged = line("i-0ondemand0000001", "Usage")
    assert json.loads(tagged["tags"]) == {"user:team": "web"}


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


@pytest.mark.parametrize(("key", "what"), [("focus_path", "the FOCUS bill"),
                                           ("cur2_path", "the AWS CUR 2.0 export")])
def test_a_missing_or_unreadable_bill_degrades_the_source_and_never_fails_the_run(tmp_path: Path, key: str,
                                                                                  what: str) -> None:
    from pipelines.dagster_defs.assets_extract import raw_billing
    from pipelines.dagster_defs.partitions import with_first_day
    from pipelines.dagster_defs.resources import KubeledgerResource

    bills = tmp_path / "bills"
    if key == "cur2_path":  # a file that is not Parquet
        bills.mkdir()
        (bills / "part-0.parquet").write_bytes(b"PAR1 not a parquet file")
    config = tmp_path / "kubeledger.yaml"
    config.write_text("warehouse: {path: wh/w.duckdb, serving_path: wh/s.duckdb, parquet_path: wh/parquet}\n"
                      f"billing: {{{key}: bills/, reread_days: 3}}\nschedule: {{start_date: '2026-01-01'}}\n")
    (asset,) = with_first_day([raw_billing], date(2026, 1, 1))
    result = dg.materialize([asset], partition_key="2026-02-01",
                            resources={"kubeledger": KubeledgerResource(config_path=str(config))})
    assert result.success
    with duckdb.connect(str(load_settings(str(config)).warehouse_path), read_only=True) as con:
        rows = con.execute("select scope, status, message, hint, affected from raw.source_health "
                           "where source = 'billing'").fetchall()
    assert [(r[0], r[1]) for r in rows] == [("2026-02-01", "degraded")]
    assert f"{what} at billing.{key} could not be loaded" in rows[0][2] and "re-run the day" in rows[0][3]
    assert ("not found" if key == "focus_path" else "part-0.parquet") in rows[0][2]
    assert json.loads(rows[0][4]) == [str(bills)]
    events = {e.asset_key.path[1]: e for e in result.asset_materializations_for_node(asset.node_def.name)}
    table = "focus_charges" if key == "focus_path" else "cur2_line_items"
    assert "What to do:" in events[table].metadata["problems"].value[0]
