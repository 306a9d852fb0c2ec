"""Extract assets: one writer per raw source.

Metrics and the Kubernetes snapshot are hourly (a range backfill runs as one run over its hours). Carbon intensity
and Boavizta impacts are daily, in the daily build: they fetch what dbt's `int_nodes_required_lookups` (the
dbt_lookups asset, built first for the same window) says the nodes need, before dbt builds the rest.
Every asset honours the run's cluster selection (resources.CLUSTER_TAG).
"""


from typing import Any

import dagster as dg

from pipelines.dagster_defs.metadata import safe_metadata
from pipelines.dagster_defs.partitions import daily_partitions, hourly_partitions
from pipelines.dagster_defs.resources import WRITER_POOL, KubeledgerResource, run_clusters
from pipelines.redaction import redact
from pipelines.sources.boavizta import extract_boavizta_impacts
from pipelines.sources.carbon.extract import extract_carbon
from pipelines.sources.cur2 import load_cur2_bills
from pipelines.sources.demo_bill import demo_bill_settings
from pipelines.sources.focus import load_focus_bills
from pipelines.sources.kubernetes import extract_kubernetes
from pipelines.sources.metrics import extract_metrics, metrics_problems
from pipelines.sources.pricing import PRICE_TABLES, load_pricing
from pipelines.timeutil import hours_between
from pipelines.warehouse.landing import METRICS_TABLES
from pipelines.warehouse.lookups import LOOKUPS_MODEL
from pipelines.warehouse.source_health import CURRENT, Problem, record

EXTRACT_KWARGS = dict(
    partitions_def=hourly_partitions,
    backfill_policy=dg.BackfillPolicy.single_run(),
    pool=WRITER_POOL,
    group_name="extract",
    kinds={"python", "duckdb"},
)
LOOKUPS_KEY = dg.AssetKey(["intermediate", LOOKUPS_MODEL])
LOOKUP_EXTRACT_KWARGS = dict(
    EXTRACT_KWARGS, partitions_def=daily_partitions, group_name="lookups", deps=[LOOKUPS_KEY],
)


def _days(hours: list) -> list:
    return sorted({h.date() for h in hours})


def report_health(context: dg.AssetExecutionContext, con: Any, source: str, scopes: list,
                  problems: list[Problem]) -> None:
    """Record the source's outcome in raw.source_health and say each problem in ONE warning line (the console
    shows it; the details are in the asset's metadata and the log file)."""
    record(con, source, scopes, problems)
    for problem in problems:
        context.log.warning(problem.line())


def _hours(context: dg.AssetExecutionContext) -> list:
    window = context.partition_time_window  # never partition_key: a backfill range has no single key
    return hours_between(window.start, window.end)


METRICS_KEYS = [["raw", t] for t in METRICS_TABLES]


@dg.multi_asset(
    name="raw_metrics",
    specs=[dg.AssetSpec(k, group_name="extract", kinds={"python", "duckdb"},
                        description=f"Metrics per cluster-hour (Prometheus or demo) in raw.{k[1]}.")
           for k in METRICS_KEYS],
    partitions_def=hourly_partitions, backfill_policy=dg.BackfillPolicy.single_run(), pool=WRITER_POOL,
)
def raw_metrics(context: dg.AssetExecutionContext, kubeledger: KubeledgerResource):
    """Prometheus (cAdvisor + kube-state-metrics) or demo metrics for every cluster and hour of the run."""
    hours = _hours(context)
    with kubeledger.connect() as con:
        clusters = run_clusters(context, kubeledger.settings)
        summary = extract_metrics(kubeledger.settings, con, hours, clusters)
        for day, problems in metrics_problems(con, [c.name for c in clusters], _days(hours)).items():
            report_health(context, con, "metrics", [day], problems)
    for warning in summary["warnings"][:20]:
        context.log.warning(redact(str(warning)))  # stored in the run's events: the servers' words, redacted
    for key in METRICS_KEYS:
        metadata: dict = {"rows": summary["tables"].get(key[1], 0), "hours": len(hours)}
        if key[1] == "node_hours":
            # the run's totals once, not on each of the 9 tables: a ranged run stores every entry once per hour
            metadata |= {
                "promql_queries": summary["queries"], "rows_per_cluster": summary["clusters"],
                "warnings": summary["warnings"][:50],
                # {cluster: {metric: [hours]}}: optional series checked and not found (the warnings name them)
                "absent_series": summary["absent_series"],
            }
        yield dg.MaterializeResult(asset_key=key, metadata=safe_metadata(metadata))


@dg.asset(key=["raw", "k8s_objects"], deps=[["raw", "node_hours"]],
          description="Kubernetes API snapshot (labels, annotations, owner chains) into raw.k8s_objects.",
          **EXTRACT_KWARGS)
def raw_kubernetes(context: dg.AssetExecutionContext, kubeledger: KubeledgerResource) -> dg.MaterializeResult:
    hours = _hours(context)
    with kubeledger.connect() as con:
        summary = extract_kubernetes(kubeledger.settings, con, hours, run_clusters(context, kubeledger.settings))
        if summary["days"]:  # only runs that asked the API say anything about it
            report_health(context, con, "kubernetes", sorted(set(summary["days"])), summary["problems"])
    for warning in summary["warnings"][:20]:
        context.log.warning(redact(str(warning)))  # stored in the run's events: the servers' words, redacted
    return dg.MaterializeResult(metadata=safe_metadata({
        "rows": summary["rows"], "skipped_hours": summary["skipped_hours"], "warnings": summary["warnings"][:50],
    }))


@dg.asset(key=["raw", "carbon_intensity_hours"],
          description="Hourly grid carbon intensity for the zones the nodes need (int_nodes_required_lookups) from "
          "the configured provider into raw.carbon_intensity_hours; cached, outages fall back in the models.",
          **LOOKUP_EXTRACT_KWARGS)
def raw_carbon_intensity(context: dg.AssetExecutionContext, kubeledger: KubeledgerResource) -> dg.MaterializeResult:
    hours = _hours(context)
    with kubeledger.connect() as con:
        summary = extract_carbon(kubeledger.settings, con, hours, run_clusters(context, kubeledger.settings))
        report_health(context, con, "carbon", _days(hours), summary.get("problems", []))
    return dg.MaterializeResult(metadata=safe_metadata({
        "rows": summary["rows"], "provider": summary["provider"], "zones": summary["zones"],
        "failures": summary.get("failures", [])[:50],
    }))


@dg.asset(key=["raw", "boavizta_impacts"],
          description="Embodied impacts per (provider, instance type) the nodes need (int_nodes_required_lookups) "
          "from the Boavizta API or the bundled table, cached in raw.boavizta_impacts.", **LOOKUP_EXTRACT_KWARGS)
def raw_boavizta(context: dg.AssetExecutionContext, kubeledger: KubeledgerResource) -> dg.MaterializeResult:
    # the lookups model is already restricted to the run's window and cluster
    with kubeledger.connect() as con:
        summary = extract_boavizta_impacts(kubeledger.settings, con)
        if kubeledger.settings.boavizta.url:  # the bundled table cannot fail
            report_health(context, con, "boavizta", _days(_hours(context)), summary.get("problems", []))
    return dg.MaterializeResult(metadata=safe_metadata({
        "rows": summary["rows"], "instance_types": summary.get("keys", 0),
        "failures": summary.get("failures", [])[:50],
    }))


PRICING_KEYS = [["raw", t] for t in PRICE_TABLES]


@dg.multi_asset(
    name="raw_pricing",
    specs=[dg.AssetSpec(k, group_name="reference", kinds={"python", "duckdb"},
                        description=f"Validated user price file rows in raw.{k[1]}.") for k in PRICING_KEYS],
    pool=WRITER_POOL,
)
def raw_pricing(context: dg.AssetExecutionContext, kubeledger: KubeledgerResource):
    """Validated user price files (instance sheet, Kubecost CSV, OpenCost custom JSON)."""
    with kubeledger.connect() as con:
        summary = load_pricing(kubeledger.settings, con)
        report_health(context, con, "pricing", [CURRENT], summary["problems"])
    for key in PRICING_KEYS:
        files = [f for f in summary["files"] if f["table"] == key[1]]
        yield dg.MaterializeResult(asset_key=key, metadata=safe_metadata({"files": (files)}))


BILLING_KEYS = [["raw", "focus_charges"], ["raw", "cur2_line_items"]]


@dg.multi_asset(
    name="raw_billing",
    specs=[dg.AssetSpec(["raw", "focus_charges"], group_name="billing", kinds={"python", "duckdb"},
                        description="FOCUS cloud bill rows (settings `billing.focus_path`) of the run's days and the "
                        "`billing.reread_days` before them, replaced per charge day in raw.focus_charges (in demo mode "
                        "the demo's generated bill of the run's days, pipelines/sources/demo_bill.py); a no-op "
                        "without bills."),
           dg.AssetSpec(["raw", "cur2_line_items"], group_name="billing", kinds={"python", "duckdb"},
                        description="AWS CUR 2.0 line items (settings `billing.cur2_path`) of the same days, replaced "
                        "per charge day in raw.cur2_line_items; a no-op without an export.")],
    partitions_def=daily_partitions, backfill_policy=dg.BackfillPolicy.single_run(), pool=WRITER_POOL,
)
def raw_billing(context: dg.AssetExecutionContext, kubeledger: KubeledgerResource):
    """The cloud bills: FOCUS files and the AWS CUR 2.0 export, one 'billing' line in the source-health ledger. In
    demo mode (every cluster a demo cluster, no bill configured) the demo's generated FOCUS bill of the run's days,
    through the same FOCUS loader (pipelines/sources/demo_bill.py)."""
    window = context.partition_time_window  # a backfill range re-reads its whole span once
    start, end = window.start.date(), window.end.date()
    settings = kubeledger.settings
    demo = demo_bill_settings(settings, start, end)
    with kubeledger.connect() as con:
        summaries = [load_focus_bills(demo or settings, con, start, end), load_cur2_bills(settings, con, start, end)]
        if demo is not None:
            summaries[0]["demo_bill"] = demo.billing.focus_path
        if any(s["configured"] for s in summaries):  # without a `billing:` block the ledger says nothing about bills
            report_health(context, con, "billing", _days(_hours(context)),
                          [p for s in summaries for p in s["problems"]])
    for key, summary in zip(BILLING_KEYS, summaries, strict=True):
        yield dg.MaterializeResult(asset_key=key, metadata=safe_metadata(
            {k: v for k, v in summary.items() if k != "problems"}
            | {"problems": [p.line() for p in summary["problems"]]}))


extract_assets = [raw_metrics, raw_kubernetes, raw_carbon_intensity, raw_boavizta, raw_billing]
