"""Embedded (manufacturing) impacts per cloud instance type from the Boavizta API into raw.boavizta_impacts.

Boavizta is AGPL-3.0: it is only ever called over HTTP as a separate service, never imported (SOURCES.md §8).
Without a configured URL the bundled 2.5.0 table (seeds/boavizta_instances.csv) is used instead.
Results are a cache keyed by (provider, instance_type): a type is asked once, unknown types included.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd
import requests
from requests.adapters import HTTPAdapter

from pipelines.settings import BoaviztaSettings, Settings
from pipelines.warehouse.lookups import BOAVIZTA_INSTANCE, required_lookups

from . import base
from .base import ExtractResult, auth_line
from .faults import (
    DEFAULT_BUDGET_S,
    Budget,
    Problem,
    hint_for,
    is_source_wide,
    kind_of_exception,
    kind_of_status,
    main_kind,
    retry_policy,
    short_cause,
)

log = logging.getLogger(__name__)

TABLE = "boavizta_impacts"
BUNDLED_SEED = Path(__file__).resolve().parents[2] / "seeds" / "boavizta_instances.csv"
BUNDLED_VERSION = "2.5.0"
DEFAULT_LIFETIME_H = 52560.0  # Boavizta 2.5.0 hours_life_time (6 y); METHOD.md B6
COLUMNS = ["provider", "instance_type", "status", "embedded_kg_per_hour", "lifetime_hours", "vcpu", "memory_gb",
           "avg_power_w", "warnings", "api_version", "_source"]


def _value(verbose: dict[str, Any], key: str) -> float | None:
    item = verbose.get(key)
    value = item.get("value") if isinstance(item, dict) else item
    return None if value is None else float(value)


def _warnings(node: Any, found: list[str]) -> list[str]:
    """Every `warnings` list anywhere in the answer (fuzzy-match notices sit outside the gwp block), deduped."""
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "warnings" and isinstance(value, list):
                found.extend(str(w) for w in value if str(w) not in found)
            else:
                _warnings(value, found)
    elif isinstance(node, list):
        for item in node:
            _warnings(item, found)
    return found


class WrongShape(ValueError):
    """A 200 answer that is JSON but not a Boavizta instance answer (a proxy, another API)."""


class BoaviztaClient:
    """Minimal HTTP client for a Boavizta API (`url` without the /v1 suffix)."""

    def __init__(self, url: str, *, timeout_s: float = 30.0, verify_tls: bool = True, retries: int = 2,
                 session: requests.Session | None = None, budget_s: float = DEFAULT_BUDGET_S) -> None:
        self.url = url.rstrip("/")
        self.timeout_s = timeout_s
        self.verify_tls = verify_tls
        if session is None:
            session = requests.Session()
            adapter = HTTPAdapter(max_retries=retry_policy(retries, 0.5))
            session.mount("http://", adapter)
            session.mount("https://", adapter)
        self.session = session
        self._version: str | None = None
        self.budget = Budget(budget_s)

    def _get(self, path: str, params: dict[str, str] | None = None) -> requests.Response:
        timeout = self.budget.timeout(self.timeout_s)  # never far past the source's budget
        return self.session.get(f"{self.url}{path}", params=params, headers={"Accept": "application/json"},
                                timeout=(min(10.0, timeout), timeout), verify=self.verify_tls)

    def version(self) -> str:
        if self._version is None:
            resp = self._get("/v1/utils/version")
            resp.raise_for_status()
            self._version = str(resp.json())
        return self._version

    def instance(self, provider: str, instance_type: str) -> dict[str, Any]:
        """One raw.boavizta_impacts row; 404 gives a 'not_found' row so the type is not asked again.

        Raises requests.HTTPError (other statuses) or requests.RequestException (transport).
        """
        params = {"provider": provider, "instance_type": instance_type, "verbose": "true",
                  "criteria": "gwp", "duration": "1"}  # duration=1: the per-hour share of the embedded total
        resp = self._get("/v1/cloud/instance", params)
        row: dict[str, Any] = {c: None for c in COLUMNS} | {
            "provider": provider, "instance_type": instance_type, "api_version": self.version(),
            "_source": "boavizta-api",
        }
        if resp.status_code == 404:
            try:
                detail = resp.json().get("detail")
            except (ValueError, AttributeError):
                detail = resp.text
            return row | {"status": "not_found", "warnings": str(detail or "not found")}
        if resp.status_code != 200:
            raise requests.HTTPError(f"{resp.status_code} {resp.text[:300]}", response=resp)
        body = resp.json()
        if not isinstance(body, dict) or not isinstance(body.get("impacts"), dict):
            raise WrongShape(f"unexpected answer shape: {str(body)[:200]}")
        verbose = body.get("verbose") or {}
        embedded = (((body.get("impacts") or {}).get("gwp") or {}).get("embedded"))
        # the API answers a string ("not implemented") instead of an object when it cannot compute a value
        value = embedded.get("value") if isinstance(embedded, dict) else None
        return row | {
            "status": "ok",
            "embedded_kg_per_hour": None if value is None else float(value),
            "lifetime_hours": _value(verbose, "hours_life_time") or DEFAULT_LIFETIME_H,
            "vcpu": _value(verbose, "vcpu"),
            "memory_gb": _value(verbose, "memory"),
            "avg_power_w": _value(verbose, "avg_power"),
            "warnings": "; ".join(_warnings(body, [])) or None,
        }


def _cached(con: duckdb.DuckDBPyConnection, source: str) -> set[tuple[str, str]]:
    # per source: switching from the bundled table to a live API refreshes the types once
    rows = con.execute("select provider, instance_type from raw.boavizta_impacts where _source = ?",
                       [source]).fetchall()
    return {(p, t) for p, t in rows}


def _bundled_rows(keys: list[tuple[str, str]], path: Path) -> list[dict[str, Any]]:
    table = pd.read_csv(path, dtype={"provider": "string", "instance_type": "string"})
    table = table.drop_duplicates(subset=["provider", "instance_type"], keep="first")
    index = {(p, t): r for p, t, r in zip(table["provider"], table["instance_type"], table.to_dict("records"),
                                          strict=True)}
    rows = []
    for provider, instance_type in keys:
        base: dict[str, Any] = {c: None for c in COLUMNS} | {
            "provider": provider, "instance_type": instance_type, "api_version": BUNDLED_VERSION, "_source": "bundled",
        }
        rec = index.get((provider, instance_type))
        if rec is None:
            rows.append(base | {"status": "not_found", "warnings": f"{instance_type} at {provider} not in the bundled table"})
            continue

        def num(col: str, rec: dict[str, Any] = rec) -> float | None:
            v = rec.get(col)
            return None if v is None or pd.isna(v) else float(v)

        warnings = rec.get("warnings")
        rows.append(base | {
            "status": "ok",
            "embedded_kg_per_hour": num("embedded_kg_per_hour"),
            "lifetime_hours": num("lifetime_hours") or DEFAULT_LIFETIME_H,
            "vcpu": num("vcpu"),
            "memory_gb": num("memory_gb"),
            # the API's avg_power is its default 50 % workload
            "avg_power_w": num("avg_power_w_50"),
            "warnings": None if warnings is None or pd.isna(warnings) or not str(warnings) else str(warnings),
        })
    return rows


def _kind(exc: BaseException) -> str:
    if isinstance(exc, WrongShape | TypeError | KeyError | AttributeError):
        return "wrong_shape"
    response = getattr(exc, "response", None)
    if isinstance(exc, requests.HTTPError) and response is not None:
        return kind_of_status(response.status_code)
    return kind_of_exception(exc)


def extract_boavizta(
    settings: BoaviztaSettings,
    instance_keys: list[tuple[str, str]],
    con: duckdb.DuckDBPyConnection | None = None,
    client: BoaviztaClient | None = None,
    *,
    bundled_path: Path | None = None,
    refresh: bool = False,
) -> ExtractResult:
    """Rows for raw.boavizta_impacts for the (provider, instance_type) pairs not yet cached (all with `refresh`).

    A failing call (not a 404) is listed in metadata["failures"] and written nowhere, so it is retried next run.
    """
    t0 = time.monotonic()
    keys = sorted({(str(p).lower(), str(t)) for p, t in instance_keys if p and t})
    use_api = settings.url is not None or client is not None
    source = "boavizta-api" if use_api else "bundled"
    cached = _cached(con, source) if con is not None and not refresh else set()
    todo = [k for k in keys if k not in cached]
    failures: list[dict[str, Any]] = []
    rows: list[dict[str, Any]] = []
    if todo and use_api:
        client = client or BoaviztaClient(settings.url or "", timeout_s=settings.timeout_s,
                                          verify_tls=settings.verify_tls, budget_s=settings.time_budget_s)
        client.budget = Budget(client.budget.seconds)  # counted from the start of this extract
        tripped: str | None = None
        for provider, instance_type in todo:
            where = {"provider": provider, "instance_type": instance_type,
                     "request": f"{client.url}/v1/cloud/instance"}
            if tripped or client.budget.spent():
                failures.append(where | {"kind": "skipped" if tripped else "budget",
                                         "error": f"not requested: {tripped or 'the time budget was spent'}"})
                continue
            try:
                rows.append(client.instance(provider, instance_type))
            except (requests.RequestException, ValueError, TypeError, KeyError, AttributeError) as exc:
                kind = _kind(exc)
                status = getattr(getattr(exc, "response", None), "status_code", None)
                failures.append(where | {"kind": kind, "status": status,
                                         "error": f"{type(exc).__name__}: {str(exc)[:300]}"})
                log.info("boavizta %s/%s: %s", provider, instance_type, exc)
                if is_source_wide(kind):
                    tripped = f"the Boavizta API failed earlier in this run ({kind})"
    elif todo:
        rows = _bundled_rows(todo, bundled_path or BUNDLED_SEED)

    frame = pd.DataFrame(rows, columns=COLUMNS)
    frame = frame.astype({c: "float64" for c in ("embedded_kg_per_hour", "lifetime_hours", "vcpu", "memory_gb",
                                                  "avg_power_w")})
    partitions = [{"provider": r["provider"], "instance_type": r["instance_type"]} for r in rows]
    metadata = {
        "source": source,
        "requested": len(keys),
        "cached_skipped": len(keys) - len(todo),
        "rows": len(rows),
        "not_found": sorted(f"{r['provider']}/{r['instance_type']}" for r in rows if r["status"] == "not_found"),
        "failures": failures,
        "seconds": round(time.monotonic() - t0, 3),
    }
    return ExtractResult(batches={TABLE: frame}, partitions=partitions, metadata=metadata)


def extract_boavizta_impacts(settings: Settings, con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    """Fetch embodied impacts once per (provider, Boavizta instance key) the window's nodes need (dbt's
    int_nodes_required_lookups); cached in raw.boavizta_impacts."""
    keys = [(p, k) for p, k in required_lookups(con, BOAVIZTA_INSTANCE) if p]
    if not keys:
        return {"rows": 0, "keys": 0}
    result = extract_boavizta(settings.boavizta, keys, con=con)
    written = base.land(con, result)
    failures = result.metadata.get("failures", [])
    return {"rows": sum(written.values()), "keys": len(keys), "failures": failures,
            "problems": boavizta_problems(settings, keys, failures, result.metadata.get("not_found", []))}


def boavizta_problems(settings: Settings, keys: list[tuple[str, str]], failures: list[dict[str, Any]],
                      not_found: list[str]) -> list[Problem]:
    """At most one Problem: the instance types whose call failed, why, and what to do. An instance type Boavizta
    answers 404 for is not a failure (it is not in its catalogue: cached, flagged unknown_instance_type /
    embodied_fallback on its rows, like a zone without hourly data)."""
    if not failures:
        return []
    kind = main_kind(f.get("kind", "connection_error") for f in failures)
    affected = sorted({f"{f['provider']}/{f['instance_type']}" for f in failures})
    first = next((f for f in failures if f.get("kind") == kind), failures[0])
    cause = short_cause(kind, None, str(first["error"]), str(first["request"]))
    if kind in ("http_401", "http_403") and first.get("status"):  # the API takes no credentials: a proxy's answer
        cause = auth_line("the Boavizta API", str(first["request"]), int(first["status"]), "boavizta.url")
        cause = cause[0].upper() + cause[1:]
    else:
        cause = f"Boavizta API: {cause}"
    message = (f"{cause}; {len(affected)} of {len(keys)} instance type(s) "
               f"({', '.join(affected[:6])}{' …' if len(affected) > 6 else ''}) use the bundled embodied profiles "
               "(embodied_fallback)")
    names = {"url_key": "boavizta.url", "timeout_key": "boavizta.timeout_s", "budget_key": "boavizta.time_budget_s",
             "auth": "the URL"}
    return [Problem("boavizta", kind, message, hint_for(kind, names, "kubeledger materialize --date <day>"),
                    affected)]
