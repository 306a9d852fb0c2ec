"""`kubeledger recommend`: what to change and what it is worth ($, kWh, gCO2e per month), from the serving copy.

The rows are marts.fct_recommendation_daily's, read through serving/query/recommendations.py (the
query the API answers with). The look-back window is the configured one (`recommendations.window_days`): the
models run once in the daily build, so `--window` only confirms it (another length exits 2 saying what to change).

`--dismiss ID --reason TEXT`, `--applied ID [--on DATE]` and `--undismiss ID` record a decision in the working
warehouse's ledger (pipelines/warehouse/recommendation_actions.py); the next build of a day reads it: a dismissed
recommendation counts nothing and is listed only with `--all`, an applied one shows its realised saving beside the
estimate (marts.fct_recommendation_outcome_daily).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import re
import sys
from datetime import UTC, date, datetime, timedelta
from typing import Any

from pipelines.serving.cli import error_exit
from pipelines.serving.query.errors import QueryError
from pipelines.serving.query.recommendations import (
    KINDS,
    Selection,
    load_outcomes,
    load_recommendations,
    recommendation_row,
    recommendation_totals,
)
from pipelines.serving.query.snapshots import ServingUnavailable, read_once
from pipelines.settings import Settings
from pipelines.warehouse.recommendation_actions import Action, ActionError, record_action

CSV_FIELDS = ("date", "cluster", "kind", "target", "action", "savingUsdPerMonth", "savingKwhPerMonth",
              "savingCo2eGPerMonth", "confidence", "daysOfData", "hoursCovered", "isEstimated", "estimationReasons",
              "id", "cpuLatest", "cpuRecommended", "memoryLatest", "memoryRecommended", "savingClass", "stage",
              "supersededBy", "dependsOn", "countedUsdPerMonth", "countedKwhPerMonth", "countedCo2eGPerMonth",
              "riskFixUsdPerMonth", "riskFixKwhPerMonth", "riskFixCo2eGPerMonth", "status", "statusReason",
              "appliedDate")


def add_parser(sub: Any) -> argparse.ArgumentParser:
    """Register `recommend` on the `kubeledger` subparsers (pipelines/cli.py)."""
    p = sub.add_parser("recommend", help="recommendations with $, kWh and CO2e per month (rightsizing, abandoned "
                                         "workloads, idle namespaces, idle node pools, unclaimed and oversized "
                                         "volumes, carbon-aware shifting)")
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
    p.add_argument("--all", action="store_true", help="also list the dismissed recommendations (hidden by default)")
    act = p.add_argument_group("decisions (kept in the working warehouse; shown after the next build of a day)")
    act.add_argument("--dismiss", metavar="ID", help="dismiss this recommendation (needs --reason): it counts nothing")
    act.add_argument("--reason", metavar="TEXT", help="why the dismissed recommendation does not apply")
    act.add_argument("--undismiss", metavar="ID", help="remove the dismissal of this recommendation")
    act.add_argument("--applied", metavar="ID", help="this recommendation was applied: track its realised saving")
    act.add_argument("--on", type=date.fromisoformat, default=None, metavar="DATE",
                     help="the UTC day --applied went live, YYYY-MM-DD (default: today)")
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
    lines.append(f"{len(rows)} recommendation(s); counted once (retire, rightsize, re-pack, shift, spot): "
                 f"${t['countedUsdPerMonth']:.2f}, {t['countedKwhPerMonth']:.3f} kWh and "
                 f"{t['countedCo2eGPerMonth'] / 1000:.3f} kgCO2e saved per month")
    if t["riskFixes"]:
        lines.append(f"risk fixes (requests to raise against throttling or OOM kills): {t['riskFixes']} row(s), "
                     f"+${t['riskFixUsdPerMonth']:.2f} per month, shown apart and not subtracted")
    return "\n".join(lines) + "\n"


def render_decisions(dismissed: list[dict[str, Any]], outcomes: list[dict[str, Any]], shown: bool) -> str:
    """The dismissed recommendations (listed with --all, else counted) and the applied ones, realised vs estimated."""
    lines: list[str] = []
    if dismissed and shown:
        lines.append(f"dismissed ({len(dismissed)}, counted in no total):")
        lines += [f"  {r['id']}  reason: {r['statusReason'] or ''}" for r in dismissed]
    elif dismissed:
        lines.append(f"{len(dismissed)} dismissed recommendation(s) not listed (--all lists them)")
    applied = [o for o in outcomes if o["status"] == "applied"]
    if applied:
        lines.append("applied (per month: realised since the applied day vs the estimate it was applied on):")
    for o in applied:
        if o["realisedUsdPerMonth"] is None:
            realised = "realised: not measured yet (needs a built day after it)"
        else:
            realised = (f"realised ${o['realisedUsdPerMonth']:.2f}, {o['realisedKwhPerMonth'] or 0:.3f} kWh, "
                        f"{(o['realisedCo2eGPerMonth'] or 0) / 1000:.3f} kgCO2e over {o['daysAfter']} day(s) after "
                        f"vs {o['daysBefore']} before")
        lines.append(f"  {o['id']} (applied {o['appliedDate']}): estimated ${o['estimatedUsdPerMonth'] or 0:.2f}, "
                     f"{o['estimatedKwhPerMonth'] or 0:.3f} kWh, {(o['estimatedCo2eGPerMonth'] or 0) / 1000:.3f} "
                     f"kgCO2e; {realised}")
    return "".join(line + "\n" for line in lines)


def run_action(args: argparse.Namespace, settings: Settings) -> int:
    """Record --dismiss, --undismiss or --applied; 0 ok, 2 bad input, 1 the warehouse cannot take it now."""
    chosen = [(flag, v) for flag, v in (("dismiss", args.dismiss), ("undismiss", args.undismiss),
                                        ("applied", args.applied)) if v is not None]
    try:
        if len(chosen) > 1:
            raise ActionError("give one of --dismiss, --undismiss and --applied at a time")
        flag, rec_id = chosen[0]
        if args.reason is not None and flag != "dismiss":
            raise ActionError("--reason goes with --dismiss ID")
        if args.on is not None and flag != "applied":
            raise ActionError("--on goes with --applied ID")
        today = datetime.now(UTC).date()  # --on in the future: refused by the writer (Action.validate)
        status = {"dismiss": "dismissed", "undismiss": "undismissed", "applied": "applied"}[flag]
        done = record_action(settings, Action(rec_id, status, reason=args.reason, applied_date=args.on or today))
    except ActionError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2 if exc.usage else 1
    print(f"recorded: {done}. The marts, this command's list and the API show it after the next build of the "
          "day (the next scheduled run, or kubeledger rebuild --start DAY --end DAY)")
    return 0


def render_csv(rows: list[dict[str, Any]]) -> str:
    out = io.StringIO()
    w = csv.DictWriter(out, fieldnames=CSV_FIELDS, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    return out.getvalue()


def run_recommend(args: argparse.Namespace, settings: Settings) -> int:
    """Print the recommendations (or record a decision); 0 ok, 2 bad input, 1 no serving copy."""
    if any(getattr(args, flag, None) is not None for flag in ("dismiss", "undismiss", "applied")):
        return run_action(args, settings)
    if args.reason is not None or args.on is not None:
        print("error: --reason goes with --dismiss ID, --on with --applied ID", file=sys.stderr)
        return 2
    try:
        _window_days(args.window, settings)
        sel = _selection(args)
        sel.validate()

        def read(con: Any) -> tuple[list[dict[str, Any]], list[str], list[dict[str, Any]]]:
            found, notes = load_recommendations(con, sel)
            return found, notes, load_outcomes(con, found, sel.kinds)

        raw, notes, outcomes = read_once(settings.serving_path, read)
    except (QueryError, ServingUnavailable) as exc:
        return error_exit(exc)
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    dismissed = [recommendation_row(r) for r in raw if r.get("status") == "dismissed"]
    if not args.all:  # dismissed rows count 0 in every total: hiding them changes no figure
        raw = [r for r in raw if r.get("status") != "dismissed"]
    rows = [recommendation_row(r) for r in raw]
    if args.format == "json":
        sys.stdout.write(json.dumps(rows, indent=2) + "\n")
    elif args.format == "csv":
        sys.stdout.write(render_csv(rows))
    else:
        sys.stdout.write(render_table([r for r in rows if r["status"] != "dismissed"],
                                      [r for r in raw if r.get("status") != "dismissed"]))
        sys.stdout.write(render_decisions(dismissed, outcomes, args.all))
    return 0
