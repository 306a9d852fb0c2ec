"""Dagster on PostgreSQL (`dagster: {storage: postgres}`): the instance template, its checks, and one real daily
materialisation against a PostgreSQL server started here (Debian binaries, scripts/ci/setup_postgres.sh)."""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from pipelines import PROJECT_ROOT
from pipelines.dagster_defs.instance import (
    InstanceError,
    configured_storage,
    prepare_dagster_home,
    storage_problems,
)
from pipelines.settings import load_settings
from tests.fixtures.pipeline_workdir import CONFIG, D1, cli_args, cli_env, write_config
from tests.fixtures.ports import free_port

pytestmark = pytest.mark.integration

URL_ENV = "KUBELEDGER_DAGSTER_PG_URL"
PG_CONFIG = (CONFIG.replace("demo: {nodes: 6, pods_per_node: 4}", "demo: {nodes: 3, pods_per_node: 2}")
             + "dagster:\n  storage: postgres\n")


# --- fast: template selection and checks ------------------------------------------------------------------------

@pytest.fixture
def isolated_env(monkeypatch, tmp_path: Path) -> Path:
    """prepare_dagster_home sets DAGSTER_HOME and friends in os.environ: restore them after the test."""
    home = tmp_path / "home"
    monkeypatch.setenv("DAGSTER_HOME", str(home))
    for name in ("KUBELEDGER_DAGSTER_STORAGE", URL_ENV, "OTHER_PG_URL"):
        monkeypatch.delenv(name, raising=False)
    return home


def _settings(tmp_path: Path, extra: str):
    cfg = tmp_path / "kubeledger.yaml"
    cfg.write_text(extra)
    return load_settings(cfg)


def test_postgres_needs_its_url(isolated_env: Path, tmp_path: Path, monkeypatch):
    settings = _settings(tmp_path, "dagster:\n  storage: postgres\n")
    with pytest.raises(InstanceError, match=f"environment variable {URL_ENV} .* is not set"):
        prepare_dagster_home(settings)
    monkeypatch.setenv(URL_ENV, "mysql://u:secret@db/dagster")
    with pytest.raises(InstanceError, match="postgresql:// URL") as err:
        prepare_dagster_home(settings)
    assert "secret" not in str(err.value)  # the URL may hold a password: never echoed
    monkeypatch.setenv(URL_ENV, "postgresql://u:secret@db:5432/")
    with pytest.raises(InstanceError, match="database name"):
        prepare_dagster_home(settings)


def test_template_follows_the_storage_setting(isolated_env: Path, tmp_path: Path, monkeypatch):
    home = isolated_env
    sqlite = (PROJECT_ROOT / "dagster_home" / "dagster.yaml").read_text()
    prepare_dagster_home(_settings(tmp_path, ""))
    assert (home / "dagster.yaml").read_text() == sqlite

    # switching to postgres replaces the unedited SQLite copy, with the configured variable's name
    monkeypatch.setenv("OTHER_PG_URL", "postgresql://kubeledger@127.0.0.1:5432/dagster")
    pg = _settings(tmp_path, "dagster:\n  storage: postgres\n  postgres_url_env: OTHER_PG_URL\n")
    assert prepare_dagster_home(pg) == home
    text = (home / "dagster.yaml").read_text()
    assert configured_storage(text) == "postgres" and "env: OTHER_PG_URL" in text and URL_ENV not in text
    # a URL without a driver gets psycopg2, the one dagster-postgres installs
    assert os.environ["OTHER_PG_URL"] == "postgresql+psycopg2://kubeledger@127.0.0.1:5432/dagster"
    (home / "storage").mkdir(exist_ok=True)
    (home / "storage" / "runs.db").write_text("left from SQLite days")
    assert storage_problems(home) == []  # SQLite files are not the storage any more

    # and back; an edited file of the other storage is an error naming it, one of the same storage is kept
    prepare_dagster_home(_settings(tmp_path, ""))
    assert (home / "dagster.yaml").read_text() == sqlite
    (home / "dagster.yaml").write_text(sqlite + "# edited by the operator\n")
    with pytest.raises(InstanceError, match="configures sqlite storage but dagster.storage is postgres"):
        prepare_dagster_home(pg)
    prepare_dagster_home(_settings(tmp_path, ""))
    assert (home / "dagster.yaml").read_text().endswith("# edited by the operator\n")


def test_postgres_template_matches_the_sqlite_one():
    """Same instance defaults (telemetry, pools, run monitoring) on both storages; only `storage` differs."""
    import yaml

    sqlite = yaml.safe_load((PROJECT_ROOT / "dagster_home" / "dagster.yaml").read_text())
    pg = yaml.safe_load((PROJECT_ROOT / "dagster_home" / "dagster.postgres.yaml").read_text())
    assert pg.pop("storage") == {"postgres": {"postgres_url": {"env": URL_ENV}}}
    sqlite.pop("storage")
    assert pg == sqlite


# --- slow: a real server ------------------------------------------------------------------------------------------

def _pg_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb and shutil.which("pg_ctl") else None


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A PostgreSQL server on 127.0.0.1 (free port, temporary data folder, trust auth) with a `dagster` database;
    as root the server runs as the `postgres` user (PostgreSQL refuses to run as root). Each test gets its own
    cluster (data folder, port, socket folder), so the `dagster` database never collides between pytest-xdist
    workers or with a system PostgreSQL."""
    bindir = _pg_bin()
    if bindir is None:
        msg = "PostgreSQL binaries (initdb, pg_ctl) not found; install them with scripts/ci/setup_postgres.sh"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    as_user: list[str] = []
    root = Path(tempfile.mkdtemp(prefix="kubeledger-pg-"))  # under /tmp: the postgres user can reach it
    if os.geteuid() == 0:
        try:
            account = pwd.getpwnam("postgres")
        except KeyError:
            shutil.rmtree(root)
            pytest.skip("running as root and there is no `postgres` user to run the server as")
        os.chown(root, account.pw_uid, account.pw_gid)
        as_user = ["runuser", "-u", "postgres", "--"]
    data, log, port = root / "data", root / "server.log", free_port()

    def run(*cmd: str) -> None:
        proc = subprocess.run([*as_user, *cmd], capture_output=True, text=True, timeout=300, cwd=root)
        assert proc.returncode == 0, f"{cmd[0]} failed: {proc.stdout[-2000:]} {proc.stderr[-2000:]}"

    started = False
    try:
        run(str(bindir / "initdb"), "-D", str(data), "-U", "kubeledger", "--auth=trust", "-E", "UTF8",
            "--no-sync")
        run(str(bindir / "pg_ctl"), "-D", str(data), "-l", str(log), "-w", "-t", "120",
            "-o", f"-p {port} -k {root} -h 127.0.0.1 -c fsync=off", "start")
        started = True
        import psycopg2

        con = psycopg2.connect(host="127.0.0.1", port=port, user="kubeledger", dbname="postgres")
        con.autocommit = True
        with con.cursor() as cur:
            cur.execute("create database dagster")
        con.close()
        yield f"postgresql://kubeledger@127.0.0.1:{port}/dagster"
    finally:
        if started:
            subprocess.run([*as_user, str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast", "-w", "stop"],
                           capture_output=True, timeout=120, cwd=root)
        shutil.rmtree(root, ignore_errors=True)


PLANTED = "planted-pg-token-93be51c0"


def _tables_holding(dsn: str, needle: str) -> list[str]:
    """The tables of the database (every schema but PostgreSQL's own) with a row whose text holds `needle`."""
    import psycopg2
    from psycopg2 import sql

    found = []
    with psycopg2.connect(dsn) as con, con.cursor() as cur:
        cur.execute("select table_schema, table_name from information_schema.tables where table_type = 'BASE TABLE'"
                    " and table_schema not in ('pg_catalog', 'information_schema')")
        for schema, table in cur.fetchall():
            cur.execute(sql.SQL("select count(*) from {} t where strpos(t::text, %s) > 0").format(
                sql.Identifier(schema, table)), [needle])
            if cur.fetchone()[0]:
                found.append(f"{schema}.{table}")
    con.close()
    return found


@pytest.mark.slow
def test_daily_materialisation_on_postgres(tmp_path: Path, postgres_url: str, monkeypatch):
    import psycopg2

    workdir = tmp_path / "work"
    # a token the run reads (Electricity Maps' token from the environment; nothing listens on its port, so the day
    # degrades to the built-in zone values): it must be stored nowhere in PostgreSQL (issue 31)
    write_config(workdir).write_text(PG_CONFIG + f"carbon: {{provider: electricitymaps, base_url: "
                                     f"'http://127.0.0.1:{free_port()}', token_env: KL_PG_PLANTED, timeout_s: 2}}\n")
    t0 = time.perf_counter()
    proc = subprocess.run(cli_args(workdir, "materialize", "--date", D1.isoformat()), cwd=workdir,
                          env=cli_env(**{URL_ENV: postgres_url, "KL_PG_PLANTED": PLANTED}), capture_output=True,
                          text=True, timeout=900)
    took = time.perf_counter() - t0
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    print(f"\nmaterialised {D1} on PostgreSQL in {took:.1f} s")

    home = workdir / "wh" / "dagster"
    assert configured_storage((home / "dagster.yaml").read_text()) == "postgres"
    assert not list(home.rglob("*.db")), "SQLite storage was created next to the PostgreSQL one"

    dsn = postgres_url
    with psycopg2.connect(dsn) as con, con.cursor() as cur:
        cur.execute("select pipeline_name, status from runs order by id")
        runs = cur.fetchall()
        cur.execute("select count(*) from event_logs where dagster_event_type = 'ASSET_MATERIALIZATION'")
        materialisations = cur.fetchone()[0]
    con.close()
    assert runs == [("reference", "SUCCESS"), ("extract_hourly", "SUCCESS"), ("daily_warehouse", "SUCCESS")]
    assert materialisations > 20
    assert "carbon degraded" in proc.stdout + proc.stderr  # the token was read and sent: the planting took
    assert "runs" in str(_tables_holding(postgres_url, "daily_warehouse"))  # the search sees stored text
    assert _tables_holding(postgres_url, PLANTED) == [], "a secret read from the environment is in run storage"

    # the same runs through Dagster's API, and the run prune on PostgreSQL: two days on, the reference and extract
    # runs go, the daily build (the day's latest) stays
    import dagster as dg

    from pipelines.dagster_defs.instance import prune_runs

    monkeypatch.setenv(URL_ENV, postgres_url.replace("postgresql://", "postgresql+psycopg2://"))
    with dg.DagsterInstance.from_config(str(home)) as instance:
        assert [r.job_name for r in instance.get_runs()] == ["daily_warehouse", "extract_hourly", "reference"]
        gone = prune_runs(instance, 1, now=datetime.now(UTC) + timedelta(days=2))
        assert len(gone) == 2
        assert [r.job_name for r in instance.get_runs()] == ["daily_warehouse"]
