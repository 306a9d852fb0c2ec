"""`kubeledger recommend`: what to change and what it is worth ($, kWh, gCO2e per month), from the serving copy.

The rows are marts.fct_recommendation_daily's, read through serving/query/recommendations.py (the
query the API answers with). The look-back window is the configured one (`recommendations.window_days`): the
models run once in the daily build, so `--window` only confirms it (another length exits 2 saying what to change).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import re
import sys
from datetime import date, timedelta
from typing import Any

from pipelines.serving.cli import error_exit
from pipelines.serving.query.errors import QueryError
from pipelines.serving.query.recommendations import (
    KINDS,
    Selection,
    load_recommendations,
    recommendation_row,
    recommendation_totals,
)
from pipelines.serving.query.snapshots import ServingUnavailable, read_once
from pipelines.settings import Settings

CSV_FIELDS = ("date", "cluster", "kind", "target", "action", "savingUsdPerMonth", "savingKwhPerMonth",
              "savingCo2eGPerMonth", "confidence", "daysOfData", "hoursCovered", "isEstimated", "estimationReasons",
              "id", "cpuLatest", "cpuRecommended", "memoryLatest", "memoryRecommended", "savingClass", "stage",
              "supersededBy", "dependsOn", "countedUsdPerMonth", "countedKwhPerMonth", "countedCo2eGPerMonth",
              "riskFixUsdPerMonth", "riskFixKwhPerMonth", "riskFixCo2eGPerMonth")


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Register `recommend` on the `kubeledger` subparsers (pipelines/cli.py)."""
    p = sub.add_parser("recommend", help="recommendations with $, kWh and CO2e per month (rightsizing, abandoned "
                                         "workloads, idle namespaces, idle node pools, unclaimed volumes, "
                                         "carbon-aware shifting)")
    p.add_argument("--window", default=None, metavar="Nd",
                   help="look-back window; must equal recommendations.window_days (default: the configured one)")
    p.add_argument("--date", type=date.fromisoformat, default=None,
                   help="day whose recommendations to show, YYYY-MM-DD (default: each cluster's latest day)")
    p.add_argument("--kind", default="", help="comma list of kinds: " + ", ".join(KINDS))
    p.add_argument("--filter", default="", help='v2 filter on cluster, namespace, controllerKind, controllerName, '
                                                'container, e.g. namespace:"payments"')
    p.add_argument("--sort", choices=("usd", "co2e", "kwh"), default="usd", help="order by this saving (default usd)")
    p.add_argument("--limit", type=int, default=None, help="at most this many rows")
    p.add_argument("--format", choices=("table", "json", "csv"), default="table",
                   help="table (aligned text, default), json (one object per recommendation) or csv")
    return p


def _window_days(text: str | None, settings: Settings) -> None:
    configured = settings.recommendations.window_days
    if text is None:
        return
    m = re.fullmatch(r"\s*(\d{1,4})\s*([dw])\s*", text)
    days = (int(m.group(1)) * (7 if m.group(2) == "w" else 1)) if m else None
    if days != configured:
        raise QueryError("--window", text, "", message=(
            f"--window {text}: the recommendations are built with a {configured}-day look-back "
            f"(recommendations.window_days in kubeledger.yaml); set it to {days or 'N'} and rebuild "
            "(kubeledger rebuild) to change it, or leave --window out"))


def _selection(args: argparse.Namespace) -> Selection:
    kinds = tuple(k.strip() for k in args.kind.split(",") if k.strip()) or KINDS
    sort = {"usd": "saving_usd_per_month", "co2e": "saving_co2e_g_per_month", "kwh": "saving_kwh_per_month"}
    window = None
    if args.date is not None:
        end = args.date + timedelta(days=1)
        window = f"{args.date.isoformat()}T00:00:00Z,{end.isoformat()}T00:00:00Z"
    return Selection(window=window, filter=args.filter or None, kinds=kinds, sort_column=sort[args.sort],
                     limit=args.limit)


def render_table(rows: list[dict[str, Any]], raw: list[dict[str, Any]]) -> str:
    """The rows (each with what it adds to the total: "in <id>" when another recommendation makes it moot) and the
    total counted once, risk fixes apart (recommendation_totals, as the API and the report)."""
    if not rows:
        return "(no recommendations)\n"
    head = (f"{'kind':<22} {'target':<48} {'class':<8} {'$/month':>10} {'kWh/month':>10} {'kgCO2e/mo':>10} "
            f"{'conf':<6} action")
    lines = [head]
    for r in rows:
        if r["supersededBy"]:
            figures = f"{'in ' + r['supersededBy']:>32}"
        else:
            counted = r["countedUsdPerMonth"] if r["countedUsdPerMonth"] is not None else r["savingUsdPerMonth"]
            figures = (f"{counted or 0:>10.2f} {r['countedKwhPerMonth'] or 0:>10.3f} "
                       f"{(r['countedCo2eGPerMonth'] or 0) / 1000:>10.3f}")
        lines.append(f"{r['kind']:<22} {r['target'][:48]:<48} {r['savingClass'] or '':<8} {figures} "
                     f"{r['confidence']:<6} {r['action']}")
    t = recommendation_totals(raw)
    lines.append(f"{len(rows)} recommendation(s); counted once (retire, rightsize, re-pack, shift): "
                 f"${t['countedUsdPerMonth']:.2f}, {t['countedKwhPerMonth']:.3f} kWh and "
                 f"{t['countedCo2eGPerMonth'] / 1000:.3f} kgCO2e saved per month")
    if t["riskFixes"]:
        lines.append(f"risk fixes (requests to raise against throttling or OOM kills): {t['riskFixes']} row(s), "
                     f"+${t['riskFixUsdPerMonth']:.2f} per month, shown apart and not subtracted")
    return "\n".join(lines) + "\n"


def render_csv(rows: list[dict[str, Any]]) -> str:
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=CSV_FIELDS, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return out.getvalue()


def run_recommend(args: argparse.Namespace, settings: Settings) -> int:
    """Print the recommendations; 0 ok, 2 bad input, 1 no serving copy."""
    try:
        _window_days(args.window, settings)
        sel = _selection(args)
        sel.validate()
        raw, notes = read_once(settings.serving_path, lambda con: load_recommendations(con, sel))
    except (QueryError, ServingUnavailable) as exc:
        return error_exit(exc)
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    rows = [recommendation_row(r) for r in raw]
    if args.format == "json":
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
    elif args.format == "csv":
        sys.stdout.write(render_csv(rows))
    else:
        sys.stdout.write(render_table(rows, raw))
    return 0
