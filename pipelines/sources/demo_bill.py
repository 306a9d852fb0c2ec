"""The demo clusters' cloud bill: a FOCUS 1.2 file as AWS would bill the demo's EC2 nodes, with a savings plan.

Only in demo mode: every cluster is a demo cluster and no bill is configured (`billing.focus_path` and
`billing.cur2_path` unset). A user's cluster never gets a made-up bill, and a configured bill is never mixed with
one. The bill is generated for the run's days into `<warehouse folder>/state/demo-bill/` (the folder holds the last
run's file only) and landed by the same loader as a real bill (pipelines/sources/focus.py, `demo_bill_settings`
points `billing.focus_path` at it), so raw.focus_charges, the reconciliation and /cloudCost treat it as any bill.
Its rows say they are demo data: BillingAccountName and SubAccountName start with "kubeledger demo".

What AWS would bill, per demo cluster and UTC day (one row per instance-day, ChargePeriod the day):
- each AWS node's instance-hours (its running minutes / 60) as a Usage row, ResourceId = its instance id (the last
  part of its providerID, the form AWS's export gives and the reconciliation matches), ListCost at the on-demand
  price of the public price catalog the demo is list-priced from (seeds/instance_prices.csv: provider, region,
  instance type); an instance type the catalog does not list is not billed (the node stays unmatched);
- a Compute Savings Plan of the cluster's account covering the nodes of the pools in PLAN_POOLS (on-demand nodes
  only): its hourly commitment is what those nodes cost at the plan's rate (PLAN_DISCOUNT below list), so their
  usage rows are billed 0 (BilledCost) and amortised at that rate (EffectiveCost), CommitmentDiscountStatus Used; the
  plan's recurring fee is a Purchase row per day (BilledCost = 24 h x the commitment, EffectiveCost 0, as FOCUS
  amortises it into the usage); commitment left unused (a covered node that ran less than the day) is a Usage row of
  the plan with CommitmentDiscountStatus Unused;
- the other on-demand nodes at list (BilledCost = EffectiveCost = ListCost); spot nodes at the catalog's spot
  price (spot_hourly_usd, PricingCategory Dynamic), at list when the catalog has none (the shipped catalog has none,
  so the demo's spot nodes are billed what the demo lists them at).
GCP and Azure nodes are another provider's bill: they are not in it (they show as unmatched), nor are volumes and
load balancers. Everything is a pure function of the demo settings and the day: a re-run lands the same rows.
"""

from __future__ import annotations

import csv
import json
import shutil
from dataclasses import replace
from datetime import UTC, date, datetime, timedelta
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from pipelines import SEEDS_DIR
from pipelines.settings import ClusterSettings, Settings
from pipelines.sources.demo import _node_hours
from pipelines.sources.demo_shapes import _seed
from pipelines.sources.demo_topology import _topology_for

PLAN_POOLS = ("general", "general-eu")  # the node pools the savings plan's commitment is sized for
PLAN_DISCOUNT = 0.30  # the plan's rate: 30 % below the on-demand list price (a 1-year no-upfront Compute SP)
ACCOUNT_NAME = "kubeledger demo"  # the label of every generated row: demo data
CATALOG = SEEDS_DIR / "instance_prices.csv"
FOLDER = ("state", "demo-bill")
EC2 = "Amazon Elastic Compute Cloud"
COLUMNS = (
    "BillingAccountId", "BillingAccountName", "BillingAccountType", "SubAccountId", "SubAccountName",
    "SubAccountType", "BillingCurrency", "BillingPeriodStart", "BillingPeriodEnd", "ChargePeriodStart",
    "ChargePeriodEnd", "ChargeCategory", "ChargeClass", "ChargeDescription", "ChargeFrequency", "ProviderName",
    "PublisherName", "InvoiceIssuerName", "ServiceName", "ServiceCategory", "ServiceSubcategory", "RegionId",
    "AvailabilityZone", "ResourceId", "ResourceType", "SkuId", "PricingCategory", "PricingQuantity", "PricingUnit",
    "ListUnitPrice", "ContractedUnitPrice", "ConsumedQuantity", "ConsumedUnit", "ListCost", "ContractedCost",
    "BilledCost", "EffectiveCost", "CommitmentDiscountId", "CommitmentDiscountName", "CommitmentDiscountCategory",
    "CommitmentDiscountType", "CommitmentDiscountStatus", "CommitmentDiscountQuantity", "CommitmentDiscountUnit",
    "Tags",
)


def is_demo_mode(settings: Settings) -> bool:
    """Every cluster is a demo cluster and no bill is configured: the only case that gets a generated bill."""
    return (all(c.source == "demo" for c in settings.clusters) and not settings.billing.focus_path
            and not settings.billing.cur2_path)


@lru_cache(maxsize=1)
def _catalog() -> dict[tuple[str, str, str], tuple[float, float | None]]:
    """(provider, region, instance type) -> (on-demand $/h, spot $/h or None), from the shipped catalog."""
    out = {}
    with CATALOG.open(newline="") as f:
        for row in csv.DictReader(f):
            spot = (row.get("spot_hourly_usd") or "").strip()
            out[(row["provider"], row["region"], row["instance_type"])] = (
                float(row["hourly_usd"]), float(spot) if spot else None)
    return out


def _account(*parts: object) -> str:
    return f"{_seed('kubeledger-demo-account', *parts) % 10**12:012d}"


def _running_hours(cluster: ClusterSettings, day: date) -> np.ndarray:
    """Each node's hours on the day, as the demo's node rows count them (the demo's running minutes / 60)."""
    topo = _topology_for(cluster)
    day0 = int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp())
    return sum(_node_hours(topo, day0 + 3600 * h)[1] for h in range(24)) / 60.0


def plan_arn(cluster: ClusterSettings) -> str:
    """The cluster account's Compute Savings Plan."""
    plan = f"{_seed('kubeledger-demo-plan', cluster.demo.seed, cluster.name):016x}"
    plan = f"{plan[:8]}-{plan[8:12]}-{plan[12:16]}-{_seed('plan-tail', plan) % 16**16:016x}"
    return f"arn:aws:savingsplans::{_account(cluster.demo.seed, cluster.name)}:savingsplan/{plan}"


def cluster_bill(cluster: ClusterSettings, day: date) -> list[dict[str, object]]:
    """The FOCUS rows of one demo cluster's AWS account for one UTC day."""
    nodes = _topology_for(cluster).nodes
    hours = _running_hours(cluster, day)
    period = (f"{day.replace(day=1)}T00:00:00Z",
              f"{(day.replace(day=28) + timedelta(days=4)).replace(day=1)}T00:00:00Z")
    sub = _account(cluster.demo.seed, cluster.name)
    common: dict[str, object] = {
        "BillingAccountId": _account("payer"), "BillingAccountName": ACCOUNT_NAME,
        "BillingAccountType": "Billing Account", "SubAccountId": sub,
        "SubAccountName": f"{ACCOUNT_NAME} ({cluster.name})", "SubAccountType": "Linked Account",
        "BillingCurrency": "USD", "BillingPeriodStart": period[0], "BillingPeriodEnd": period[1],
        "ChargePeriodStart": f"{day}T00:00:00Z", "ChargePeriodEnd": f"{day + timedelta(days=1)}T00:00:00Z",
        "ProviderName": "AWS", "PublisherName": "AWS", "InvoiceIssuerName": "AWS",
    }
    arn = plan_arn(cluster)
    plan = {"CommitmentDiscountId": arn, "CommitmentDiscountName": "Compute Savings Plan",
            "CommitmentDiscountCategory": "Spend", "CommitmentDiscountType": "Compute Savings Plan",
            "CommitmentDiscountUnit": "USD"}
    rows: list[dict[str, object]] = []
    commitment = 0.0  # $/h: the covered nodes at the plan's rate
    covered_effective = 0.0
    for i, node in enumerate(nodes.to_dict("records")):
        if node["_provider"] != "aws" or not node["provider_id"] or hours[i] <= 0:
            continue
        itype = node["instance_type"]
        price = _catalog().get(("aws", node["region"], itype))
        if price is None:
            continue
        labels = json.loads(node["labels"])
        pool = labels.get("eks.amazonaws.com/nodegroup", "")
        spot = labels.get("eks.amazonaws.com/capacityType") == "SPOT"
        list_cost = price[0] * hours[i]
        row = dict(common) | {
            "ChargeCategory": "Usage", "ChargeFrequency": "Usage-Based", "ServiceName": EC2,
            "ServiceCategory": "Compute", "ServiceSubcategory": "Virtual Machines", "RegionId": node["region"],
            "AvailabilityZone": node["zone"], "ResourceId": node["provider_id"].rsplit("/", 1)[1],
            "ResourceType": "Instance", "SkuId": f"BoxUsage:{itype}", "PricingQuantity": hours[i],
            "PricingUnit": "Hours", "ConsumedQuantity": hours[i], "ConsumedUnit": "Hours",
            "ListUnitPrice": price[0], "ContractedUnitPrice": price[0], "ListCost": list_cost,
            "ContractedCost": list_cost,
            "Tags": json.dumps({"eks:cluster-name": cluster.name, "eks:nodegroup-name": pool}, sort_keys=True),
        }
        if spot:
            billed = (price[1] if price[1] is not None else price[0]) * hours[i]
            row |= {"ChargeDescription": f"{itype} Spot instance-hours", "PricingCategory": "Dynamic",
                    "SkuId": f"SpotUsage:{itype}", "BilledCost": billed, "EffectiveCost": billed}
        elif pool in PLAN_POOLS:
            rate = price[0] * (1 - PLAN_DISCOUNT)
            commitment += rate
            covered_effective += rate * hours[i]
            row |= plan | {"ChargeDescription": f"{itype} instance-hours covered by the Compute Savings "
                           "Plan", "PricingCategory": "Committed", "BilledCost": 0.0,
                           "EffectiveCost": rate * hours[i], "CommitmentDiscountStatus": "Used",
                           "CommitmentDiscountQuantity": rate * hours[i]}
        else:
            row |= {"ChargeDescription": f"{itype} On Demand instance-hours",
                    "PricingCategory": "Standard", "BilledCost": list_cost, "EffectiveCost": list_cost}
        rows.append(row)
    if commitment > 0:
        fee = 24 * commitment
        savings = dict(common) | plan | {
            "ServiceName": "Savings Plans for AWS Compute usage", "ServiceCategory": "Compute",
            "ServiceSubcategory": "Other (Compute)", "ResourceId": arn, "ResourceType": "Savings Plan",
            "SkuId": "ComputeSP:1yrNoUpfront", "PricingUnit": "Hours", "ConsumedUnit": "Hours",
        }
        rows.append(savings | {
            "ChargeCategory": "Purchase", "ChargeFrequency": "Recurring", "PricingCategory": "Standard",
            "ChargeDescription": f"Compute Savings Plan, 1 year No Upfront, {commitment:.4f} USD/hour commitment",
            "PricingQuantity": 24.0, "ListUnitPrice": commitment, "ContractedUnitPrice": commitment,
            "ListCost": fee, "ContractedCost": fee, "BilledCost": fee, "EffectiveCost": 0.0,
            "CommitmentDiscountQuantity": fee})
        unused = fee - covered_effective
        if unused > 1e-9 * fee:  # a covered node ran less than the whole day
            rows.append(savings | {
                "ChargeCategory": "Usage", "ChargeFrequency": "Usage-Based", "PricingCategory": "Committed",
                "ChargeDescription": "Compute Savings Plan commitment left unused", "ListCost": 0.0,
                "ContractedCost": 0.0, "BilledCost": 0.0, "EffectiveCost": unused,
                "CommitmentDiscountStatus": "Unused", "CommitmentDiscountQuantity": unused})
    return rows


def demo_bill(settings: Settings, start: date, end: date) -> pd.DataFrame:
    """The FOCUS rows of every demo cluster for the days [start, end), in COLUMNS order."""
    rows = [r for day in (start + timedelta(days=d) for d in range((end - start).days))
            for cluster in settings.clusters if cluster.source == "demo" for r in cluster_bill(cluster, day)]
    return pd.DataFrame(rows, columns=list(COLUMNS))


def write_demo_bill(settings: Settings, start: date, end: date) -> Path:
    """The days' bill as one FOCUS CSV in the warehouse's state folder (emptied first: the folder holds this run's
    file only, so the loader reads no other run's days); returns the folder."""
    folder = settings.warehouse_path.parent.joinpath(*FOLDER)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    last = end - timedelta(days=1)
    path = folder / f"kubeledger-demo-focus-{start}_{last}.csv"
    tmp = path.with_name(f".{path.name}.tmp")
    demo_bill(settings, start, end).to_csv(tmp, index=False, float_format="%.17g")
    tmp.replace(path)
    return folder


def demo_bill_settings(settings: Settings, start: date, end: date) -> Settings | None:
    """In demo mode, the settings that load the generated bill of [start, end) through the real FOCUS loader:
    `billing.focus_path` at the generated file's folder, no re-read days (the demo's bill is never restated, and
    the folder holds only the run's days). None otherwise."""
    if not is_demo_mode(settings):
        return None
    folder = write_demo_bill(settings, start, end)
    return replace(settings, billing=replace(settings.billing, focus_path=str(folder), reread_days=0))
