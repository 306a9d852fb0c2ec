"""The benchmark's table and the reconciliation check (the same identities the blocking Dagster check enforces)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Any

from bench.runner import StageResult

REL_TOL = 1e-9


@dataclass
class Reconciliation:
    passed: bool
    problems: list[str] = field(default_factory=list)
    cluster_days: int = 0
    node_compute_cost: float = 0.0
    allocated_compute_cost: float = 0.0
    node_kwh: float = 0.0
    allocated_kwh: float = 0.0
    clamped_days: int = 0


def _close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return False
    return abs(a - b) <= REL_TOL * max(abs(b), 1e-9)


def reconcile(warehouse: Path | str, start: date, end: date, allow_clamped: bool = False) -> Reconciliation:
    """Σ workload + idle compute cost = node compute cost in marts.fct_cluster_daily, with no idle_clamped day
    (the bench cluster fits its nodes, so the identity holds unclamped; `allow_clamped` exempts clamped days,
    for the 12-node feature block whose 10:00 burst over-allocates a node on purpose);
    Σ container + idle energy (cpu + memory + gpu kWh) in fct_allocation_daily = node kWh in fct_node_energy_daily.
    [start, end) are usage dates."""
    import duckdb

    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        cost = con.execute(
            """
            select usage_date, cluster, workload_compute_cost + idle_cpu_cost + idle_ram_cost + idle_gpu_cost,
                   node_compute_cost, idle_clamped
            from marts.fct_cluster_daily where usage_date >= ? and usage_date < ? order by 1, 2
            """, [start, end]).fetchall()
        energy = con.execute(
            """
            with alloc as (
                select usage_date, cluster, sum(energy_cpu_kwh + energy_memory_kwh + energy_gpu_kwh) as kwh
                from marts.fct_allocation_daily
                where usage_date >= ? and usage_date < ? and allocation_kind in ('workload', 'idle')
                group by 1, 2
            ), nodes as (
                select usage_date, cluster, sum(energy_kwh) as kwh
                from marts.fct_node_energy_daily where usage_date >= ? and usage_date < ? group by 1, 2
            )
            select nodes.usage_date, nodes.cluster, alloc.kwh, nodes.kwh
            from nodes left join alloc using (usage_date, cluster) order by 1, 2
            """, [start, end, start, end]).fetchall()
    finally:
        con.close()
    r = Reconciliation(passed=True, cluster_days=len(cost))
    if not cost:
        r.problems.append(f"no rows in marts.fct_cluster_daily for {start}..{end}")
    if not energy:
        r.problems.append(f"no rows in marts.fct_node_energy_daily for {start}..{end}")
    for d, c, allocated, asset, clamped in cost:
        r.node_compute_cost += asset or 0.0
        r.allocated_compute_cost += allocated or 0.0
        if clamped:
            r.clamped_days += 1
            if allow_clamped:
                continue
            r.problems.append(f"{d} {c}: idle_clamped (some node-hour allocates more than the node has): "
                              f"workload+idle compute cost {allocated} vs node compute cost {asset}")
            continue
        if not _close(allocated, asset):
            r.problems.append(f"{d} {c}: workload+idle compute cost {allocated} != node compute cost {asset}")
    for d, c, a_kwh, n_kwh in energy:
        r.node_kwh += n_kwh or 0.0
        r.allocated_kwh += a_kwh or 0.0
        if not _close(a_kwh, n_kwh):
            r.problems.append(f"{d} {c}: container+idle energy {a_kwh} kWh != node energy {n_kwh} kWh")
    r.passed = not r.problems
    return r


def _fmt_int(n: int) -> str:
    return f"{n:,}" if n else "-"


RERUN = "dbt transform (re-run)"
DAY_STAGES = ("load", "dbt seed", "lookups", "publish")  # with the transform: a day, load → publish  # bench --rerun: the same day again, reported apart from the first build


def transform_stages(stages: list[StageResult]) -> list[StageResult]:
    """The first build's dbt stages (one transform, or one per layer with --per-layer)."""
    return [s for s in stages if s.name.startswith("dbt ") and s.name not in ("dbt test", "dbt seed", RERUN)]


def format_table(title: str, stages: list[StageResult]) -> str:
    head = f"{'stage':<14}{'rows in':>13}{'rows out':>13}{'wall s':>9}{'work s':>9}{'peak RSS MiB':>14}{'rows/s':>12}"
    lines = [title, head, "-" * len(head)]
    for s in stages:
        rows = s.rows_in or s.rows_out
        rate = f"{rows / s.wall_s:,.0f}" if rows and s.wall_s > 0 else "-"
        lines.append(f"{s.name:<14}{_fmt_int(s.rows_in):>13}{_fmt_int(s.rows_out):>13}{s.wall_s:>9.2f}"
                     f"{s.work_s:>9.2f}{s.peak_rss_mib:>14,.0f}{rate:>12}")
    transform = transform_stages(stages)
    load = next((s for s in stages if s.name == "load" and s.data.get("rows_per_s")), None)
    if load:
        lines.append(f"{'':<14}load: {load.rows_out:,} rows landed in {load.work_s:.2f} s = "
                     f"{load.data['rows_per_s']:,.0f} rows/s (CPU {load.data['cpu_seconds']:.2f} s; load average "
                     f"{load.data['loadavg']:.2f})")
    scan = next((s for s in stages if s.name == "scan pass"), None)
    if scan and transform and scan.work_s > 0:
        model_s = sum(s.work_s for s in transform)
        lines.append(f"{'':<14}transform ÷ scan-pass: {model_s / scan.work_s:.1f}× model time ({model_s:.2f} s vs one "
                     f"scan-and-group of raw.container_hours {scan.work_s:.2f} s), "
                     f"{sum(s.wall_s for s in transform) / scan.wall_s:.1f}× wall (target ≤ 8×)")
    if transform:
        lines.append(f"{'dbt transform':<14}{'':>13}{'':>13}{sum(s.wall_s for s in transform):>9.2f}"
                     f"{sum(s.work_s for s in transform):>9.2f}{max(s.peak_rss_mib for s in transform):>14,.0f}")
    return "\n".join(lines)


def format_queries(stage: StageResult | None) -> str:
    if stage is None:
        return ""
    lines = [f"{'allocation query (engine.query_allocations, serving copy)':<58}{'p50 ms':>10}{'p95 ms':>10}"
             f"{'keys':>7}{'n':>5}"]
    for name, q in (stage.data.get("queries") or {}).items():
        if q.get("timed_out") and not q.get("n"):
            lines.append(f"  {name:<56}{'> ' + format(q['p50'] * 1000, '.0f'):>10}{'(stopped)':>10}{'-':>7}{0:>5}")
            continue
        lines.append(f"  {name:<56}{q['p50'] * 1000:>10.1f}{q['p95'] * 1000:>10.1f}{q['keys']:>7}{q.get('n', 0):>5}")
        if "source" in q:
            same = {True: ", answer identical to the detail rows'", False: ", ANSWER DIFFERS from the detail rows'",
                    None: ""}[q.get("same_as_detail")]
            lines.append(f"    (read {q['source']}{same})")
    lines.append(f"  (over {stage.rows_in:,} rows of marts.fct_allocation_daily; query process peak RSS "
                 f"{stage.peak_rss_mib:,.0f} MiB)")
    return "\n".join(lines)


def format_models(stages: list[StageResult], top: int = 8) -> str:
    models: list[tuple[float, str, str]] = []
    for s in stages:
        for m, secs in (s.data.get("models") or {}).items():
            models.append((secs, s.name, m))
    if not models:
        return ""
    models.sort(reverse=True)
    lines = ["slowest models (dbt run_results.json execution_time):"]
    for secs, layer, m in models[:top]:
        lines.append(f"  {secs:>8.2f} s  {layer:<16} {m}")
    return "\n".join(lines)


def format_reconciliation(label: str, r: Reconciliation) -> str:
    status = "PASS" if r.passed else "FAIL"
    text = (f"reconciliation {label}: {status} ({r.cluster_days} cluster-day(s); compute cost allocated "
            f"{r.allocated_compute_cost:.6f} vs node {r.node_compute_cost:.6f} USD"
            f"{f', {r.clamped_days} clamped' if r.clamped_days else ''}; energy allocated {r.allocated_kwh:.6f} vs "
            f"node {r.node_kwh:.6f} kWh)")
    if r.problems:
        text += "\n  " + "\n  ".join(r.problems[:20])
    return text


def summary_row(scale: str, stages: list[StageResult], queries: StageResult | None, rec: Reconciliation | None
                ) -> dict[str, Any]:
    by = {s.name: s for s in stages}
    transform = transform_stages(stages)
    # the day as a user's run does it: land, seeds, lookups, transform, publish (DAY_STAGES); a stage not run
    # (e.g. --per-layer without publish) leaves the day unmeasured (None)
    day = [by.get(name) for name in DAY_STAGES]
    scan = by.get("scan pass")
    model_s = sum(s.work_s for s in transform)
    return {
        "scale": scale,
        "raw_rows": by["load"].rows_out if "load" in by else 0,
        "transform_s": sum(s.wall_s for s in transform),
        "transform_peak_rss_mib": max((s.peak_rss_mib for s in transform), default=0.0),
        "model_s": model_s,
        "day_s": sum(s.wall_s for s in day) + sum(s.wall_s for s in transform) if all(day) and transform else None,
        "day_peak_rss_mib": max([s.peak_rss_mib for s in [*day, *transform] if s is not None], default=0.0),
        "scan_ratio": model_s / scan.work_s if scan and transform and scan.work_s > 0 else None,
        "landing_rows_per_s": by["load"].data.get("rows_per_s") if "load" in by else None,
        "queries": (queries.data.get("queries") if queries else {}) or {},
        "reconciliation": None if rec is None else rec.passed,
    }


def history_ratios(day1: list[StageResult], later: list[StageResult]) -> dict[str, Any]:
    """Day N ÷ day 1 for load (wall and landing seconds) and the transform (wall and dbt model time)."""
    one = {s.name: s for s in day1}
    n = next(s for s in later if s.name.endswith(" load"))
    day = int(n.name.split()[1])
    last = {s.name.split(" ", 2)[2]: s for s in later if s.name.startswith(f"day {day} ")}

    def ratio(a: float, b: float) -> float:
        return a / b if b else float("nan")

    return {"day": day,
            "load_wall": ratio(last["load"].wall_s, one["load"].wall_s),
            "load_work": ratio(last["load"].work_s, one["load"].work_s),
            "lookups_wall": ratio(last["lookups"].wall_s, one["lookups"].wall_s),
            "transform_wall": ratio(last["dbt transform"].wall_s, one["dbt transform"].wall_s),
            "transform_models": ratio(last["dbt transform"].work_s, one["dbt transform"].work_s)}


def format_history(day1: list[StageResult], later: list[StageResult], top: int = 8) -> str:
    if not later:
        return ""
    h = history_ratios(day1, later)
    one = {s.name: s for s in day1}
    last = {s.name.split(" ", 2)[2]: s for s in later if s.name.startswith(f"day {h['day']} ")}
    fill = next((s for s in later if s.name == "history fill"), None)
    head = f"{'day ' + str(h['day']) + ' vs day 1':<22}{'day 1 s':>10}{'day N s':>10}{'N ÷ 1':>8}"
    lines = [f"history: day {h['day']} built over {h['day'] - 1} days of raw, recommendation history and marts"
             + (f" ({fill.rows_out:,} rows copied by SQL in {fill.wall_s:.1f} s)" if fill else ""),
             head, "-" * len(head)]
    for label, name, attr in (("load wall", "load", "wall_s"), ("load landing", "load", "work_s"),
                              ("lookups wall", "lookups", "wall_s"), ("transform wall", "dbt transform", "wall_s"),
                              ("transform model time", "dbt transform", "work_s")):
        a, b = getattr(one[name], attr), getattr(last[name], attr)
        lines.append(f"{label:<22}{a:>10.2f}{b:>10.2f}{(b / a if a else float('nan')):>7.2f}×")
    lines.append(f"{'':<22}target ≤ 1.2× (load average at day {h['day']}'s load "
                 f"{last['load'].data.get('loadavg', float('nan')):.2f})")
    m1 = one["dbt transform"].data.get("models") or {}
    mn = last["dbt transform"].data.get("models") or {}
    lines.append(f"slowest models on day {h['day']} (day 1 s, day N s, N ÷ 1):")
    for m in sorted(mn, key=lambda k: -mn[k])[:top]:
        lines.append(f"  {m:<44}{m1.get(m, 0.0):>8.2f}{mn[m]:>8.2f}"
                     f"{(mn[m] / m1[m] if m1.get(m) else float('nan')):>7.2f}×")
    grown = sorted((m for m in mn if m1.get(m, 0) >= 0.05), key=lambda k: -(mn[k] - m1[k]))[:top]
    lines.append("models that grew most (seconds added):")
    for m in grown:
        lines.append(f"  {m:<44}{m1[m]:>8.2f}{mn[m]:>8.2f}{mn[m] / m1[m]:>7.2f}×  (+{mn[m] - m1[m]:.2f} s)")
    return "\n".join(lines)
