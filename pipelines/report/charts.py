"""The report's charts: matplotlib's SVG backend, text drawn as paths so the file needs no font and no network.

One chart per measure: daily bars stacked by cluster over the chart window, a day with no data left empty.
"""

from __future__ import annotations

import io
from datetime import date, timedelta
from typing import Any

import matplotlib

matplotlib.use("svg")  # no display, no GUI toolkit: the report is written by servers and Dagster steps

import matplotlib.dates as mdates  # noqa: E402 - after the backend is chosen
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FuncFormatter  # noqa: E402

# measure column -> (title, axis unit, scale applied to the values for the axis)
MEASURES = {
    "total_cost": ("Cost per cluster per day", "USD", 1.0),
    "energy_kwh": ("Energy per cluster per day", "kWh", 1.0),
    "co2e_total_g": ("CO2e per cluster per day", "kg CO2e", 1e-3),
}
# colour-blind-safe (Okabe-Ito), in cluster order
PALETTE = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000000")


def stacked_daily_svg(series: list[dict[str, Any]], measure: str, start: date, end: date) -> str:
    """An inline <svg> element: one bar per day from `start` to `end`, stacked by cluster."""
    title, unit, scale = MEASURES[measure]
    days = sorted({r["usage_date"] for r in series if start <= r["usage_date"] <= end})  # a day without data: no bar
    clusters = sorted({r["cluster"] for r in series})
    values = {(r["usage_date"], r["cluster"]): (r[measure] or 0.0) * scale for r in series}
    with plt.rc_context({"svg.fonttype": "path", "svg.hashsalt": "kubeledger", "font.size": 9,
                         "axes.spines.top": False, "axes.spines.right": False}):
        fig, ax = plt.subplots(figsize=(7.2, 2.6), dpi=96)
        bottom = [0.0] * len(days)
        for i, cluster in enumerate(clusters):
            heights = [values.get((d, cluster), 0.0) for d in days]
            ax.bar(days, heights, bottom=bottom, width=0.8, label=cluster, color=PALETTE[i % len(PALETTE)])
            bottom = [b + h for b, h in zip(bottom, heights, strict=True)]
        ax.set_title(title, loc="left", fontsize=10)
        ax.set_ylabel(unit)
        ax.set_xlim(start - timedelta(days=1), end + timedelta(days=1))
        ax.xaxis.set_major_locator(mdates.AutoDateLocator(maxticks=8))
        ax.xaxis.set_major_formatter(mdates.DateFormatter("%b %d"))
        ax.yaxis.set_major_formatter(FuncFormatter(lambda v, _pos: f"{v:,.6g}"))
        ax.grid(axis="y", linewidth=0.4, alpha=0.5)
        if clusters:
            ax.legend(loc="upper left", fontsize=8, frameon=False, ncols=min(len(clusters), 4))
        fig.tight_layout()
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None})
        plt.close(fig)
    text = buf.getvalue()
    # inline in HTML: drop the XML prolog and DOCTYPE, keep the <svg> element
    return text[text.index("<svg"):]
