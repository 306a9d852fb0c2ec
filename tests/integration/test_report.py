"""The HTML report as a person sees it: the pipeline writes it, headless Chromium renders it (a screenshot that is
not blank, the charts' SVG in the rendered DOM), and every number on the page matches SQL over the marts."""

from __future__ import annotations

import base64
import re
import shutil
import subprocess
from collections import defaultdict
from datetime import date, timedelta
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import dagster as dg
import duckdb
import pytest

from pipelines.report.reason_codes import reason_codes
from pipelines.report.writer import prune_reports
from pipelines.warehouse import publish
from tests.fixtures.pipeline_workdir import D1, D2, D3, FOREIGN_ENV, published_workdir, run_cli

pytestmark = pytest.mark.integration
DAYS = (D1, D2, D3)
REL = 1e-9
# the pipeline builds marts.fct_recommendation_daily; its rows are replaced by these known ones (two on D3, one
# on D2) so the page's order and selection can be checked
RECOMMENDATIONS = [  # ... standalone saving, then stage, class, superseded_by, depends_on, counted $ kWh g, risk fix $ kWh g
    (D3, "demo", "r1", "container_rightsizing", "checkout", "deployment", "checkout-web", "web", "checkout/web",
     "Lower the CPU request of checkout/web from 500m to 200m.", "high", 12.5, 3.25, 1234.5, False, "",
     2, "saving", None, None, 12.5, 3.25, 1234.5, 0.0, 0.0, 0.0),
    (D3, "demo", "r2", "idle_node_pool", None, None, None, None, "m5.large/us-east-1a",
     "Remove 1 of 3 nodes of pool m5.large/us-east-1a.", "medium", 61.0, 20.0, 8000.0, True, "default_pue",
     3, "saving", None, "r1", 48.5, 16.75, 6765.5, 0.0, 0.0, 0.0),
    (D3, "demo", "r4", "container_rightsizing", "checkout", "deployment", "cart", "app", "checkout/cart",
     "Set requests to 900m CPU and 512Mi memory (now 500m, 512Mi)", "high", -3.0, 0.0, -20.0, False, "",
     2, "risk_fix", None, None, 0.0, 0.0, 0.0, 3.0, 0.0, 20.0),
    (D2, "demo", "r3", "unclaimed_volume", "data", None, None, None, "pvc-1", "Delete the unclaimed volume pvc-1.",
     "high", 4.0, 0.0, 0.0, False, "", 1, "saving", None, None, 4.0, 0.0, 0.0, 0.0, 0.0, 0.0),
]
# ... then status, status_reason, applied_date: a dismissed row (the largest standalone saving, counted 0) that the
# page must not list, and two applied ones listed with their outcome (estimated vs realised; r7 was applied on the
# built day, so nothing is measured yet)
DECIDED = [
    (D3, "demo", "r5", "spot_eligible", "checkout", "deployment", "search", None, "checkout/deployment/search",
     "Run deployment search (3 stateless replicas) on spot nodes", "low", 90.0, 0.0, 0.0, True, "pdb_not_checked",
     5, "saving", None, None, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, "dismissed", "needs a PDB first", None),
    (D3, "demo", "r6", "unclaimed_volume", "data", None, None, None, "pvc-2", "Delete the unclaimed volume pvc-2.",
     "high", 2.0, 0.0, 0.0, False, "", 1, "saving", None, None, 2.0, 0.0, 0.0, 0.0, 0.0, 0.0, "applied", None, D2),
    (D3, "demo", "r7", "unclaimed_volume", "data", None, None, None, "pvc-3", "Delete the unclaimed volume pvc-3.",
     "high", 1.0, 0.0, 0.0, False, "", 1, "saving", None, None, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0, "applied", None, D3),
]
OUTCOMES = [(D3, "demo", "r6", "unclaimed_volume", "pvc-2", "applied", None, D2, D2, 2.0, 0.0, 0.0, 1, 1, 1.5, 0.0, 0.0),
            (D3, "demo", "r7", "unclaimed_volume", "pvc-3", "applied", None, D3, D3, 1.0, 0.0, 0.0, None, None, None,
             None, None)]
REC_COLUMNS = ("usage_date, cluster, recommendation_id, kind, namespace, controller_kind, controller, container, "
               "target, action, confidence, saving_usd_per_month, saving_kwh_per_month, saving_co2e_g_per_month, "
               "is_estimated, estimation_reasons, stage, saving_class, superseded_by, depends_on, "
               "counted_usd_per_month, counted_kwh_per_month, counted_co2e_g_per_month, risk_fix_usd_per_month, "
               "risk_fix_kwh_per_month, risk_fix_co2e_g_per_month")
OUTCOME_COLUMNS = ("usage_date, cluster, recommendation_id, kind, target, status, reason, applied_date, estimated_on, "
                   "estimated_usd_per_month, estimated_kwh_per_month, estimated_co2e_g_per_month, days_before, "
                   "days_after, realised_usd_per_month, realised_kwh_per_month, realised_co2e_g_per_month")


def _chromium() -> str:
    exe = shutil.which("chromium")
    if exe is None:
        pytest.skip("chromium not on PATH; install with scripts/ci/setup_chromium.sh (Debian package `chromium`)")
    return exe


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Three days built and published by the CLI (which writes the reports through the Dagster asset), then the
    recommendation mart's rows replaced by known ones and published again."""
    return add_recommendations(published_workdir(tmp_path_factory, "report", DAYS))


def add_recommendations(work: Path) -> Path:
    wh = work / "wh"
    # the pipeline's own report of D3, with the recommendations the pipeline computed
    shutil.copy(wh / "reports" / "daily" / f"{D3}.html", work / "pipeline-report.html")
    con = duckdb.connect(str(wh / "kubeledger.duckdb"))
    con.execute("delete from marts.fct_recommendation_daily")
    con.executemany(f"insert into marts.fct_recommendation_daily ({REC_COLUMNS}) "  # noqa: S608
                    f"values ({', '.join('?' * 26)})", RECOMMENDATIONS)
    con.executemany(f"insert into marts.fct_recommendation_daily ({REC_COLUMNS}, status, status_reason, "  # noqa: S608
                    f"applied_date) values ({', '.join('?' * 29)})", DECIDED)
    con.execute("delete from marts.fct_recommendation_outcome_daily")
    con.executemany(f"insert into marts.fct_recommendation_outcome_daily ({OUTCOME_COLUMNS}) "  # noqa: S608
                    f"values ({', '.join('?' * 17)})", OUTCOMES)
    con.close()
    assert "fct_recommendation_daily" in publish.MART_TABLES
    publish.publish_serving_copy(wh / "kubeledger.duckdb", wh / "serving.duckdb")
    return work


SKIP = ("svg", "code", "style", "title")  # text that is not a figure of the page


class Page(HTMLParser):
    """The rendered DOM's traceable numbers, texts and chart elements."""

    def __init__(self) -> None:
        super().__init__()
        self.numbers: list[dict[str, Any]] = []
        self.texts: list[dict[str, Any]] = []
        self.chart_tags: dict[str, list[str]] = defaultdict(list)
        self.plain: list[str] = []  # text outside traceable elements, charts and code
        self._open: dict[str, Any] | None = None
        self._chart: str | None = None
        self._table = ""
        self._skip = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = {k: v or "" for k, v in attrs}
        if tag == "figure" and "chart" in a.get("class", "").split():
            self._chart = a["data-chart"]
        elif self._chart and tag in ("svg", "path", "g", "use"):
            self.chart_tags[self._chart].append(tag)
        if tag == "table":
            self._table = f"{a.get('data-level', '')}/{a.get('data-order', '')}"
        if "data-metric" in a or "data-text-metric" in a:
            self._open = {**a, "text": "", "table": self._table}
        self._skip += tag in SKIP

    def handle_endtag(self, tag: str) -> None:
        if tag == "figure":
            self._chart = None
        if self._open is not None and tag in ("span", "td"):
            (self.numbers if "data-metric" in self._open else self.texts).append(self._open)
            self._open = None
        self._skip -= tag in SKIP

    def handle_data(self, data: str) -> None:
        if self._open is not None:
            self._open["text"] += data
        elif not self._skip:
            self.plain.append(data)


def render(html: Path, out: Path) -> tuple[Page, Path]:
    exe = _chromium()
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--window-size=1280,4000"]
    shot = out / f"{html.stem}.png"
    subprocess.run([exe, *flags, f"--screenshot={shot}", html.as_uri()], check=True, capture_output=True,
                   timeout=120)
    dom = subprocess.run([exe, *flags, "--dump-dom", html.as_uri()], check=True, capture_output=True, text=True,
                         timeout=120).stdout
    page = Page()
    page.feed(dom)
    return page, shot


# --- what each number should be, from SQL over the marts (written apart from pipelines/report/queries.py) ------

def _d(text: str) -> date:
    return date.fromisoformat(text)


def _prev(start: date, end: date) -> tuple[date, date]:
    n = (end - start).days + 1
    return start - timedelta(days=n), end - timedelta(days=n)


def _cluster_sum(con: duckdb.DuckDBPyConnection, expr: str, a: dict[str, str], start: date, end: date) -> Any:
    where = "" if a["data-cluster"] == "__all__" else f" and cluster = '{a['data-cluster']}'"
    return con.execute(f"select {expr} from marts.fct_cluster_daily "  # noqa: S608
                       f"where usage_date between ? and ?{where}", [start, end]).fetchone()[0]


def _group_sum(con: duckdb.DuckDBPyConnection, col: str, a: dict[str, str], start: date, end: date) -> Any:
    where, params = "cluster = ? and namespace = ?", [a["data-cluster"], a["data-namespace"]]
    if "data-controller" in a:
        where += " and coalesce(controller_kind, '') = ? and coalesce(controller, '') = ?"
        params += [a["data-controller-kind"], a["data-controller"]]
    return con.execute(f"select sum({col}) from marts.fct_allocation_daily where allocation_kind = 'workload' "  # noqa: S608
                       f"and usage_date between ? and ? and {where}", [start, end, *params]).fetchone()[0]


def _ratio_change(cur: float | None, prev: float | None) -> float | None:
    return None if cur is None or not prev else (cur - prev) / prev


def _reasons(con: duckdb.DuckDBPyConnection, start: date, end: date) -> dict[str, dict[str, float]]:
    rows = con.execute("select estimation_reasons, co2e_total_g, total_cost from marts.fct_allocation_daily "
                       "where usage_date between ? and ?", [start, end]).fetchall()
    total_co2e, total_cost = sum(r[1] for r in rows), sum(r[2] for r in rows)
    out: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    for reasons, co2e, cost in rows:
        for reason in filter(None, reasons.split(",")):
            out[reason]["reason_rows"] += 1
            out[reason]["reason_co2e_g"] += co2e
            out[reason]["reason_cost"] += cost
    codes = reason_codes()
    for reason, v in out.items():  # a share only of the quantity the reason affects
        v["reason_co2e_share"] = v["reason_co2e_g"] / total_co2e if reason in codes["carbon"] else None
        v["reason_cost_share"] = v["reason_cost"] / total_cost if reason in codes["cost"] else None
    return out


CLUSTER_EXPR = {
    "cluster_cost": "sum(total_cost)", "cluster_kwh": "sum(energy_kwh)", "cluster_co2e_g": "sum(co2e_total_g)",
    "cluster_co2e_operational_g": "sum(co2e_operational_g)", "cluster_co2e_embodied_g": "sum(co2e_embodied_g)",
    "cluster_idle_cost": "sum(idle_cost)", "cluster_days": "count(distinct usage_date)",
    "cluster_idle_share": "sum(idle_cost) / sum(node_compute_cost)",
    "cluster_co2e_estimated_share": "sum(co2e_estimated_share * co2e_total_g) / sum(co2e_total_g)",
    "cluster_cost_estimated_share": "sum(cost_estimated_share * total_cost) / sum(total_cost)",
}
# the bill section (issue 28): the assets' reconciliation in fct_asset_daily, by status
BILL_EXPR = {
    "bill_reconciled_asset_days": "count(*) filter (where reconciliation_status = 'reconciled')",
    "bill_unmatched_asset_days": "count(*) filter (where reconciliation_status = 'unmatched')",
    "bill_no_resource_id_asset_days": "count(*) filter (where reconciliation_status = 'no_resource_id')",
    "bill_no_bill_asset_days": "count(*) filter (where reconciliation_status = 'no_bill')",
    "bill_list_cost": "sum(total_cost) filter (where reconciliation_status = 'reconciled')",
    "bill_billed_cost": "sum(billed_cost) filter (where reconciliation_status = 'reconciled')",
    "bill_cost_adjustment": "sum(cost_adjustment)",
    "bill_unmatched_list_cost": "sum(total_cost) filter (where reconciliation_status = 'unmatched')",
}
REC_COLUMN = {"recommendation_usd": "counted_usd_per_month", "recommendation_kwh": "counted_kwh_per_month",
              "recommendation_co2e_g": "counted_co2e_g_per_month",
              "recommendation_risk_fix_usd": "risk_fix_usd_per_month"}
KIND_EXPR = {"recommendation_kind_count": "count(*)", "recommendation_kind_usd": "sum(counted_usd_per_month)",
             "recommendation_kind_risk_fix_usd": "sum(risk_fix_usd_per_month)",
             "recommendation_kind_kwh": "sum(counted_kwh_per_month)",
             "recommendation_kind_co2e_g": "sum(counted_co2e_g_per_month)"}
TOTAL_EXPR = {"recommendation_total_usd": "sum(counted_usd_per_month)",
              "recommendation_total_kwh": "sum(counted_kwh_per_month)",
              "recommendation_total_co2e_g": "sum(counted_co2e_g_per_month)",
              "recommendation_total_risk_fix_usd": "sum(risk_fix_usd_per_month)",
              "recommendation_total_risk_fixes": "count(*) filter (where saving_class = 'risk_fix')"}
# each cluster's newest day in [start, end], as the API and the CLI pick it
NEWEST = ("with newest as (select cluster, max(usage_date) as d from marts.fct_recommendation_daily "
          "where usage_date between ? and ? group by cluster) ")


def expected(con: duckdb.DuckDBPyConnection, a: dict[str, str]) -> Any:
    m, start, end = a["data-metric"], _d(a["data-start"]), _d(a["data-end"])
    if m in CLUSTER_EXPR:
        return _cluster_sum(con, CLUSTER_EXPR[m], a, start, end)
    if m in ("cluster_cost_change", "cluster_co2e_change"):
        expr = "sum(total_cost)" if "cost" in m else "sum(co2e_total_g)"
        return _ratio_change(_cluster_sum(con, expr, a, start, end), _cluster_sum(con, expr, a, *_prev(start, end)))
    if m in BILL_EXPR:
        where = "" if a["data-cluster"] == "__all__" else f" and cluster = '{a['data-cluster']}'"
        return con.execute(f"select {BILL_EXPR[m]} from marts.fct_asset_daily "  # noqa: S608
                           f"where usage_date between ? and ?{where}", [start, end]).fetchone()[0]
    if m.startswith("daily_"):
        return _cluster_sum(con, f"sum({m.removeprefix('daily_')})", a, start, end)
    level, _, measure = m.partition("_")
    if level in ("namespace", "controller"):
        col = "total_cost" if measure.startswith("cost") else "co2e_total_g"
        cur = _group_sum(con, col, a, start, end)
        return _ratio_change(cur, _group_sum(con, col, a, *_prev(start, end))) if measure.endswith("change") else cur
    if m.startswith("reason_"):
        return _reasons(con, start, end)[a["data-reason"]][m]
    if m in REC_COLUMN:
        return con.execute(f"select {REC_COLUMN[m]} from marts.fct_recommendation_daily "  # noqa: S608
                           "where recommendation_id = ? and usage_date = ?", [a["data-recommendation"], start]
                           ).fetchone()[0]
    if m in KIND_EXPR or m in TOTAL_EXPR:
        expr, kind = (KIND_EXPR[m], a["data-kind"]) if m in KIND_EXPR else (TOTAL_EXPR[m], None)
        return con.execute(NEWEST + f"select {expr} from marts.fct_recommendation_daily r "  # noqa: S608
                           "join newest on newest.cluster = r.cluster and newest.d = r.usage_date "
                           "where (? is null or kind = ?) and coalesce(status, 'open') <> 'dismissed'",
                           [start, end, kind, kind]).fetchone()[0]
    if m.startswith("recommendation_outcome_"):
        side, _, quantity = m.removeprefix("recommendation_outcome_").partition("_")
        return con.execute(f"select {side}_{quantity}_per_month from marts.fct_recommendation_outcome_daily "  # noqa: S608
                           "where recommendation_id = ? and usage_date = ?", [a["data-recommendation"], start]
                           ).fetchone()[0]
    raise AssertionError(f"a number the test does not know how to check: {a}")


def _reason_shares_within_their_headline(page: Page) -> None:
    """Each reason's share is of the quantity it affects only (a cost reason has no CO2e share), ≤ 100 % and at
    most that quantity's headline estimated share: the report's estimation section cannot contradict itself."""
    headline = {a["data-metric"]: float(a["data-value"]) for a in page.numbers if a.get("data-cluster") == "__all__"
                and a["data-metric"] in ("cluster_co2e_estimated_share", "cluster_cost_estimated_share")}
    codes = reason_codes()
    shares = [(a["data-metric"], a["data-reason"], a["data-value"]) for a in page.numbers
              if a["data-metric"] in ("reason_co2e_share", "reason_cost_share")]
    assert shares
    for metric, reason, value in shares:
        quantity = "carbon" if metric == "reason_co2e_share" else "cost"
        if reason not in codes[quantity]:
            assert value == "", (metric, reason, value)  # not this reason's quantity: a dash
            continue
        limit = headline["cluster_co2e_estimated_share" if quantity == "carbon" else "cluster_cost_estimated_share"]
        assert 0 <= float(value) <= min(limit, 1.0) + 1e-12, (metric, reason, value, limit)


def check_numbers(page: Page, serving: Path) -> int:
    """Every traceable number equals the marts' figure, and its text shows that value."""
    con = duckdb.connect(str(serving), read_only=True)
    try:
        for a in page.numbers:
            want = expected(con, a)
            if a["data-value"] == "":
                assert want is None, a
                continue
            value = float(a["data-value"])
            assert want is not None and abs(value - want) <= REL * max(1.0, abs(want)), (a, want)
            m = re.search(r"([-+]?)\$?([\d,]*\.?\d+)", a["text"])  # -$1.00 and -1.000 kg alike
            shown = m.group(1) + m.group(2).replace(",", "")
            decimals = len(shown.partition(".")[2])
            scale = float(a["data-scale"])
            assert abs(float(shown) * scale - value) <= (0.5 * 10 ** -decimals + 1e-12) * scale, a
        for a in page.texts:
            action = con.execute("select action from marts.fct_recommendation_daily where recommendation_id = ?",
                                 [a["data-recommendation"]]).fetchone()[0]
            assert a["text"].strip() == action
    finally:
        con.close()
    return len(page.numbers)


def not_blank(shot: Path) -> None:
    from PIL import Image, ImageStat

    image = Image.open(shot).convert("L")
    stat = ImageStat.Stat(image)
    assert stat.var[0] > 100, f"screenshot {shot} looks blank (variance {stat.var[0]:.1f})"
    dark = sum(image.histogram()[:128]) / (image.width * image.height)
    assert dark > 0.005, f"screenshot {shot} has almost no ink ({dark:.4f} dark pixels)"


# --- the tests ----------------------------------------------------------------------------------------------

def test_the_pipeline_writes_daily_and_weekly_reports(workdir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reports = workdir / "wh" / "reports"
    assert sorted(p.name for p in (reports / "daily").glob("*.html")) == [f"{d}.html" for d in DAYS]
    # 2026-03-01 is a Sunday (ISO week 9), 03-02 and 03-03 are in week 10
    assert sorted(p.name for p in (reports / "weekly").glob("*.html")) == ["2026-W09.html", "2026-W10.html"]
    # the pipeline's own page lists the recommendations it computed (the demo has some every day)
    assert 'id="recommendations"' in (workdir / "pipeline-report.html").read_text()
    # the Dagster UI shows the main chart and the file (the template workdir's path: this one is its copy)
    from pipelines.dagster_defs.instance import open_instance
    from pipelines.settings import load_settings

    # the workdir's own instance (under its warehouse folder, where the CLI wrote), not a suite-wide DAGSTER_HOME
    for name in FOREIGN_ENV:
        monkeypatch.delenv(name, raising=False)
    instance = open_instance(load_settings(str(workdir / "kubeledger.yaml")), print)
    # the template build's materialisation of the D1..D3 range
    records = instance.fetch_materializations(dg.AssetKey(["serving", "report"]), limit=1000).records
    metas = [{k: getattr(v, "value", v) for k, v in r.asset_materialization.metadata.items()} for r in records]
    ours = [m for m in metas if str(m.get("report", "")).endswith(f"/wh/reports/daily/{D3}.html")]
    # a range run of D1..D3 writes 3 daily and 2 weekly reports (other tests may re-run single days of it)
    meta = next((m for m in ours if m.get("reports_written") == 5), None)
    assert meta is not None, [(m.get("report"), m.get("reports_written")) for m in metas]
    chart = meta["main_chart"].split("data:image/svg+xml;base64,", 1)[1].rstrip(")")
    assert base64.b64decode(chart).decode().startswith("<svg")


def test_a_warehouse_without_the_recommendation_mart_gets_a_notice(workdir: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(workdir, copy, ignore=shutil.ignore_patterns("reports", "dagster", "state", ".api-snapshots"))
    con = duckdb.connect(str(copy / "wh" / "serving.duckdb"))
    con.execute("drop table marts.fct_recommendation_daily")
    con.close()
    path = Path(run_cli(copy, "report", "--date", D3.isoformat()).stdout.strip().splitlines()[-1])
    assert path.is_relative_to(copy)
    html = path.read_text()
    assert 'id="recommendations-missing"' in html and 'id="recommendations"' not in html


@pytest.mark.parametrize("weekly", [False, True], ids=["daily", "weekly"])
def test_report_renders_and_every_number_matches_the_marts(workdir: Path, tmp_path: Path, weekly: bool) -> None:
    args = ["report", "--date", D3.isoformat(), *(["--week"] if weekly else [])]
    path = Path(run_cli(workdir, *args).stdout.strip().splitlines()[-1])
    assert path == workdir / "wh" / "reports" / ("weekly/2026-W10.html" if weekly else f"daily/{D3}.html")
    html = path.read_text()
    # offline: nothing to fetch (the only URLs are XML namespaces inside the SVG)
    assert not re.search(r"<(script|link|img|iframe)\b|\bsrc=|url\(http", html)

    page, shot = render(path, tmp_path)
    not_blank(shot)
    assert set(page.chart_tags) == {"total_cost", "energy_kwh", "co2e_total_g"}
    for tags in page.chart_tags.values():
        assert tags[0] == "svg" and tags.count("path") >= 5, tags[:10]

    metrics = {a["data-metric"] for a in page.numbers}
    assert {"cluster_cost", "cluster_co2e_g", "cluster_idle_share", "namespace_cost", "controller_co2e_g",
            "reason_co2e_share", "recommendation_usd", "recommendation_co2e_g", "daily_total_cost"} <= metrics
    assert check_numbers(page, workdir / "wh" / "serving.duckdb") > 50
    _reason_shares_within_their_headline(page)
    # no figure shown outside a traceable element
    loose = re.findall(r"\$\s*\d|\d\.\d+\s*(?:kWh|kg|%)", " ".join(page.plain))
    assert loose == []
    # the recommendations of the period's newest day, largest counted saving first, the risk fix after them
    shown = [a["data-recommendation"] for a in page.numbers if a["data-metric"] == "recommendation_usd"]
    assert shown == ["r2", "r1", "r6", "r7", "r4"]  # r5 is dismissed: not among the open ones, only counted
    assert "r5" not in {a.get("data-recommendation") for a in page.numbers} and "checkout/deployment/search" not in html
    # as `kubeledger recommend` without --all: the dismissed ones counted in one line, which names --all
    assert re.search(r'id="recommendation-decisions">\s*1 dismissed, 2 applied[^<]*<code>kubeledger recommend '
                     r'--(?:dismiss/--applied|all)</code>', html)
    assert "kubeledger recommend --all</code> lists" in html
    outcome = {(a["data-recommendation"], a["data-metric"]): a["data-value"] for a in page.numbers
               if a["data-metric"].startswith("recommendation_outcome_")}
    assert "Applied recommendations: estimated vs realised" in html
    assert float(outcome["r6", "recommendation_outcome_estimated_usd"]) == 2.0
    assert float(outcome["r6", "recommendation_outcome_realised_usd"]) == 1.5
    # applied on the built day: the estimate, and no realised figure yet (a dash, said in words as the CLI says it)
    assert float(outcome["r7", "recommendation_outcome_estimated_usd"]) == 1.0
    assert outcome["r7", "recommendation_outcome_realised_usd"] == ""
    outcomes = re.search(r'<table id="recommendation-outcomes">.*?</table>', html, re.S).group(0)
    assert outcomes.count("not measured yet (needs a built day after it)") == 1 and "None" not in outcomes
    total = {a["data-metric"]: float(a["data-value"]) for a in page.numbers
             if a["data-metric"].startswith("recommendation_total_")}
    # the pool's overlap with r1 counted once; r6 and r7 (applied) count, r5 (dismissed) not
    assert total["recommendation_total_usd"] == pytest.approx(48.5 + 12.5 + 2.0 + 1.0)
    assert total["recommendation_total_risk_fix_usd"] == pytest.approx(3.0)  # apart, never netted


def test_report_and_recommend_cli_say_the_same_of_the_decisions(workdir: Path) -> None:
    """The page and `kubeledger recommend` (each cluster's newest day, D3) print one total, leave the dismissed
    recommendation out with a count, and give each applied one its estimate and realised saving (or say it is not
    measured yet) in the same words; `--all` lists the dismissed one with its reason."""
    page = Path(run_cli(workdir, "report", "--date", D3.isoformat()).stdout.strip().splitlines()[-1]).read_text()
    cli = run_cli(workdir, "recommend").stdout
    shown = float(re.search(r'data-metric="recommendation_total_usd" data-value="([^"]+)"', page).group(1))
    m = re.search(r"counted once \(retire, rightsize, re-pack, shift, spot\): \$([\d.]+),", cli)
    assert m and m.group(1) == f"{shown:.2f}" == f"{48.5 + 12.5 + 2.0 + 1.0:.2f}", cli
    assert "1 dismissed recommendation(s) not listed" in cli and re.search(r">\s*1 dismissed, 2 applied", page)
    assert "checkout/deployment/search" not in cli + page  # r5, dismissed
    assert re.search(r"r6 \(applied 2026-03-02\): estimated \$2\.00,.*; realised \$1\.50,", cli), cli
    assert re.search(r"r7 \(applied 2026-03-03\): estimated \$1\.00,.*; realised: not measured yet \(needs a built "
                     r"day after it\)", cli), cli
    assert "not measured yet (needs a built day after it)" in page
    listed = run_cli(workdir, "recommend", "--all").stdout
    assert "r5  reason: needs a PDB first" in listed


def test_top_tables_hold_the_largest_groups(workdir: Path, tmp_path: Path) -> None:
    path = Path(run_cli(workdir, "report", "--date", D2.isoformat()).stdout.strip().splitlines()[-1])
    page, _ = render(path, tmp_path)
    con = duckdb.connect(str(workdir / "wh" / "serving.duckdb"), read_only=True)
    top = [r[0] for r in con.execute(
        "select namespace from marts.fct_allocation_daily where allocation_kind = 'workload' and usage_date = ? "
        "group by cluster, namespace order by sum(co2e_total_g) desc limit 3", [D2]).fetchall()]
    con.close()
    ranked = [a["data-namespace"] for a in page.numbers
              if a["data-metric"] == "namespace_co2e_g" and a["table"] == "namespace/co2e"]
    assert len(top) == 3 and ranked[:3] == top
    assert 'id="recommendations-none"' not in path.read_text()  # r3 is on D2
    assert check_numbers(page, workdir / "wh" / "serving.duckdb") > 50


def test_only_the_newest_reports_are_kept(tmp_path: Path) -> None:
    for day in range(1, 8):
        (tmp_path / f"2026-03-0{day}.html").write_text("x")
    gone = prune_reports(tmp_path, 3)
    assert [p.name for p in gone] == [f"2026-03-0{d}.html" for d in range(1, 5)]
    assert sorted(p.name for p in tmp_path.glob("*.html")) == [f"2026-03-0{d}.html" for d in range(5, 8)]
