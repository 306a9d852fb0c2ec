"""The benchmark's stages. Each runs in a child process (`python -m bench.stages STAGE PARAMS_JSON RESULT_JSON`)
so the parent can read its wall time and peak RSS apart from every other stage; each writes a small JSON result
(rows in/out and stage-specific numbers) to RESULT_JSON."""

from __future__ import annotations

import json
import math
import os
import statistics
import sys
import threading
import time
from datetime import date, datetime, timedelta
from pathlib import Path
from typing import Any

from bench.params import day_hours, dbt_args, paths, settings_for, window

MART_TABLES = ("fct_allocation_daily", "fct_allocation_shared_daily", "fct_asset_daily", "fct_cluster_daily",
               "fct_node_energy_daily")
RAW_METRIC_TABLES = ("container_hours", "pod_hours", "node_hours", "namespace_hours", "volume_hours",
                     "pod_volume_hours", "volume_stats_hours", "service_hours", "gpu_hours",
                     "metric_coverage_hours")


# --- stages ----------------------------------------------------------------------------------------------


def stage_generate(p: dict[str, Any]) -> dict[str, Any]:
    """The demo generator alone, hour by hour (nothing kept)."""
    from pipelines.sources.demo import iter_demo_hours

    settings = settings_for(p)
    rows = 0
    for result in iter_demo_hours(settings.clusters[0], day_hours(p)):
        rows += sum(len(f) for f in result.batches.values())
    return {"rows_in": 0, "rows_out": rows}


def stage_load(p: dict[str, Any]) -> dict[str, Any]:
    """Generate again and land as the metrics step does (chunks of LAND_CHUNK_HOURS hours, one replace_partitions
    each), plus pricing. `seconds` is the landing time alone, closing checkpoint included (generation is timed
    by the generate stage); `cpu_seconds` the process CPU time of the same span (all threads)."""
    from pipelines.sources import base
    from pipelines.sources.demo import extract_demo_hours
    from pipelines.sources.metrics import LAND_CHUNK_HOURS
    from pipelines.sources.pricing import load_pricing
    from pipelines.timeutil import chunks
    from pipelines.warehouse.connection import open_warehouse

    settings = settings_for(p)
    con = open_warehouse(settings)
    land_s = cpu_s = 0.0
    rows = 0
    for hours in chunks(day_hours(p), int(p.get("land_chunk_hours") or LAND_CHUNK_HOURS)):
        result = extract_demo_hours(settings.clusters[0], hours)
        t, c = time.perf_counter(), time.process_time()
        rows += sum(base.land(con, result).values())
        land_s += time.perf_counter() - t
        cpu_s += time.process_time() - c
        del result
    t, c = time.perf_counter(), time.process_time()
    load_pricing(settings, con)
    con.close()  # the checkpoint that writes the WAL's rows into the file is part of landing
    land_s += time.perf_counter() - t
    cpu_s += time.process_time() - c
    return {"rows_in": rows, "rows_out": rows, "seconds": land_s, "cpu_seconds": cpu_s,
            "rows_per_s": rows / land_s if land_s else 0.0, "loadavg": os.getloadavg()[0]}


def stage_lookups(p: dict[str, Any]) -> dict[str, Any]:
    """What the daily Dagster run does between its two dbt steps: dbt builds the lookups (the carbon zones and
    instance keys the nodes need), then the carbon-intensity and Boavizta extracts land what they name."""
    import subprocess

    from pipelines import dbt_executable
    from pipelines.dagster_defs.dbt_args import dbt_env
    from pipelines.sources.boavizta import extract_boavizta_impacts
    from pipelines.sources.carbon.extract import extract_carbon
    from pipelines.warehouse.connection import open_warehouse
    from pipelines.warehouse.lookups import LOOKUPS_MODEL

    settings = settings_for(p)
    t = time.perf_counter()
    # a separate dbt process: an in-process dbt keeps its own connection to the file open
    res = subprocess.run([dbt_executable(), *dbt_args(p, ["run", "--select", f"+{LOOKUPS_MODEL}", "--exclude",
                                                          "resource_type:seed"])],
                         env={**os.environ, **dbt_env(settings)}, check=False)
    if res.returncode != 0:
        raise SystemExit(f"dbt lookups failed (exit {res.returncode}): see {paths(p)['logs']}")
    con = open_warehouse(settings)
    rows = extract_carbon(settings, con, day_hours(p))["rows"]
    rows += extract_boavizta_impacts(settings, con)["rows"]
    con.close()
    return {"rows_in": 0, "rows_out": rows, "seconds": time.perf_counter() - t}


def _count(con, tables: list[str], where: str = "", params: list[Any] | None = None) -> int:
    total = 0
    for t in tables:
        total += con.execute(f"select count(*) from {t} {where}", params or []).fetchone()[0]  # noqa: S608
    return total


def _tables(con, schema: str, kind: str = "BASE TABLE") -> list[str]:
    return [f"{schema}.{r[0]}" for r in con.execute(
        "select table_name from information_schema.tables where table_schema = ? and table_type = ? order by 1",
        [schema, kind]).fetchall()]


def layer_rows(p: dict[str, Any], layer: str) -> tuple[int, int]:
    """(rows the layer reads, rows it writes) for the build window."""
    import duckdb

    con = duckdb.connect(str(paths(p)["warehouse"]), read_only=True)
    try:
        start, end = window(p)
        raw = _count(con, [f"raw.{t}" for t in RAW_METRIC_TABLES], "where hour_ts >= ? and hour_ts < ?",
                     [start, end])
        if layer == "seed":
            return 0, _count(con, _tables(con, "seeds"))
        if layer == "staging":
            return raw, raw  # views: rows visible through them equal the raw rows in the window
        if layer == "transform":
            return raw, _count(con, [f"marts.{t}" for t in MART_TABLES], "where usage_date >= ? and usage_date < ?",
                               [start.date(), end.date() if end.time() == datetime.min.time()
                                else end.date() + timedelta(1)])
        inter = _count(con, _tables(con, "intermediate"))
        if layer == "intermediate":
            return raw, inter
        marts = _count(con, [f"marts.{t}" for t in MART_TABLES], "where usage_date >= ? and usage_date < ?",
                       [start.date(), end.date() if end.time() == datetime.min.time() else end.date() + timedelta(1)])
        return inter, marts
    finally:
        con.close()


def stage_dbt(p: dict[str, Any]) -> dict[str, Any]:
    """One dbt layer: seed, staging, intermediate, marts (dbt run --select <layer>) or test."""
    from dbt.cli.main import dbtRunner

    from pipelines.dagster_defs.dbt_args import dbt_env

    os.environ.update(dbt_env(settings_for(p)))
    layer = p["layer"]
    if layer == "seed":
        command = ["seed"]
    elif layer == "test":
        command = ["test"]
    elif layer == "transform":
        # what the daily Dagster run does: one dbt process over all layers
        command = ["run", "--select", "staging", "intermediate", "marts"]
    else:
        command = ["run", "--select", layer]
    res = dbtRunner().invoke(dbt_args(p, command))
    models = {}
    rr = paths(p)["target"] / "run_results.json"
    if rr.exists():
        for r in json.loads(rr.read_text()).get("results", []):
            models[r["unique_id"].split(".")[-1]] = round(float(r.get("execution_time") or 0), 3)
    if not res.success:
        raise SystemExit(f"dbt {' '.join(command)} failed: {res.exception or 'see ' + str(paths(p)['logs'])}")
    # rows are counted by the parent: dbt keeps its own connection to the file open in this process
    return {"models": models}


def stage_scanpass(p: dict[str, Any]) -> dict[str, Any]:
    """The floor the transform is measured against: ONE DuckDB scan-and-group pass over the same raw
    container-hours (per container and day, every measure the allocation reads), with the transform's memory limit
    and threads. The outer sums keep every aggregate alive (the optimizer would drop unread ones)."""
    import duckdb

    start, end = window(p)
    con = duckdb.connect(str(paths(p)["warehouse"]), read_only=True,
                         config={"memory_limit": p.get("memory_limit", "4GB"), "threads": str(p.get("threads", 2))})
    try:
        t = time.perf_counter()
        groups, rows, _, _ = con.execute(
            """
            select count(*), sum(n), sum(run_min + coalesce(cpu_s, 0) + coalesce(cpu_max, 0) + coalesce(cpu_req, 0)
                                         + coalesce(ram_use, 0) + coalesce(ram_req, 0)), count(node)
            from (
                select cluster, namespace, pod, pod_uid, container, date_trunc('day', hour_ts) as usage_date,
                       count(*) as n, sum(running_minutes) as run_min,
                       sum(cpu_usage_core_seconds) as cpu_s, max(cpu_usage_max_cores) as cpu_max,
                       sum(cpu_request_cores * running_minutes) as cpu_req,
                       sum(ram_usage_avg_bytes * running_minutes) as ram_use,
                       sum(ram_request_bytes * running_minutes) as ram_req, any_value(node) as node
                from raw.container_hours where hour_ts >= ? and hour_ts < ?
                group by all
            )
            """, [start, end]).fetchone()
        seconds = time.perf_counter() - t
    finally:
        con.close()
    return {"rows_in": int(rows or 0), "rows_out": int(groups or 0), "seconds": seconds}


def stage_replicate(p: dict[str, Any]) -> dict[str, Any]:
    """Copy the built day to the next days-1 days in every mart, shifting each DATE/TIMESTAMP column by k days."""
    import duckdb

    day = date.fromisoformat(p["day"])
    n_days = int(p["days"])
    con = duckdb.connect(str(paths(p)["warehouse"]),
                         config={"memory_limit": p.get("memory_limit", "4GB"), "threads": str(p.get("threads", 2))})
    rows = 0
    try:
        con.execute("begin transaction")
        for table in MART_TABLES:
            cols = con.execute(
                "select column_name, data_type from information_schema.columns "
                "where table_schema = 'marts' and table_name = ? order by ordinal_position", [table]).fetchall()
            shifted = [f"t.{c} + to_days(r.k::integer) as {c}" for c, typ in cols
                       if typ == "DATE" or typ.startswith("TIMESTAMP")]
            replace = f" replace ({', '.join(shifted)})" if shifted else ""
            con.execute(f"delete from marts.{table} where usage_date > ?", [day])  # noqa: S608
            con.execute(
                f"insert into marts.{table} select t.*{replace} from marts.{table} t, "  # noqa: S608
                f"range(1, {n_days}) r(k) where t.usage_date = ?", [day])
            rows += con.execute(f"select count(*) from marts.{table}").fetchone()[0]  # noqa: S608
        con.execute("commit")
    finally:
        con.close()
    return {"rows_in": rows // max(n_days, 1), "rows_out": rows}


HISTORY_TABLES = ("intermediate.int_node_hours_recorded", "intermediate.int_workload_hours_recorded",
                  "intermediate.int_volume_hours_recorded") + tuple(f"marts.{t}" for t in MART_TABLES) + (
                  "marts.fct_recommendation_daily",)


def stage_history(p: dict[str, Any]) -> dict[str, Any]:
    """History for the day-N build, cheaply: the built day copied to days 2..N-1 (`history` = N) in every table a
    later daily build finds from earlier days -- each raw table with an hour_ts (metrics, carbon, objects), the
    recommendations' hourly history (incremental, read over their look-back window) and the marts (incremental,
    delete+insert by day) -- with every DATE/TIMESTAMP column shifted by k days. Day N itself is then generated,
    loaded and transformed by the same stages as day 1."""
    import duckdb

    day = date.fromisoformat(p["day"])
    n_days = int(p["history"])
    con = duckdb.connect(str(paths(p)["warehouse"]),
                         config={"memory_limit": p.get("memory_limit", "4GB"), "threads": str(p.get("threads", 2))})
    start = datetime(day.year, day.month, day.day)
    raw = [r[0] for r in con.execute(
        "select table_schema || '.' || table_name from information_schema.columns "
        "where table_schema = 'raw' and column_name = 'hour_ts' order by 1").fetchall()]
    rows = 0
    try:
        # one statement per table, each its own transaction: 28 days of a 1,000-node day at once would hold GiBs
        for table in (*raw, *HISTORY_TABLES):
            schema, name = table.split(".")
            cols = con.execute(
                "select column_name, data_type from information_schema.columns "
                "where table_schema = ? and table_name = ? order by ordinal_position", [schema, name]).fetchall()
            names = [c for c, _ in cols]
            shifted = [f"t.{c} + to_days(r.k::integer) as {c}" for c, typ in cols
                       if typ == "DATE" or typ.startswith("TIMESTAMP")]
            replace = f" replace ({', '.join(shifted)})" if shifted else ""
            if "usage_date" in names:
                where, args = "t.usage_date = ?", [day]
            else:
                where, args = "t.hour_ts >= ? and t.hour_ts < ?", [start, start + timedelta(days=1)]
            before = con.execute(f"select count(*) from {table}").fetchone()[0]  # noqa: S608
            con.execute(f"delete from {table} t where not ({where})", args)  # noqa: S608 - a clean re-run
            con.execute(
                f"insert into {table} select t.*{replace} from {table} t, "  # noqa: S608
                f"range(1, {n_days - 1}) r(k) where {where}", args)
            rows += con.execute(f"select count(*) from {table}").fetchone()[0] - before  # noqa: S608
        con.execute("checkpoint")
    finally:
        con.close()
    return {"rows_in": 0, "rows_out": rows}


def stage_publish(p: dict[str, Any]) -> dict[str, Any]:
    from pipelines.warehouse.publish import export_parquet, publish_serving_copy

    pt = paths(p)
    day = date.fromisoformat(p["day"])
    days = [day + timedelta(days=i) for i in range(int(p.get("days", 1)))]
    published = publish_serving_copy(pt["warehouse"], pt["serving"])
    files = export_parquet(pt["warehouse"], pt["parquet"], days)
    rows = sum(published.tables.values())
    return {"rows_in": rows, "rows_out": rows, "parquet_files": sum(files.values()), "bytes": published.bytes}


def stage_query(p: dict[str, Any]) -> dict[str, Any]:
    """n queries each: aggregate=namespace and aggregate=label:app shareIdle=true over the whole span (an explicit
    RFC3339 pair), on the serving copy."""
    import duckdb

    from pipelines.serving.query.allocation import AllocationQuery, _on_rollup, query_allocations

    day = date.fromisoformat(p["day"])
    n = int(p.get("queries", 20))
    days = int(p.get("days", 1))
    start = datetime(day.year, day.month, day.day)
    # the span as an explicit pair, asked half a day after it ends: the engine answers complete days only (today
    # never is), so asking from inside the span answered nothing (keys 0)
    win = f"{start:%Y-%m-%dT%H:%M:%SZ},{start + timedelta(days=days):%Y-%m-%dT%H:%M:%SZ}"
    label = f"{days}d"
    now = start + timedelta(days=days, hours=12)
    shapes = {
        f"window={label}&aggregate=namespace": dict(aggregate="namespace"),
        f"window={label}&aggregate=label:app&shareIdle=true": dict(aggregate="label:app", share_idle=True),
    }
    con = duckdb.connect(str(paths(p)["serving"]), read_only=True,
                         config={"threads": str(p.get("threads", 2))})
    out: dict[str, Any] = {}
    rows_scanned = con.execute("select count(*) from marts.fct_allocation_daily").fetchone()[0]
    try:
        for name, kw in shapes.items():
            lat = []
            sets = None
            budget = float(p.get("query_budget_s", 120))
            timed_out = False
            for _ in range(n):
                # a pathological shape is interrupted once the shape's budget is spent; the count is reported
                timer = threading.Timer(max(budget - sum(lat), 0.1), con.interrupt)
                timer.start()
                t = time.perf_counter()
                try:
                    sets = query_allocations(con, AllocationQuery(window=win, now=now, **kw))
                except duckdb.InterruptException:
                    timed_out = True
                finally:
                    timer.cancel()
                lat.append(time.perf_counter() - t)
                if timed_out or sum(lat) > budget:
                    break
            if timed_out and len(lat) > 1:
                lat.pop()  # the interrupted query is not a latency sample
            lat.sort()
            out[name] = {"p50": statistics.median(lat), "p95": lat[max(0, math.ceil(0.95 * len(lat)) - 1)],
                         "keys": len(sets[0]) if sets else 0, "n": len(lat) - int(timed_out and len(lat) == 1),
                         "timed_out": timed_out}
            q = AllocationQuery(window=win, now=now, **kw)
            chosen = _on_rollup(con, q)
            out[name]["source"] = chosen[0] if chosen else "marts.fct_allocation_daily"
            if chosen and sets is not None and not timed_out:
                # the rollup's answer must be the detail table's (floats to 1e-9); the time of this one is not measured
                out[name]["same_as_detail"] = same_answer(sets, query_allocations(con, q, rollup=False))
    finally:
        con.close()
    return {"rows_in": rows_scanned, "rows_out": 0, "queries": out}


def same_answer(a: Any, b: Any, tol: float = 1e-9) -> bool:
    """Equal JSON-like answers: same keys, floats within `tol` (relative or absolute). Key order is not compared:
    keys are ordered by total cost, and keys whose costs tie exactly can swap with the summation order (threads)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return set(a) == set(b) and all(same_answer(a[k], b[k], tol) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same_answer(x, y, tol) for x, y in zip(a, b, strict=True))
    if isinstance(a, float) and isinstance(b, float):
        return math.isclose(a, b, rel_tol=tol, abs_tol=tol)
    return a == b


def stage_prometheus(p: dict[str, Any]) -> dict[str, Any]:
    """extract_prometheus_hours for the day's hours from a Prometheus serving the scale TSDB (not landed)."""
    from pipelines.sources.prometheus import extract_prometheus_hours

    settings = settings_for(p)
    hours = day_hours(p)
    t = time.perf_counter()
    res = extract_prometheus_hours(settings.clusters[0], hours)
    el = time.perf_counter() - t
    m = res.metadata
    rows = sum(len(f) for f in res.batches.values())
    return {"rows_in": 0, "rows_out": rows, "seconds_extract": el, "hours": len(hours),
            "queries": m.get("queries"), "queries_per_hour": m.get("queries_per_hour"),
            "size_splits": m.get("size_splits"), "seconds_per_hour": el / max(len(hours), 1),
            "table_rows": {t: len(f) for t, f in res.batches.items()}}


STAGES = {"generate": stage_generate, "load": stage_load, "lookups": stage_lookups, "dbt": stage_dbt,
          "scanpass": stage_scanpass, "replicate": stage_replicate, "history": stage_history,
          "publish": stage_publish, "query": stage_query, "prometheus": stage_prometheus}


def main(argv: list[str]) -> int:
    stage, params_json, result_path = argv
    if stage == "spark":  # the Spark engine's stage (bench --engine spark) lives apart, with its own imports
        from bench.spark import stage_spark

        STAGES["spark"] = stage_spark
    params = json.loads(params_json)
    t = time.perf_counter()
    result = STAGES[stage](params)
    result.setdefault("seconds", time.perf_counter() - t)
    Path(result_path).write_text(json.dumps(result, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
