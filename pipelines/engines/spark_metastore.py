"""Where the Spark metastore's tables live, checked before every Spark run, and `kubeledger lake relocate`.

The embedded Derby metastore (<warehouse folder>/state/spark/metastore_db) keeps absolute locations: the marts are
external tables at `<lake.root>/marts/<mart>` (dbt's `location_root`) with one location per partition, the other
layers managed tables under its databases' folders (`<state>/spark/warehouse/<schema>.db`). A copied or restored
warehouse folder, or a changed `lake.root`, would otherwise go on writing the marts into the old lake (and the
managed tables into the old folder) while the marts are read back from the configured one.

So the locations the metastore was made with are a property of the warehouse: `metastore_home.json`, beside
metastore_db, records the lake root and Spark's warehouse folder (resolved absolute paths, or the lake's URI) when
the metastore is created, and every Spark run compares them with the settings before its JVM starts
(`check_metastore_home`): a difference fails the run in one line naming both places and the way out. A metastore
made before the record existed is read once through the run's own Spark session (`adopt_metastore`: the database
folders and the marts' locations) and recorded when it matches; otherwise the run fails the same way.

`relocate` re-registers every location at the configured places: the tables, their partitions and the databases
are rows of Derby's tables (DBS, SDS, SERDE_PARAMS' `path`), rewritten prefix by prefix in one transaction over
JDBC in a JVM without a Spark session (Hive's own `metatool -updateLocation` does the same). Spark cannot do it:
the built-in Hive 2.3 client refuses `ALTER DATABASE ... SET LOCATION`, and re-creating the tables would lose the
managed tables' history and the column comments. The lake's files are not moved: a local lake whose marts are not
at the new root is refused, naming the folder to copy first.
"""

from __future__ import annotations

import json
import os
import warnings
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlparse

from pipelines.environ import scoped_environ
from pipelines.settings_models import SettingsError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from pipelines.settings import Settings

HOME_FILE = "metastore_home.json"
METASTORE = "metastore_db"
MARTS = "marts"


class LakeMoved(SettingsError):
    """The metastore's tables live elsewhere than the settings say; the message is one line."""


@dataclass(frozen=True)
class MetastoreHome:
    """Where a metastore's tables live: the lake (its marts) and Spark's warehouse folder (the databases)."""

    lake_root: str  # an absolute folder, or the lake's URI (s3a://...)
    warehouse_dir: str  # spark.sql.warehouse.dir, an absolute folder: <state>/spark/warehouse


def configured_home(settings: Settings) -> MetastoreHome:
    return MetastoreHome(settings.lake_root, str(settings.spark_state_dir / "warehouse"))


def read_home(state: Path) -> MetastoreHome | None:
    path = state / HOME_FILE
    if not path.is_file():
        return None
    data = json.loads(path.read_text())
    return MetastoreHome(str(data["lake_root"]), str(data["warehouse_dir"]))


def write_home(state: Path, home: MetastoreHome) -> None:
    state.mkdir(parents=True, exist_ok=True)
    tmp = state / f".{HOME_FILE}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(asdict(home), indent=2) + "\n")
    os.replace(tmp, state / HOME_FILE)


def same_place(a: str, b: str) -> bool:
    """Two lake roots or folders name the same place: URIs as written (trailing / aside), folders resolved."""
    if "://" in a or "://" in b:
        return a.rstrip("/") == b.rstrip("/")
    return os.path.realpath(a) == os.path.realpath(b)


def _settings_file(settings: Settings) -> str:
    return settings.source_file or "the settings (no kubeledger.yaml)"


def moved_message(settings: Settings, recorded: MetastoreHome) -> str | None:
    """The one line a run fails with when the metastore's tables live elsewhere than the settings say, else None."""
    now = configured_home(settings)
    metastore = settings.spark_state_dir / METASTORE
    if not same_place(recorded.lake_root, now.lake_root):
        return (f"{_settings_file(settings)}: lake.root is {now.lake_root} but the Spark metastore ({metastore}) "
                f"holds tables at {recorded.lake_root}; run `kubeledger lake relocate` to re-register them at "
                f"{now.lake_root} (with the lake's files there), or point lake.root back to {recorded.lake_root}")
    if not same_place(recorded.warehouse_dir, now.warehouse_dir):
        return (f"the Spark metastore {metastore} holds its databases at {recorded.warehouse_dir}, not in this "
                f"warehouse folder ({now.warehouse_dir}): a copied or restored warehouse folder; run `kubeledger "
                f"lake relocate` to re-register them here, or run with the warehouse at its old place")
    return None


def check_metastore_home(settings: Settings) -> MetastoreHome | None:
    """Before a Spark run's JVM starts: the metastore's recorded home, which must be the configured one (LakeMoved
    otherwise). A metastore not made yet is recorded now, for the places it is about to be made at; None when the
    metastore has no record (made by an older kubeledger: `adopt_metastore` reads it through the session)."""
    state = settings.spark_state_dir
    if not (state / METASTORE).exists():
        home = configured_home(settings)
        write_home(state, home)
        return home
    recorded = read_home(state)
    if recorded is None:
        return None
    message = moved_message(settings, recorded)
    if message:
        raise LakeMoved(message)
    return recorded


def local_path(location: str) -> str:
    """A metastore location (file:/x, file:///x) as a local path; other URIs as they are."""
    parsed = urlparse(location)
    return parsed.path if parsed.scheme == "file" else location


def registered_home(databases: dict[str, str], mart_locations: dict[str, str]) -> MetastoreHome | None:
    """The home a metastore's registered locations show: Spark's warehouse folder from the `default` database's
    location, the lake from the marts' (`<lake>/marts/<mart>`; "" while no mart is registered). None without a
    `default` database (not a metastore Spark made)."""
    default = databases.get("default")
    if default is None:
        return None
    lakes = sorted({local_path(loc).rstrip("/").rsplit(f"/{MARTS}/", 1)[0] for loc in mart_locations.values()
                    if f"/{MARTS}/" in loc})
    return MetastoreHome(lakes[0] if lakes else "", local_path(default).rstrip("/"))


def adopt_metastore(settings: Settings, session: SparkSession) -> MetastoreHome:
    """A metastore with no record (an older kubeledger made it): its registered locations read once through the
    run's session, recorded when they are the configured ones; LakeMoved otherwise."""
    catalog = session.catalog
    databases = {d.name: d.locationUri for d in catalog.listDatabases()}
    marts: dict[str, str] = {}
    if MARTS in databases:
        for table in catalog.listTables(MARTS):
            if table.isTemporary or table.tableType == "VIEW":
                continue
            rows = session.sql(f"describe table extended {MARTS}.`{table.name}`").collect()
            location = next((r[1] for r in rows if r[0] == "Location"), None)
            if location:
                marts[table.name] = location
    found = registered_home(databases, marts)
    now = configured_home(settings)
    if found is not None:  # no mart registered yet: any lake is the right one
        message = moved_message(settings, MetastoreHome(found.lake_root or now.lake_root, found.warehouse_dir))
        if message:
            raise LakeMoved(message)
    write_home(settings.spark_state_dir, now)
    return now


# --- relocate -------------------------------------------------------------------------------------------------------

@dataclass
class Location:
    """One location row of the metastore: a database, a table's or partition's storage, a datasource's `path`."""

    kind: str  # database | storage | path
    key: Any  # the row's id (DB_ID, SD_ID, SERDE_ID)
    value: str


@dataclass
class RelocatePlan:
    prefixes: dict[str, str]  # old location prefix -> new
    changes: list[tuple[Location, str]]  # (row, new value)
    left: list[Location]  # rows under none of the old prefixes (left as they are)
    tables: dict[str, str]  # mart -> its new location (for the files check)


def as_uri(place: str) -> str:
    """A folder as the metastore writes a location (file:/abs/path); a URI as it is."""
    return place.rstrip("/") if "://" in place else "file:" + os.path.abspath(place)


def _under(value: str, prefix: str) -> bool:
    return value == prefix or value.startswith(prefix.rstrip("/") + "/")


def plan_relocation(databases: dict[str, str], mart_locations: dict[str, str], rows: Iterable[Location],
                    target: MetastoreHome) -> RelocatePlan:
    """What `relocate` rewrites: every location under the old warehouse folder (the `default` database's) moves
    under the new one, every location under an old lake (the marts' `<lake>/marts/<mart>`) under the new lake;
    the longest old prefix wins, so a lake inside the warehouse folder moves as the lake."""
    prefixes: dict[str, str] = {}
    if "default" in databases:
        prefixes[databases["default"].rstrip("/")] = as_uri(target.warehouse_dir)
    tables: dict[str, str] = {}
    new_lake = as_uri(target.lake_root)
    for mart, loc in mart_locations.items():
        if f"/{MARTS}/" in loc:
            prefixes[loc.rstrip("/").rsplit(f"/{MARTS}/", 1)[0]] = new_lake
        tables[mart] = f"{new_lake}/{MARTS}/{mart}"
    ordered = sorted(prefixes, key=len, reverse=True)
    changes: list[tuple[Location, str]] = []
    left: list[Location] = []
    for row in rows:
        old = next((p for p in ordered if _under(row.value, p)), None)
        if old is None:
            left.append(row)
            continue
        new = prefixes[old] + row.value[len(old.rstrip("/")):]
        if new != row.value:
            changes.append((row, new))
    return RelocatePlan(prefixes, changes, left, tables)


def missing_mart_folders(plan: RelocatePlan, old_locations: dict[str, str]) -> list[str]:
    """Marts of a local new lake whose folder is not there (the lake's files were not moved): 'old -> new' each."""
    out = []
    for mart, new in sorted(plan.tables.items()):
        path = local_path(new)
        if "://" not in path and not Path(path).is_dir():
            out.append(f"{local_path(old_locations[mart])} -> {path}")
    return out


# Derby's rows (Hive metastore schema 2.3, schema APP): every place a location is kept
_READS = {
    "database": 'select "DB_ID", "DB_LOCATION_URI" from "APP"."DBS"',
    "storage": 'select "SD_ID", "LOCATION" from "APP"."SDS" where "LOCATION" is not null',
    "path": "select \"SERDE_ID\", \"PARAM_VALUE\" from \"APP\".\"SERDE_PARAMS\" where \"PARAM_KEY\" = 'path'",
}
_WRITES = {
    "database": 'update "APP"."DBS" set "DB_LOCATION_URI" = ? where "DB_ID" = ?',
    "storage": 'update "APP"."SDS" set "LOCATION" = ? where "SD_ID" = ?',
    "path": "update \"APP\".\"SERDE_PARAMS\" set \"PARAM_VALUE\" = ? where \"SERDE_ID\" = ? and \"PARAM_KEY\" = 'path'",
}
_DATABASES = 'select "NAME", "DB_LOCATION_URI" from "APP"."DBS"'
# a mart's table: its storage's location, or (a Spark datasource table Hive cannot describe) its serde's `path`, the
# storage's location being a placeholder then (<database folder>/<table>-__PLACEHOLDER__)
_MARTS = ('select t."TBL_NAME", s."SERDE_ID", s."LOCATION" from "APP"."TBLS" t join "APP"."DBS" d '
          "on t.\"DB_ID\" = d.\"DB_ID\" join \"APP\".\"SDS\" s on t.\"SD_ID\" = s.\"SD_ID\" where d.\"NAME\" = 'marts'")


def _query(conn: Any, sql: str, width: int = 2) -> list[tuple[Any, ...]]:
    stmt = conn.createStatement()
    try:
        rs = stmt.executeQuery(sql)
        out = []
        while rs.next():
            out.append((rs.getObject(1), *(rs.getString(i) for i in range(2, width + 1))))
        return out
    finally:
        stmt.close()


def _derby_gateway(settings: Settings) -> Any:
    """A JVM of its own with Spark's jars (they hold Derby) and no Spark session, its output appended to
    state/spark/jvm.log; the caller shuts it down."""
    # pyspark warns, on its first use of pandas, that it does not yet support pandas 3 (not used here)
    warnings.filterwarnings("ignore", message="PySpark does not yet fully support pandas", category=FutureWarning)
    from pyspark import SparkConf
    from pyspark.java_gateway import launch_gateway

    from pipelines.engines.spark_session import LOOPBACK, spark_conf

    conf = SparkConf(loadDefaults=False).setAll(list(spark_conf(settings).items()))
    with scoped_environ({"SPARK_LOCAL_IP": LOOPBACK}), (settings.spark_state_dir / "jvm.log").open("ab") as out:
        return launch_gateway(conf, popen_kwargs={"stdout": out, "stderr": out})


def _derby_url(settings: Settings) -> str:
    return f"jdbc:derby:;databaseName={settings.spark_state_dir / METASTORE}"


def _shutdown_derby(gateway: Any, settings: Settings) -> None:
    try:  # Derby says a clean shutdown with an exception (SQLState 08006)
        gateway.jvm.java.sql.DriverManager.getConnection(_derby_url(settings) + ";shutdown=true")
    except Exception:  # noqa: BLE001, S110 - the expected outcome
        pass
    gateway.shutdown()


def relocate(settings: Settings, echo: Callable[[str], None] = print) -> RelocatePlan:
    """Re-register every table, partition and database of the metastore at the configured lake and warehouse
    folder, then record that home. Raises LakeMoved (one line) when there is nothing to relocate or the lake's
    files are not at the new root."""
    state = settings.spark_state_dir
    if not (state / METASTORE).is_dir():
        raise LakeMoved(f"no Spark metastore at {state / METASTORE}: nothing to relocate (the first Spark run "
                        "makes it at the configured lake)")
    target = configured_home(settings)
    gateway = _derby_gateway(settings)
    try:
        gateway.jvm.java.lang.Class.forName("org.apache.derby.jdbc.EmbeddedDriver")
        conn = gateway.jvm.java.sql.DriverManager.getConnection(_derby_url(settings))  # no create=true
    except Exception as exc:  # py4j's error carries Derby's message
        gateway.shutdown()
        first = next((line for line in str(exc).splitlines() if "ERROR" in line or "Exception" in line), str(exc))
        raise LakeMoved(f"cannot open the Spark metastore {state / METASTORE} ({first.strip()}); is a Spark run "
                        "using it? try again when it is done") from exc
    try:
        conn.setAutoCommit(False)
        databases = {str(n): str(loc) for n, loc in _query(conn, _DATABASES)}
        rows = [Location(kind, key, str(value)) for kind, sql in _READS.items() for key, value in _query(conn, sql)]
        paths = {str(row.key): row.value for row in rows if row.kind == "path"}
        marts = {str(name): paths.get(str(serde)) or str(loc) for name, serde, loc in _query(conn, _MARTS, 3)
                 if paths.get(str(serde)) or loc}
        plan = plan_relocation(databases, marts, rows, target)
        missing = missing_mart_folders(plan, marts)
        if missing:
            raise LakeMoved(f"the lake's files are not at the new root {target.lake_root}: copy or move them first "
                            f"({'; '.join(missing[:3])}{'; ...' if len(missing) > 3 else ''}), then run `kubeledger "
                            "lake relocate` again")
        for kind in _WRITES:
            stmt = conn.prepareStatement(_WRITES[kind])
            try:
                for row, new in (c for c in plan.changes if c[0].kind == kind):
                    stmt.setString(1, new)
                    stmt.setObject(2, row.key)
                    stmt.executeUpdate()
            finally:
                stmt.close()
        conn.commit()
    except BaseException:
        conn.rollback()
        raise
    finally:
        conn.close()
        _shutdown_derby(gateway, settings)
    write_home(state, target)
    counts = {k: sum(1 for r, _ in plan.changes if r.kind == k) for k in _WRITES}
    if not plan.changes:
        echo(f"the Spark metastore's tables are already at {target.lake_root} (marts) and {target.warehouse_dir} "
             "(databases): nothing to change")
        return plan
    echo(f"re-registered {counts['storage']} table and partition locations and {counts['database']} databases: "
         f"marts at {target.lake_root}/{MARTS}, databases under {target.warehouse_dir}"
         + (f"; {len(plan.left)} locations elsewhere left as they are" if plan.left else ""))
    return plan
