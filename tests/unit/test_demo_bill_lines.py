"""The demo clusters' generated FOCUS bill (pipelines/sources/demo_bill.py): only in demo mode, deterministic, the
list prices of the shipped catalog, and a savings plan whose fee is what its covered usage is amortised at.
Every expected number is computed here from the catalog file and the demo's own nodes."""

from __future__ import annotations

import csv
import json
from datetime import date

import duckdb
import pytest

from pipelines import SEEDS_DIR
from pipelines.settings import Settings, load_settings
from pipelines.settings_models import BillingSettings, ClusterSettings, DemoSettings
from pipelines.sources.demo_bill import (
    ACCOUNT_NAME,
    PLAN_DISCOUNT,
    PLAN_POOLS,
    demo_bill,
    demo_bill_settings,
    is_demo_mode,
)
from pipelines.sources.demo_topology import _topology_for
from pipelines.sources.focus import load_focus_bills
from pipelines.warehouse.connection import ensure_raw_schema

DAY = date(2026, 12, 4)
NEXT = date(2026, 12, 5)


def _catalog() -> dict[tuple[str, str], float]:
    with (SEEDS_DIR / "instance_prices.csv").open(newline="") as f:
        return {(r["region"], r["instance_type"]): float(r["hourly_usd"]) for r in csv.DictReader(f)
                if r["provider"] == "aws"}


def test_only_demo_clusters_without_a_configured_bill_get_one(tmp_path) -> None:
    demo = ClusterSettings(name="demo")
    prom = ClusterSettings(name="prod", source="prometheus")
    assert is_demo_mode(Settings())
    assert is_demo_mode(Settings(clusters=(demo, ClusterSettings(name="other"))))
    assert not is_demo_mode(Settings(clusters=(demo, prom)))  # a user cluster never gets a made-up bill
    assert not is_demo_mode(Settings(billing=BillingSettings(focus_path="bills/")))  # the user's bill is the bill
    assert not is_demo_mode(Settings(billing=BillingSettings(cur2_path="cur/")))
    config = tmp_path / "kubeledger.yaml"
    config.write_text("warehouse: {path: wh/w.duckdb}\nclusters: [{name: p, source: prometheus, "
                      "prometheus: {url: 'http://127.0.0.1:9'}}]\n")
    assert demo_bill_settings(load_settings(config), DAY, NEXT) is None
    assert not (tmp_path / "wh").exists()  # nothing written


def test_the_bill_is_the_demo_nodes_at_catalog_list_prices_with_a_savings_plan() -> None:
    settings = Settings()
    bill = demo_bill(settings, DAY, NEXT)
    assert bill.equals(demo_bill(settings, DAY, NEXT))  # deterministic
    assert set(bill["BillingAccountName"]) == {ACCOUNT_NAME} and set(bill["SubAccountName"]) == {
        f"{ACCOUNT_NAME} (demo)"}
    nodes = _topology_for(settings.clusters[0]).nodes
    aws = nodes[nodes["_provider"] == "aws"]
    usage = bill[(bill["ChargeCategory"] == "Usage") & bill["ServiceName"].str.startswith("Amazon Elastic")]
    assert sorted(usage["ResourceId"]) == sorted(p.rsplit("/", 1)[1] for p in aws["provider_id"])
    prices = _catalog()
    for row in usage.to_dict("records"):
        node = aws[aws["provider_id"].str.endswith("/" + row["ResourceId"])].iloc[0]
        assert row["ListCost"] == pytest.approx(prices[(node["region"], node["instance_type"])]
                                                * row["ConsumedQuantity"], rel=1e-12)
        pool = json.loads(node["labels"])["eks.amazonaws.com/nodegroup"]
        if row["CommitmentDiscountStatus"] == "Used":
            assert pool in PLAN_POOLS and row["BilledCost"] == 0.0
            assert row["EffectiveCost"] == pytest.approx((1 - PLAN_DISCOUNT) * row["ListCost"], rel=1e-12)
        else:  # on-demand and spot at list (the shipped catalog has no spot prices)
            assert pool not in PLAN_POOLS or row["PricingCategory"] == "Dynamic"
            assert row["BilledCost"] == row["EffectiveCost"] == pytest.approx(row["ListCost"], rel=1e-12)
    covered = usage[usage["CommitmentDiscountStatus"] == "Used"]
    assert 0 < len(covered) < len(usage)  # part of the AWS nodes
    assert usage.loc[usage["ResourceId"].isin(covered["ResourceId"]), "ConsumedQuantity"].eq(24).all()
    # the plan's fee is invoiced (billed) and amortised into the covered usage: fee = Σ covered effective (+ unused)
    (fee,) = bill[bill["ChargeCategory"] == "Purchase"].to_dict("records")
    assert fee["CommitmentDiscountId"] == covered["CommitmentDiscountId"].iloc[0] == fee["ResourceId"]
    assert fee["EffectiveCost"] == 0.0 and fee["ChargeFrequency"] == "Recurring"
    unused = bill.loc[bill["CommitmentDiscountStatus"] == "Unused", "EffectiveCost"].sum()
    assert fee["BilledCost"] == pytest.approx(covered["EffectiveCost"].sum() + unused, rel=1e-12)
    assert unused == 0  # the covered pools run the whole day


def test_the_generated_bill_lands_through_the_focus_loader(tmp_path) -> None:
    """demo_bill_settings writes the run's days into the state folder (one file, the folder emptied first) and the
    real loader lands them in raw.focus_charges; a second run over another day replaces only that day."""
    config = tmp_path / "kubeledger.yaml"
    config.write_text("warehouse: {path: wh/w.duckdb}\nclusters: [{name: a, source: demo, demo: {nodes: 4}}, "
                      "{name: b, source: demo, demo: {nodes: 3, seed: 7}}]\n")
    settings = load_settings(config)
    con = duckdb.connect(str(tmp_path / "bills.duckdb"))
    ensure_raw_schema(con)
    counts = []
    for start, end in ((DAY, date(2026, 12, 6)), (NEXT, date(2026, 12, 6)), (NEXT, date(2026, 12, 6))):
        loading = demo_bill_settings(settings, start, end)
        assert loading is not None and loading.billing.reread_days == 0
        files = sorted((tmp_path / "wh" / "state" / "demo-bill").iterdir())
        assert [f.name for f in files] == [f"kubeledger-demo-focus-{start}_2026-12-05.csv"]
        summary = load_focus_bills(loading, con, start, end)
        assert not summary["problems"] and summary["rows"] == len(demo_bill(settings, start, end))
        counts.append(con.execute("select charge_date, sub_account_name, count(*), sum(list_cost) "
                                  "from raw.focus_charges group by all order by all").fetchall())
    assert counts[0] == counts[1] == counts[2]  # re-running a day lands the same rows, the other day kept
    assert {r[1] for r in counts[0]} == {f"{ACCOUNT_NAME} (a)", f"{ACCOUNT_NAME} (b)"}
    assert {r[0] for r in counts[0]} == {DAY, NEXT}
    con.close()


def test_a_one_node_demo_is_covered_whole() -> None:
    """A 1-node demo's node (the first template, the general pool) is all the plan covers: its usage and the fee."""
    small = Settings(clusters=(ClusterSettings(name="tiny", demo=DemoSettings(nodes=1)),))
    bill = demo_bill(small, DAY, NEXT)
    assert list(bill["ChargeCategory"]) == ["Usage", "Purchase"]
    assert bill["BilledCost"].iloc[1] == pytest.approx(bill["EffectiveCost"].iloc[0], rel=1e-12)
