"""The report page: one self-contained HTML file (inline CSS and SVG, no script, nothing fetched).

Every figure is an element with class "num" and `data-metric`, `data-value` (full precision), `data-scale` (the
displayed number times the scale is the value) and the keys it sums over (`data-cluster`, `data-start`, ...), so
a test or a reader can trace it back to the marts.
"""

from __future__ import annotations

from typing import Any

from jinja2 import Environment, Undefined
from markupsafe import Markup, escape

# display kind -> (format of the scaled value, scale, unit suffix)
FORMATS = {
    "usd": ("${:,.2f}", 1.0, ""),
    "kwh": ("{:,.3f}", 1.0, " kWh"),
    "co2e_g": ("{:,.3f}", 1000.0, " kg"),
    "share": ("{:.1f}", 0.01, "%"),
    "change": ("{:+.1f}", 0.01, "%"),
    "count": ("{:,.0f}", 1.0, ""),
    "plain": ("{:.3g}", 1.0, ""),
}


def num(metric: str, value: float | int | None, kind: str, /, **keys: Any) -> Markup:
    """A traceable number; None is shown as a dash with an empty data-value."""
    attrs = "".join(f' data-{k.replace("_", "-")}="{escape(v)}"' for k, v in keys.items()
                    if v is not None and not isinstance(v, Undefined))
    if value is None:
        return Markup(f'<span class="num na" data-metric="{escape(metric)}" data-value=""{attrs}>–</span>')
    fmt, scale, unit = FORMATS[kind]
    text = fmt.format(value / scale) + unit
    if kind == "usd" and value < 0:
        text = "-" + fmt.format(-value / scale) + unit  # -$1.00, not $-1.00
    return Markup(f'<span class="num" data-metric="{escape(metric)}" data-value="{float(value)!r}" '
                  f'data-scale="{scale!r}"{attrs}>{escape(text)}</span>')


def change(current: float | None, previous: float | None) -> float | None:
    """(current - previous) / previous, a display ratio; None without a previous figure."""
    if current is None or not previous:
        return None
    return (current - previous) / previous


_ENV = Environment(autoescape=True, trim_blocks=True, lstrip_blocks=True)
_ENV.globals.update(num=num, change=change)

TEMPLATE = _ENV.from_string("""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>kubeledger {{ period.kind }} report {{ period.name }}</title>
<style>
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,"DejaVu Sans",sans-serif;margin:0 auto;max-width:1080px;
 padding:16px 24px;color:#1d2733;background:#fff}
h1{font-size:22px;margin:4px 0}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #dde3ea;padding-bottom:4px}
h3{font-size:14px;margin:16px 0 6px}.muted{color:#5b6776;font-size:13px}
.cards{display:flex;flex-wrap:wrap;gap:12px;margin:12px 0}
.card{border:1px solid #dde3ea;border-radius:6px;padding:10px 14px;min-width:150px}
.card .big{font-size:20px;font-weight:600}.card .label{font-size:12px;color:#5b6776}
table{border-collapse:collapse;font-size:13px;margin:6px 0 10px;width:100%}
th,td{padding:4px 8px;border-bottom:1px solid #edf0f4;text-align:left;vertical-align:top}
th{background:#f5f7fa;font-weight:600}td.r,th.r{text-align:right;white-space:nowrap}
.up{color:#b3261e}.down{color:#1e7d32}figure{margin:10px 0}figure svg{max-width:100%;height:auto}
details{font-size:12px;margin:0 0 12px}.two{display:grid;grid-template-columns:1fr 1fr;gap:18px}
#recommendations{table-layout:fixed}#recommendations td{overflow-wrap:anywhere}#recommendations th{white-space:normal}
#recommendations th:nth-child(1){width:20%}#recommendations th:nth-child(2){width:25%}
#recommendations th:nth-child(3){width:8%}#recommendations th:nth-child(4){width:8%}
#recommendations th:nth-child(5){width:7%}#recommendations th:nth-child(6){width:9%}
#recommendations th:nth-child(7){width:8%}#recommendations th:nth-child(8){width:15%}
#recommendations td:nth-child(8){overflow-wrap:normal;font-size:12px}
#recommendations td:last-child{font-size:11px}
.notice{background:#fff8e1;border:1px solid #f0d58c;padding:8px 12px;border-radius:6px;font-size:13px}
</style></head>
<body>
{% set s = period.start.isoformat() %}{% set e = period.end.isoformat() %}
{% set ps = prev.start.isoformat() %}{% set pe = prev.end.isoformat() %}
<h1>kubeledger {{ period.kind }} report: {{ period.name }}</h1>
<p class="muted">{{ s }}{% if period.days > 1 %} to {{ e }}{% endif %} (UTC), compared with {{ ps }}{% if period.days > 1 %} to {{ pe }}{% endif %}.
Read from {{ source }}; written {{ written }}.</p>

{% if not all_row %}
<p class="notice">No published data for this period: run <code>kubeledger materialize --date {{ e }}</code> first.</p>
{% else %}
<div class="cards" id="summary">
 <div class="card"><div class="label">Cost</div><div class="big">{{ num("cluster_cost", all_row.total_cost, "usd", cluster="__all__", start=s, end=e) }}</div>
  <div class="label">vs previous {{ num("cluster_cost_change", change(all_row.total_cost, all_row.prev_total_cost), "change", cluster="__all__", start=s, end=e) }}</div></div>
 <div class="card"><div class="label">Energy</div><div class="big">{{ num("cluster_kwh", all_row.energy_kwh, "kwh", cluster="__all__", start=s, end=e) }}</div></div>
 <div class="card"><div class="label">CO2e</div><div class="big">{{ num("cluster_co2e_g", all_row.co2e_total_g, "co2e_g", cluster="__all__", start=s, end=e) }}</div>
  <div class="label">operational {{ num("cluster_co2e_operational_g", all_row.co2e_operational_g, "co2e_g", cluster="__all__", start=s, end=e) }}, embodied {{ num("cluster_co2e_embodied_g", all_row.co2e_embodied_g, "co2e_g", cluster="__all__", start=s, end=e) }}</div>
  <div class="label">vs previous {{ num("cluster_co2e_change", change(all_row.co2e_total_g, all_row.prev_co2e_total_g), "change", cluster="__all__", start=s, end=e) }}</div></div>
 <div class="card"><div class="label">Idle share of node compute cost</div><div class="big">{{ num("cluster_idle_share", all_row.idle_share, "share", cluster="__all__", start=s, end=e) }}</div></div>
 <div class="card"><div class="label">CO2e on estimated inputs</div><div class="big">{{ num("cluster_co2e_estimated_share", all_row.co2e_estimated_share, "share", cluster="__all__", start=s, end=e) }}</div></div>
</div>

<h2>Clusters</h2>
<table id="clusters"><tr><th>cluster</th><th class="r">days</th><th class="r">cost</th><th class="r">vs previous</th><th class="r">energy</th>
<th class="r">CO2e</th><th class="r">operational</th><th class="r">embodied</th><th class="r">vs previous</th><th class="r">idle cost</th><th class="r">idle share</th><th class="r">CO2e estimated</th><th class="r">cost estimated</th></tr>
{% for c in clusters %}
<tr><td>{{ "all clusters" if c.cluster == "__all__" else c.cluster }}</td>
<td class="r">{{ num("cluster_days", c.days, "count", cluster=c.cluster, start=s, end=e) }}</td>
<td class="r">{{ num("cluster_cost", c.total_cost, "usd", cluster=c.cluster, start=s, end=e) }}</td>
<td class="r">{{ num("cluster_cost_change", change(c.total_cost, c.prev_total_cost), "change", cluster=c.cluster, start=s, end=e) }}</td>
<td class="r">{{ num("cluster_kwh", c.energy_kwh, "kwh", cluster=c.cluster, start=s, end=e) }}</td>
<td class="r">{{ num("cluster_co2e_g", c.co2e_total_g, "co2e_g", cluster=c.cluster, start=s, end=e) }}</td>
<td class="r">{{ num("cluster_co2e_operational_g", c.co2e_operational_g, "co2e_g", cluster=c.cluster, start=s, end=e) }}</td>
<td class="r">{{ num("cluster_co2e_embodied_g", c.co2e_embodied_g, "co2e_g", cluster=c.cluster, start=s, end=e) }}</td>
<td class="r">{{ num("cluster_co2e_change", change(c.co2e_total_g, c.prev_co2e_total_g), "change", cluster=c.cluster, start=s, end=e) }}</td>
<td class="r">{{ num("cluster_idle_cost", c.idle_cost, "usd", cluster=c.cluster, start=s, end=e) }}</td>
<td class="r">{{ num("cluster_idle_share", c.idle_share, "share", cluster=c.cluster, start=s, end=e) }}</td>
<td class="r">{{ num("cluster_co2e_estimated_share", c.co2e_estimated_share, "share", cluster=c.cluster, start=s, end=e) }}</td>
<td class="r">{{ num("cluster_cost_estimated_share", c.cost_estimated_share, "share", cluster=c.cluster, start=s, end=e) }}</td></tr>
{% endfor %}
</table>
<p class="muted">CO2e = operational (energy × grid intensity × PUE) + embodied (the hardware's manufacturing share).
Idle share: idle cost over node compute cost (CPU, RAM, GPU), as the mart's idle_percentage. Estimated shares:
the part of CO2e (cost) on allocation rows whose energy/carbon (price) inputs include a fallback.</p>

<h2>Last {{ chart_days }} days</h2>
{% for chart in charts %}
<figure class="chart" data-chart="{{ chart.measure }}">{{ chart.svg }}
<figcaption><details><summary>the numbers behind this chart</summary>
<table><tr><th>day</th><th>cluster</th><th class="r">value</th></tr>
{% for r in series %}<tr><td>{{ r.usage_date.isoformat() }}</td><td>{{ r.cluster }}</td>
<td class="r">{{ num("daily_" ~ chart.measure, r[chart.measure], chart.kind, cluster=r.cluster, start=r.usage_date.isoformat(), end=r.usage_date.isoformat()) }}</td></tr>
{% endfor %}</table></details></figcaption></figure>
{% endfor %}

{% for level, tables in rankings %}
<h2>Top {{ level }}s</h2>
<div class="two">
{% for order, rows in tables %}
<div><h3>by {{ "cost" if order == "cost" else "CO2e" }}</h3>
<table class="ranking" data-level="{{ level }}" data-order="{{ order }}"><tr><th>{{ level }}</th>
<th class="r">{{ "cost" if order == "cost" else "CO2e" }}</th><th class="r">vs previous</th><th class="r">{{ "CO2e" if order == "cost" else "cost" }}</th></tr>
{% for r in rows %}
{% set keys = {"cluster": r.cluster, "namespace": r.namespace, "controller_kind": r.controller_kind, "controller": r.controller, "start": s, "end": e} %}
<tr><td>{{ r.cluster }}/{{ r.namespace }}{% if level == "controller" %}/{{ (r.controller_kind ~ "/" ~ r.controller) if r.controller else "(bare pods)" }}{% endif %}</td>
{% if order == "cost" %}
<td class="r">{{ num(level ~ "_cost", r.total_cost, "usd", **keys) }}</td>
<td class="r">{{ num(level ~ "_cost_change", change(r.total_cost, r.prev_total_cost), "change", **keys) }}</td>
<td class="r">{{ num(level ~ "_co2e_g", r.co2e_total_g, "co2e_g", **keys) }}</td>
{% else %}
<td class="r">{{ num(level ~ "_co2e_g", r.co2e_total_g, "co2e_g", **keys) }}</td>
<td class="r">{{ num(level ~ "_co2e_change", change(r.co2e_total_g, r.prev_co2e_total_g), "change", **keys) }}</td>
<td class="r">{{ num(level ~ "_cost", r.total_cost, "usd", **keys) }}</td>
{% endif %}</tr>
{% endfor %}
</table></div>
{% endfor %}
</div>
{% endfor %}
<p class="muted">Workload rows only (idle and unmounted cost are per cluster above). "vs previous": change from {{ ps }}{% if period.days > 1 %} to {{ pe }}{% endif %}; a dash when the previous period has none.</p>

<h2>How much is estimated, and why</h2>
<p>{{ num("cluster_co2e_estimated_share", all_row.co2e_estimated_share, "share", cluster="__all__", start=s, end=e) }} of the CO2e
and {{ num("cluster_cost_estimated_share", all_row.cost_estimated_share, "share", cluster="__all__", start=s, end=e) }} of the cost
in this period rest on an estimated input. Each reason's share is of the quantity it affects (a cost reason against cost, a carbon reason
against CO2e; a dash where it affects the other). A row can carry several reasons, so the shares overlap and may add up to more than
those headline figures, but none exceeds its quantity's.</p>
<table id="reasons"><tr><th>reason</th><th>affects</th><th class="r">allocation rows</th><th class="r">CO2e on those rows</th><th class="r">share of CO2e</th>
<th class="r">cost on those rows</th><th class="r">share of cost</th></tr>
{% for r in reasons %}
<tr><td><code>{{ r.reason }}</code></td><td>{{ r.affects }}</td>
<td class="r">{{ num("reason_rows", r.allocation_rows, "count", reason=r.reason, start=s, end=e) }}</td>
<td class="r">{{ num("reason_co2e_g", r.co2e_total_g, "co2e_g", reason=r.reason, start=s, end=e) }}</td>
<td class="r">{{ num("reason_co2e_share", r.co2e_share, "share", reason=r.reason, start=s, end=e) }}</td>
<td class="r">{{ num("reason_cost", r.total_cost, "usd", reason=r.reason, start=s, end=e) }}</td>
<td class="r">{{ num("reason_cost_share", r.cost_share, "share", reason=r.reason, start=s, end=e) }}</td></tr>
{% else %}<tr><td colspan="7">No estimated inputs in this period.</td></tr>
{% endfor %}
</table>
<p class="muted">Each code, whether it makes cost or carbon uncertain, and when it is set: docs/METHOD.md, "Reason codes".</p>

<h2>The bill against list prices</h2>
{% if not bill %}
<p class="muted" id="bill-none">Costs are list prices: no cloud bill covers these days (<code>billing.focus_path</code>).</p>
{% else %}
<p>The cloud bill (FOCUS) matched {{ num("bill_reconciled_asset_days", bill[-1].reconciled, "count", cluster="__all__", start=s, end=e) }}
asset-days (nodes, volumes and AWS load balancers by provider id): billed {{ num("bill_billed_cost", bill[-1].billed_cost, "usd", cluster="__all__", start=s, end=e) }}
against {{ num("bill_list_cost", bill[-1].list_cost, "usd", cluster="__all__", start=s, end=e) }} at list prices. The marts keep the
list cost in <code>total_cost</code> and carry the difference as cost adjustments, which add up to it; the API's <code>totalCost</code>
includes them unless <code>reconcile=false</code>. The other figures on this page are list-priced.</p>
<table id="bill"><tr><th>cluster</th><th class="r">list cost (matched)</th><th class="r">billed cost</th><th class="r">adjustment</th>
<th class="r">asset-days matched</th><th class="r">not on the bill</th><th class="r">no provider id</th><th class="r">no bill that day</th></tr>
{% for b in bill %}{% set keys = {"cluster": b.cluster, "start": s, "end": e} %}
<tr><td>{{ "all clusters" if b.cluster == "__all__" else b.cluster }}</td>
<td class="r">{{ num("bill_list_cost", b.list_cost, "usd", **keys) }}</td>
<td class="r">{{ num("bill_billed_cost", b.billed_cost, "usd", **keys) }}</td>
<td class="r">{{ num("bill_cost_adjustment", b.cost_adjustment, "usd", **keys) }}</td>
<td class="r">{{ num("bill_reconciled_asset_days", b.reconciled, "count", **keys) }}</td>
<td class="r">{{ num("bill_unmatched_asset_days", b.unmatched, "count", **keys) }}</td>
<td class="r">{{ num("bill_no_resource_id_asset_days", b.no_resource_id, "count", **keys) }}</td>
<td class="r">{{ num("bill_no_bill_asset_days", b.no_bill, "count", **keys) }}</td></tr>
{% endfor %}
</table>
<p class="muted">"Not on the bill": the bill covers the day but has no line for the asset's provider id (its list cost, {{ num("bill_unmatched_list_cost", bill[-1].unmatched_list_cost, "usd", cluster="__all__", start=s, end=e) }}, stays unadjusted). The rule: README, "Reconciliation with the cloud bill".</p>
{% endif %}
{% endif %}

<h2>What to change</h2>
{% if recommendations is none %}
<p class="notice" id="recommendations-missing">This warehouse has no recommendation mart (marts.{{ recommendation_mart }}) yet:
build it with a kubeledger version that has recommendations to see what to change here.</p>
{% elif not recommendations %}
<p id="recommendations-none">No {% if recs.dismissed %}open {% endif %}recommendations for {{ s }}{% if period.days > 1 %} to {{ e }}{% endif %}.</p>
{% if recs.dismissed or recs.applied %}<p class="muted" id="recommendation-decisions">{{ recs.dismissed }} dismissed, {{ recs.applied }} applied
(<code>kubeledger recommend --all</code> lists the dismissed ones with their reasons).</p>{% endif %}
{% else %}
{% set d = recs.first_day.isoformat() %}{% set d2 = recs.last_day.isoformat() %}{% set t = recs.total %}
<p class="muted">As of {{ d }}{% if d2 != d %} to {{ d2 }} (each cluster's newest day){% endif %}, per month. Savings are
counted once, in order: retire idle namespaces, abandoned workloads and unclaimed volumes, rightsize what remains
(requests, then replicas off-peak; an HPA is their alternative, the larger counted; volumes to their peak use),
re-pack the node pools with what that frees, then shift in time or zone, and last price what remains of a stateless workload at spot (dollars only); a recommendation another one makes moot counts nothing ("in …").
Risk fixes raise a request to stop throttling or OOM kills: a cost increase, shown apart and never subtracted.</p>
<div class="cards" id="recommendation-total">
 <div class="card"><div class="label">Savings, counted once</div><div class="big">{{ num("recommendation_total_usd", t.countedUsdPerMonth, "usd", start=d, end=d2) }}</div>
  <div class="label">{{ num("recommendation_total_kwh", t.countedKwhPerMonth, "kwh", start=d, end=d2) }}, {{ num("recommendation_total_co2e_g", t.countedCo2eGPerMonth, "co2e_g", start=d, end=d2) }} CO2e</div></div>
 <div class="card"><div class="label">Risk fixes (cost increase)</div><div class="big">{{ num("recommendation_total_risk_fix_usd", t.riskFixUsdPerMonth, "usd", start=d, end=d2) }}</div>
  <div class="label">{{ num("recommendation_total_risk_fixes", t.riskFixes, "count", start=d, end=d2) }} recommendations</div></div>
</div>
<table id="recommendation-kinds"><tr><th>kind</th><th class="r">recommendations</th><th class="r">saving, counted (USD)</th><th class="r">risk fix (USD)</th>
<th class="r">kWh</th><th class="r">CO2e</th></tr>
{% for k in recs.kinds %}
<tr><td>{{ k.kind }}</td><td class="r">{{ num("recommendation_kind_count", k.recommendations, "count", kind=k.kind, start=d, end=d2) }}</td>
<td class="r">{{ num("recommendation_kind_usd", k.countedUsdPerMonth, "usd", kind=k.kind, start=d, end=d2) }}</td>
<td class="r">{{ num("recommendation_kind_risk_fix_usd", k.riskFixUsdPerMonth, "usd", kind=k.kind, start=d, end=d2) }}</td>
<td class="r">{{ num("recommendation_kind_kwh", k.countedKwhPerMonth, "kwh", kind=k.kind, start=d, end=d2) }}</td>
<td class="r">{{ num("recommendation_kind_co2e_g", k.countedCo2eGPerMonth, "co2e_g", kind=k.kind, start=d, end=d2) }}</td></tr>
{% endfor %}</table>
<table id="recommendations"><tr><th>what</th><th>action</th><th>confidence</th><th class="r">saving, counted (USD)</th><th class="r">risk fix (USD)</th><th class="r">kWh</th><th class="r">CO2e</th><th>estimated</th></tr>
{% for r in recommendations %}
{% set keys = {"recommendation": r.recommendation_id, "start": r.usage_date.isoformat(), "end": r.usage_date.isoformat()} %}
<tr><td>{{ r.kind }}<br><b>{{ r.cluster }}/{{ r.target }}</b></td><td data-text-metric="recommendation_action" data-recommendation="{{ r.recommendation_id }}">{{ r.action }}</td>
<td>{% if r.confidence is number %}{{ num("recommendation_confidence", r.confidence, "plain", **keys) }}{% else %}{{ r.confidence }}{% endif %}</td>
{% if r.superseded_by %}<td colspan="4">in {{ r.superseded_by }}</td>
{% else %}<td class="r">{{ num("recommendation_usd", r.counted_usd_per_month, "usd", **keys) }}</td>
<td class="r">{{ num("recommendation_risk_fix_usd", r.risk_fix_usd_per_month, "usd", **keys) }}</td>
<td class="r">{{ num("recommendation_kwh", r.counted_kwh_per_month, "kwh", **keys) }}</td>
<td class="r">{{ num("recommendation_co2e_g", r.counted_co2e_g_per_month, "co2e_g", **keys) }}</td>{% endif %}
<td>{{ ("yes: " ~ (r.estimation_reasons | replace(",", ", "))) if r.is_estimated else "no" }}</td></tr>
{% endfor %}</table>
<p class="muted">CO2e per month is operational plus embodied: a smaller request saves the embodied share of the hardware it
frees even where it saves no energy (CPU energy follows usage, not requests; memory energy follows what is held), so CO2e can show beside 0 kWh.</p>
{% if recs.dismissed or recs.applied %}<p class="muted" id="recommendation-decisions">{{ recs.dismissed }} dismissed, {{ recs.applied }} applied
(<code>kubeledger recommend --dismiss/--applied</code>); dismissed ones are not listed above and count nothing
(<code>kubeledger recommend --all</code> lists them with their reasons).</p>{% endif %}
{% endif %}
{% if recs and recs.outcomes %}
<h3>Applied recommendations: estimated vs realised</h3>
<table id="recommendation-outcomes"><tr><th>what</th><th>applied</th><th class="r">estimated (USD)</th><th class="r">realised (USD)</th>
<th class="r">estimated CO2e</th><th class="r">realised CO2e</th><th class="r">days before / after</th></tr>
{% for o in recs.outcomes %}
{% set keys = {"recommendation": o.id, "start": o.date, "end": o.date} %}
<tr><td>{{ o.kind }}<br><b>{{ o.cluster }}/{{ o.target }}</b></td><td>{{ o.appliedDate }}</td>
<td class="r">{{ num("recommendation_outcome_estimated_usd", o.estimatedUsdPerMonth, "usd", **keys) }}</td>
<td class="r">{{ num("recommendation_outcome_realised_usd", o.realisedUsdPerMonth, "usd", **keys) }}</td>
<td class="r">{{ num("recommendation_outcome_estimated_co2e_g", o.estimatedCo2eGPerMonth, "co2e_g", **keys) }}</td>
<td class="r">{{ num("recommendation_outcome_realised_co2e_g", o.realisedCo2eGPerMonth, "co2e_g", **keys) }}</td>
<td class="r">{{ o.daysBefore or 0 }} / {{ o.daysAfter or 0 }}{% if o.realisedUsdPerMonth is none %}<br><span class="muted">not measured yet (needs a built day after it)</span>{% endif %}</td></tr>
{% endfor %}</table>
<p class="muted">Per month. Realised: the scope's cost and CO2e per day in the days before it was applied minus the days after (docs/METHOD.md "Dismiss and track"); empty until days after exist.</p>
{% endif %}
<p class="muted">kubeledger {{ version }}. Every figure on this page carries its value and keys in data-* attributes.</p>
</body></html>
""")


def render(context: dict[str, Any]) -> str:
    return TEMPLATE.render(**context)
