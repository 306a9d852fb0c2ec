"""Which dbt tests a dbt asset's call runs. An asset backfill runs the daily dbt assets in subsets, each as soon as
its upstream assets have landed; a test that reads two marts must not run in a subset that builds only one of
them (it read the other before it was built for those days and failed the backfill on CI). A call that builds
every model selects the same tests as dbt's default would."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import date
from pathlib import Path

import duckdb
import pytest
from dagster_dbt.asset_utils import get_dbt_resource_names_for_asset_keys

from pipelines import DBT_PROJECT_DIR, PROJECT_ROOT, dbt_executable
from pipelines.dagster_defs import assets_dbt
from pipelines.dagster_defs.dbt_args import dbt_env
from pipelines.engines import INDIRECT_SELECTION
from pipelines.engines.dbt_dagster import WINDOWED
from pipelines.settings import load_settings
from tests.fixtures.pipeline_workdir import D1, D2, D3, cli_env, published_workdir
from tests.fixtures.spark_compare import same

pytestmark = pytest.mark.integration

CROSS_MART_TESTS = {"assert_allocation_reconciles_with_assets", "assert_pv_and_lb_reconcile",
                    "assert_adjustments_reconcile"}


def _dbt(tmp: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    """`dbt <args>` on the project, its target and logs under `tmp`."""
    return subprocess.run(
        [dbt_executable(), *args, "--project-dir", str(DBT_PROJECT_DIR), "--profiles-dir", str(DBT_PROJECT_DIR),
         "--target-path", str(tmp / "target"), "--log-path", str(tmp / "logs")],
        env=env, cwd=tmp, capture_output=True, text=True, timeout=300)


def _ls(tmp: Path, env: dict[str, str], *selection: str) -> set[str]:
    proc = _dbt(tmp, env, "ls", "--quiet", "--resource-type", "test", "--output", "name", *selection)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return {line.strip() for line in proc.stdout.splitlines() if line.strip()}


@pytest.fixture(scope="module")
def envs(tmp_path_factory) -> dict[str, dict[str, str]]:
    tmp = tmp_path_factory.mktemp("selection")
    config = tmp / "kubeledger.yaml"
    config.write_text("warehouse: {path: wh/w.duckdb}\nclusters: [{name: a, source: demo}]\n")
    ours = {**os.environ, **dbt_env(load_settings(str(config)))}
    eager = {**ours, "DBT_INDIRECT_SELECTION": "eager"}
    return {"ours": ours, "eager": eager}


def _subset_selection(model: str) -> list[str]:
    """The --select a dagster-dbt subset run of dbt_daily gives dbt when `model` is its only selected asset."""
    daily = assets_dbt.dbt_daily_assets
    manifest = json.loads(Path(assets_dbt.MANIFEST).read_text())
    keys = [k for k in daily.keys if k.path[-1] == model]
    assert keys, f"{model} is not an asset of dbt_daily"
    return ["--select", *get_dbt_resource_names_for_asset_keys(assets_dbt.TRANSLATOR, manifest, daily, keys)]


def test_the_project_sets_the_indirect_selection(envs):
    assert envs["ours"]["DBT_INDIRECT_SELECTION"] == INDIRECT_SELECTION == "buildable"


def test_a_subset_with_one_mart_skips_the_tests_that_read_another(tmp_path, envs):
    selection = _subset_selection("fct_asset_daily")
    # dbt's default would run them (the hazard this setting removes) ...
    assert CROSS_MART_TESTS <= _ls(tmp_path, envs["eager"], *selection)
    # ... the project's setting does not
    assert not CROSS_MART_TESTS & _ls(tmp_path, envs["ours"], *selection)
    # both marts in one call: they run
    both = [*selection, *_subset_selection("fct_allocation_daily")[1:]]
    assert CROSS_MART_TESTS <= _ls(tmp_path, envs["ours"], *both)


def test_whole_calls_select_the_same_tests_as_dbts_default(tmp_path, envs):
    daily = ["--exclude", "resource_type:seed", assets_dbt.LOOKUPS_SELECT, "--exclude-resource-type", "unit_test"]
    lookups = ["--select", assets_dbt.LOOKUPS_SELECT, "--exclude", "resource_type:seed",
               "--exclude-resource-type", "unit_test"]
    ours = {name: _ls(tmp_path, envs["ours"], *selection) for name, selection in (("daily", daily), ("lookups", lookups))}
    assert ours["daily"] == _ls(tmp_path, envs["eager"], *daily)
    assert ours["lookups"] == _ls(tmp_path, envs["eager"], *lookups)
    assert CROSS_MART_TESTS <= ours["daily"]


def test_the_row_rules_test_names_each_broken_rule(tmp_path, envs):
    """`row_rules` (tests/generic) checks a model's key, not-null columns and accepted values in one test: it passes
    on the seed as loaded, and fails when rules break, with one failure row per broken rule naming it (the column
    with its NULL count, the duplicated key with its rows, the value outside the list with its rows)."""
    env = {**envs["ours"], "KUBELEDGER_WAREHOUSE": str(tmp_path / "w.duckdb")}
    built = _dbt(tmp_path, env, "build", "--select", "opencost_prices")
    assert built.returncode == 0, built.stdout[-3000:]
    assert "rules_opencost_prices" in built.stdout
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    try:
        con.execute("update seeds.opencost_prices set hourly_usd = null where price_key in ('CPU', 'RAM')")
        con.execute("update seeds.opencost_prices set unit = null where price_key = 'CPU'")
        # a second (aws, GPU) row, and a provider outside the accepted list on two rows
        con.execute("insert into seeds.opencost_prices select * from seeds.opencost_prices "
                    "where provider = 'aws' and price_key = 'GPU'")
        con.execute("update seeds.opencost_prices set provider = 'ibm' where provider = 'alibaba' "
                    "and price_key in ('storage', 'LoadBalancer')")
        nulls = dict(con.execute("select 'hourly_usd', count(*) filter (where hourly_usd is null) "
                                 "from seeds.opencost_prices union all select 'unit', count(*) filter "
                                 "(where unit is null) from seeds.opencost_prices").fetchall())
    finally:
        con.close()
    failed = _dbt(tmp_path, env, "test", "--select", "rules_opencost_prices")
    assert failed.returncode == 1 and "FAIL 4 rules_opencost_prices" in failed.stdout, failed.stdout[-3000:]
    # the failure rows, from the SQL dbt ran (the project stores no failure tables)
    (compiled,) = (tmp_path / "target" / "compiled").rglob("rules_opencost_prices.sql")
    con = duckdb.connect(str(tmp_path / "w.duckdb"), read_only=True)
    try:
        rows = sorted(con.execute(compiled.read_text()).fetchall())
    finally:
        con.close()
    assert rows == sorted([("not_null", "hourly_usd", nulls["hourly_usd"]), ("not_null", "unit", nulls["unit"]),
                           ("unique provider, price_key", "aws, GPU", 2), ("accepted provider", "ibm", 2)]), rows
    assert nulls["hourly_usd"] > nulls["unit"] > 0, nulls


def test_cross_mart_tests_judge_the_days_the_build_wrote(tmp_path_factory, envs):
    """In an asset backfill another run may have built one mart of a day and not yet the other (CI saw
    assert_sharing_conserves_totals fail a run on such a day). The cross-mart tests judge the days of the build's
    window: a day outside it that disagrees does not fail them; inside the window, or with no window (the whole
    mart), it does."""
    wd = published_workdir(tmp_path_factory, "cross-mart-window")
    warehouse = wd / "wh" / "kubeledger.duckdb"
    con = duckdb.connect(str(warehouse))
    try:
        deleted = con.execute("delete from marts.fct_allocation_shared_daily where usage_date = ? returning 1",
                              [D1]).fetchall()
    finally:
        con.close()
    assert deleted
    env = {**envs["ours"], "KUBELEDGER_WAREHOUSE": str(warehouse)}
    tmp = tmp_path_factory.mktemp("cross-mart-dbt")

    def sharing_test(*window: date) -> subprocess.CompletedProcess:
        variables = {"min_ts": f"{window[0]} 00:00:00", "max_ts": f"{window[1]} 00:00:00"} if window else {}
        return _dbt(tmp, env, "test", "--select", "assert_sharing_conserves_totals", "--vars", json.dumps(variables))

    other_day = sharing_test(D2, D3)
    assert other_day.returncode == 0 and "PASS assert_sharing_conserves_totals" in other_day.stdout, other_day.stdout[-3000:]
    for failed in (sharing_test(D1, D2), sharing_test()):
        assert failed.returncode == 1 and "FAIL 1 assert_sharing_conserves_totals" in failed.stdout, failed.stdout[-3000:]


def _materialize(workdir: Path, home: Path, select: str, first: date, last: date) -> subprocess.CompletedProcess:
    """`dagster asset materialize` of a subset of assets for a range of days: one run of the kind the daemon launches
    in an asset backfill."""
    env = cli_env(DAGSTER_HOME=str(home), KUBELEDGER_DAGSTER_STORAGE=str(home / "storage"),
                  KUBELEDGER_CONFIG=str(workdir / "kubeledger.yaml"),
                  KUBELEDGER_WAREHOUSE=str(workdir / "wh" / "kubeledger.duckdb"))
    return subprocess.run([str(Path(dbt_executable()).parent / "dagster"), "asset", "materialize", "-m",
                           "pipelines.definitions", "--select", select, "--partition-range", f"{first}...{last}"],
                          cwd=PROJECT_ROOT, env=env, capture_output=True, text=True, timeout=600)


WINDOW_MARTS = ("fct_allocation_daily", "fct_node_energy_daily", "fct_asset_daily")


def _mart_days(warehouse: Path) -> dict[str, list[tuple]]:
    """The rows of D1 and D2 of each of WINDOW_MARTS, ordered by their non-double columns, then the doubles."""
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        out = {}
        for mart in WINDOW_MARTS:
            described = con.execute(f"describe marts.{mart}").fetchall()
            order = [r[0] for r in described if r[1] != "DOUBLE"] + [r[0] for r in described if r[1] == "DOUBLE"]
            # an idle row's intensity over a round-off residue of energy follows the summation order (spark_compare)
            residue = ("replace (case when abs(energy_kwh) > 1e-12 then carbon_intensity_g_per_kwh end "
                       "as carbon_intensity_g_per_kwh)" if "carbon_intensity_g_per_kwh" in order else "")
            out[mart] = con.execute(f"select * {residue} from marts.{mart} where usage_date in (?, ?) "  # noqa: S608
                                    f"order by {', '.join(f'{c} nulls first' for c in order)}", [D1, D2]).fetchall()
        return out
    finally:
        con.close()


def test_a_subset_run_builds_from_its_own_window(tmp_path_factory):
    """Views and tables hold the last call's window. CI saw a backfill's run build fct_allocation_daily for two
    days from intermediate tables another subset run had just rebuilt for the third day (the blocking
    reconciliations failed on every node). A subset run now rebuilds, for its own window, the views and tables
    its models read but it does not build: the marts come out as the whole build made them."""
    wd = published_workdir(tmp_path_factory, "subset-window", (D1, D2, D3))
    warehouse = wd / "wh" / "kubeledger.duckdb"
    before = _mart_days(warehouse)
    home = tmp_path_factory.mktemp("subset-window-dagster")
    (home / "dagster.yaml").write_text((PROJECT_ROOT / "dagster_home" / "dagster.yaml").read_text())
    # a run of the daily build's views and tables alone, for the third day: they now hold D3's rows only
    manifest = json.loads(Path(assets_dbt.MANIFEST).read_text())
    windowed = sorted("/".join(key.path) for key in assets_dbt.dbt_daily_assets.keys for node in manifest["nodes"].values()
                      if node["resource_type"] == "model" and assets_dbt.TRANSLATOR.get_asset_key(node) == key
                      and node["config"]["materialized"] in WINDOWED)
    assert "intermediate/int_allocations_workload_daily" in windowed
    third = _materialize(wd, home, ",".join(windowed), D3, D3)
    assert third.returncode == 0, third.stdout[-3000:] + third.stderr[-3000:]
    con = duckdb.connect(str(warehouse), read_only=True)
    try:
        days = con.execute("select distinct usage_date from intermediate.int_allocations_workload_daily").fetchall()
    finally:
        con.close()
    assert days == [(D3,)]
    # the marts of the first two days, not built yet (as in a backfill), in a run that does not select those tables
    con = duckdb.connect(str(warehouse))
    try:
        for mart in WINDOW_MARTS:
            con.execute(f"delete from marts.{mart} where usage_date in (?, ?)", [D1, D2])  # noqa: S608
    finally:
        con.close()
    marts = _materialize(wd, home, "marts/fct_allocation_daily,marts/fct_node_energy_daily,marts/fct_asset_daily",
                         D1, D2)
    assert marts.returncode == 0, marts.stdout[-3000:] + marts.stderr[-3000:]
    after = _mart_days(warehouse)
    for mart, rows in before.items():  # the same rows; doubles to 1e-9 (the summation order follows the window)
        assert same([list(r) for r in after[mart]], [list(r) for r in rows]), mart
    assert "rebuilt for this window first" in marts.stdout + marts.stderr
