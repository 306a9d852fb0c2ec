"""The carbon-intensity step: the zones the window's nodes need (dbt's int_nodes_required_lookups) from the
configured provider into raw.carbon_intensity_hours."""

from __future__ import annotations

import os
from collections.abc import Iterable
from datetime import datetime
from typing import TYPE_CHECKING, Any

import duckdb

from pipelines.sources import base
from pipelines.sources.base import auth_line
from pipelines.sources.faults import Problem, hint_for, main_kind, short_cause
from pipelines.warehouse.lookups import CARBON_ZONE, required_lookups

from .providers import make_provider

if TYPE_CHECKING:
    from pipelines.settings import ClusterSettings, Settings


def extract_carbon(settings: Settings, con: duckdb.DuckDBPyConnection, hours: list[datetime],
                   clusters: Iterable[ClusterSettings] | None = None) -> dict[str, Any]:
    """Land hourly intensity for the zones in use. Outages are recorded, not raised: the models fall back."""
    zones = sorted(key for _, key in required_lookups(con, CARBON_ZONE))
    provider = make_provider(settings.carbon)
    if not hours:
        return {"rows": 0, "zones": zones, "provider": provider.name}
    result = provider.extract(zones, hours, con, clusters=list(clusters or settings.clusters))
    written = base.land(con, result)
    failures = result.metadata.get("failures", [])
    kept = _kept_hours(con, provider.name, sorted({f["zone"] for f in failures}), hours) if failures else 0
    return {"rows": sum(written.values()), "zones": result.metadata.get("zones", zones), "provider": provider.name,
            "failures": failures,
            "problems": carbon_problems(settings, provider.name, zones, failures, hours, kept)}


def _kept_hours(con: duckdb.DuckDBPyConnection, provider: str, zones: list[str], hours: list[datetime]) -> int:
    """Zone-hours of the failed zones that still have a value landed by an earlier run (a refresh that failed
    keeps it; only hours without one fall back)."""
    return con.execute(
        "select count(*) from raw.carbon_intensity_hours where provider = ? and zone in (select unnest(?)) "
        "and hour_ts >= ? and hour_ts <= ? and carbon_intensity_g_per_kwh is not null",
        [provider, zones, min(hours), max(hours)]).fetchone()[0]


AUTH_KINDS = ("http_401", "http_403")
PROVIDER_LABELS = {"electricitymaps": "Electricity Maps", "wattnet": "Wattnet"}


def carbon_auth_setting(settings: Settings, provider: str) -> str:
    """The key to check when the provider refuses the credentials (Electricity Maps: the token's variable)."""
    if provider != "electricitymaps":
        return "carbon.base_url"
    env = settings.carbon.token_env
    return f"carbon.token_env (${env} is {'set' if os.environ.get(env) else 'not set'})"


def carbon_problems(settings: Settings, provider: str, zones: list[str], failures: list[dict[str, Any]],
                    hours: list[datetime], kept: int = 0) -> list[Problem]:
    """At most one Problem for the run: which zones failed how, what the models use instead, what to do."""
    if not failures:
        return []
    kind = main_kind(f.get("kind", "no_data") for f in failures)
    failed = sorted({f["zone"] for f in failures})
    missing = sum(int(f.get("hours_missing") or 0) for f in failures if f.get("kind") in ("partial", "no_data"))
    first = next((f for f in failures if f.get("kind") == kind), failures[0])
    cause = short_cause(kind, first.get("status"), str(first.get("error") or ""), str(first.get("request") or ""))
    if kind in AUTH_KINDS and first.get("status"):  # the source, the status and the setting to check
        cause = auth_line(PROVIDER_LABELS.get(provider, provider), str(first.get("request") or ""),
                          int(first["status"]), carbon_auth_setting(settings, provider))
    zone_list = f"{', '.join(failed[:6])}{' …' if len(failed) > 6 else ''}"
    if kind in ("partial", "no_data"):
        message = (f"{provider} had no value for {missing} zone-hour(s) of {zone_list}; those hours use the "
                   "built-in annual zone value (zone_default_intensity)")
    else:
        message = (f"{cause if kind in AUTH_KINDS else f'{provider}: {cause}'}; {len(failed)} of {len(zones)} zone(s) ({zone_list}) use the built-in "
                   "annual zone values (zone_default_intensity)")
    if kept:
        message += f", except {kept} zone-hour(s) that keep the value landed by an earlier run"
    names = {"url_key": "carbon.base_url", "timeout_key": "carbon.timeout_s", "budget_key": "carbon.time_budget_s",
             "auth": f"the token in ${settings.carbon.token_env}" if provider == "electricitymaps" else "the URL"}
    days = sorted({h.date() for h in hours})
    rerun = f"kubeledger materialize --date {days[-1]}" if len(days) == 1 else \
        f"kubeledger backfill --start {days[0]} --end {days[-1]}"
    return [Problem("carbon", kind, message, hint_for(kind, names, rerun), failed)]
