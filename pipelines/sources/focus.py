"""FOCUS cloud bills (FinOps Open Cost and Usage Specification 1.0-1.2) → raw.focus_charges.

`billing.focus_path` names a folder (its *.csv, *.csv.gz and *.parquet files, recursively), one file or a glob,
local or in object storage (s3://, gs://, az://, abfs[s]:// URIs: the same rules over the store's prefixes,
pipelines/sources/objectstore.py registers the store's fsspec filesystem on the connection). DuckDB reads them
(read_csv / read_parquet, union_by_name: files of different FOCUS versions and providers mix),
every column as text, and this module types the FOCUS columns it knows into the raw table. A FOCUS column that no
file has is NULL; provider-specific columns (`x_...`) are not kept.

A daily run replaces the charge days [run start - `billing.reread_days`, run end) in one transaction: bills change
for days after the charge period (late rows, restatements with ChargeClass = Correction), so each run re-reads
the last days and the newest bill rows for them win. A day of the range without rows in the bill is emptied.

A bill that cannot be used (no file, unreadable, a required column missing, a value that is not a number or a
date, an unknown ChargeCategory) never fails the run: nothing is replaced, the last good load stays, and the
source-health ledger gets one 'billing' problem saying what to fix.
"""

from __future__ import annotations

import glob
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import duckdb

from pipelines.settings import Settings
from pipelines.sources import objectstore
from pipelines.warehouse.source_health import Problem

TABLE = "focus_charges"
CHARGE_CATEGORIES = ("Usage", "Purchase", "Tax", "Credit", "Adjustment")
BILL_SUFFIXES = (".csv", ".csv.gz", ".parquet")
REQUIRED = ("ChargePeriodStart", "ChargeCategory", "BilledCost")
# raw column -> (FOCUS column names, first found wins; kind). Kinds: text, number, timestamp, tags.
COLUMNS: dict[str, tuple[tuple[str, ...], str]] = {
    "billing_period_start": (("BillingPeriodStart",), "timestamp"),
    "billing_period_end": (("BillingPeriodEnd",), "timestamp"),
    "charge_period_start": (("ChargePeriodStart",), "timestamp"),
    "charge_period_end": (("ChargePeriodEnd",), "timestamp"),
    "charge_category": (("ChargeCategory",), "text"),
    "charge_class": (("ChargeClass",), "text"),
    "charge_description": (("ChargeDescription",), "text"),
    "charge_frequency": (("ChargeFrequency",), "text"),
    "provider_name": (("ProviderName", "ServiceProviderName"), "text"),
    "publisher_name": (("PublisherName",), "text"),
    "invoice_issuer_name": (("InvoiceIssuerName", "InvoiceIssuer"), "text"),
    "invoice_id": (("InvoiceId",), "text"),
    "billing_account_id": (("BillingAccountId",), "text"),
    "billing_account_name": (("BillingAccountName",), "text"),
    "sub_account_id": (("SubAccountId",), "text"),
    "sub_account_name": (("SubAccountName",), "text"),
    "service_name": (("ServiceName",), "text"),
    "service_category": (("ServiceCategory",), "text"),
    "region_id": (("RegionId", "Region"), "text"),
    "region_name": (("RegionName",), "text"),
    "availability_zone": (("AvailabilityZone",), "text"),
    "resource_id": (("ResourceId",), "text"),
    "resource_name": (("ResourceName",), "text"),
    "resource_type": (("ResourceType",), "text"),
    "sku_id": (("SkuId",), "text"),
    "pricing_category": (("PricingCategory",), "text"),
    "pricing_quantity": (("PricingQuantity",), "number"),
    "pricing_unit": (("PricingUnit",), "text"),
    "consumed_quantity": (("ConsumedQuantity",), "number"),
    "consumed_unit": (("ConsumedUnit",), "text"),
    "billing_currency": (("BillingCurrency",), "text"),
    "list_cost": (("ListCost",), "number"),
    "billed_cost": (("BilledCost",), "number"),
    "effective_cost": (("EffectiveCost",), "number"),
    "contracted_cost": (("ContractedCost",), "number"),
    "commitment_discount_id": (("CommitmentDiscountId",), "text"),
    "commitment_discount_name": (("CommitmentDiscountName",), "text"),
    "commitment_discount_category": (("CommitmentDiscountCategory",), "text"),
    "commitment_discount_type": (("CommitmentDiscountType",), "text"),
    "commitment_discount_status": (("CommitmentDiscountStatus",), "text"),
    "commitment_discount_quantity": (("CommitmentDiscountQuantity",), "number"),
    "tags": (("Tags",), "tags"),
}
_OFFSET = r"(Z|[+-][0-9]{2}(:?[0-9]{2})?)$"


class FocusBillError(ValueError):
    """A bill that cannot be loaded; the message names the file or column and what is wrong."""


def bill_location(settings: Settings, key: str = "focus_path") -> str:
    """`billing.<key>` as read: an object-store URI as written, a local path resolved (relative to the settings)."""
    raw = getattr(settings.billing, key) or ""
    return raw if objectstore.scheme(raw) else str(settings.resolve(raw))


@contextmanager
def _store(con: duckdb.DuckDBPyConnection, where: str) -> Iterator[Any]:
    """For an object-store URI, its fsspec filesystem, registered on `con` for the block; None for a local path."""
    if not objectstore.scheme(where):
        yield None
        return
    fs = objectstore.filesystem(where)
    with objectstore.registered(con, fs):
        yield fs


def bill_files(settings: Settings, key: str = "focus_path", fs: Any = None) -> list[str]:
    """The bill files `billing.<key>` names (focus_path, cur2_path): a folder's CSV/Parquet files (recursively), a
    glob's, one file; in object storage (`fs`: objectstore.filesystem) a prefix's objects, a glob's, one object."""
    raw = getattr(settings.billing, key) or ""
    if fs is not None:
        return objectstore.list_files(fs, raw, BILL_SUFFIXES)
    where = settings.resolve(raw)
    if any(ch in raw for ch in "*?["):
        files = [Path(p) for p in glob.glob(str(where), recursive=True)]
    elif where.is_dir():
        files = [p for p in where.rglob("*") if p.name.lower().endswith(BILL_SUFFIXES)]
    elif where.exists():
        files = [where]
    else:
        raise FocusBillError(f"{where}: not found")
    files = sorted(p for p in files if p.is_file() and p.name.lower().endswith(BILL_SUFFIXES))
    if not files:
        raise FocusBillError(f"{where}: no {', '.join(BILL_SUFFIXES)} bill files there")
    return [str(p) for p in files]


def _quoted(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _parquet_as_text(con: duckdb.DuckDBPyConnection, parquet: list[str]) -> str:
    """The Parquet files as a relation of text columns, like the CSV files' (nested values as JSON text), so the two
    union by name whatever types each file gives a column."""
    con.execute("create or replace temp table _kl_focus_pq as select * from read_parquet($files, "
                "union_by_name = true, filename = true)", {"files": parquet})
    cols = []
    for name, col_type, *_ in con.execute("describe _kl_focus_pq").fetchall():
        nested = str(col_type).upper().startswith(("MAP", "STRUCT")) or str(col_type).endswith("]")
        value = f"to_json({_quoted(name)})" if nested else _quoted(name)
        cols.append(f"cast({value} as varchar) as {_quoted(name)}")
    return f"select {', '.join(cols)} from _kl_focus_pq"  # noqa: S608 - names quoted from the files' schema


def _read_files(con: duckdb.DuckDBPyConnection, files: list[str]) -> list[tuple[str, str]]:
    """Read every file (path or URI) into the temp table _kl_focus_read, every column as text (file names in
    `filename`); returns its (column, type) pairs. The file lists are bound parameters."""
    csv = [p for p in files if not p.lower().endswith(".parquet")]
    parquet = [p for p in files if p.lower().endswith(".parquet")]
    parts = []
    if csv:
        parts.append("select * from read_csv($csv, header = true, all_varchar = true, union_by_name = true, "
                     "filename = true)")
    if parquet:
        parts.append(_parquet_as_text(con, parquet))
    params = {"csv": csv} if csv else {}
    con.execute("create or replace temp table _kl_focus_read as " + " union all by name ".join(parts), params)
    return [(r[0], r[1]) for r in con.execute("describe _kl_focus_read").fetchall()]


def _expr(column: str | None, kind: str) -> str:
    """The typed SQL expression of one FOCUS column, read from text (NULL when no file has it). `column` comes from
    the files' header but is only used when it equals a name of COLUMNS (matched case-insensitively), quoted."""
    if column is None:
        return {"number": "cast(null as double)", "timestamp": "cast(null as timestamp)"}.get(
            kind, "cast(null as varchar)")
    text = f"nullif(trim({_quoted(column)}), '')"
    if kind == "number":
        return f"try_cast({text} as double)"
    if kind == "timestamp":  # an offset (Z, +05:00, Parquet's +00) is honoured; a naive value is UTC
        return (f"case when regexp_matches({text}, '{_OFFSET}') "
                f"then timezone('UTC', try_cast({text} as timestamptz)) else try_cast({text} as timestamp) end")
    return text  # text and tags (JSON object text)


def _select_sql(described: list[tuple[str, str]]) -> tuple[str, dict[str, list[str]]]:
    """SELECT list (raw column order) over _kl_focus_read, and raw column -> the file columns it reads (a column
    renamed between FOCUS versions reads every name the files have, the first non-NULL wins)."""
    by_lower = {name.lower(): (name, col_type) for name, col_type in described}
    missing = [c for c in REQUIRED if c.lower() not in by_lower]
    if missing:
        raise FocusBillError(f"required FOCUS column {missing[0]} is missing (the files have: "
                             f"{', '.join(n for n, _ in described if n != 'filename')[:300]})")
    exprs, found = [], {}
    for raw, (names, kind) in COLUMNS.items():
        hits = [by_lower[n.lower()] for n in names if n.lower() in by_lower]
        if hits:
            found[raw] = [name for name, _ in hits]
        parts = [_expr(name, kind) for name, _ in hits] or [_expr(None, kind)]
        exprs.append(f"{parts[0] if len(parts) == 1 else 'coalesce(' + ', '.join(parts) + ')'} as {raw}")
    return ", ".join(exprs), found


def _stage(con: duckdb.DuckDBPyConnection, files: list[str]) -> dict[str, list[str]]:
    """The typed rows of every file in the temp table _kl_focus_typed, checked; raises FocusBillError."""
    select, found = _select_sql(_read_files(con, files))
    con.execute(f"create or replace temp table _kl_focus_typed as select cast(charge_period_start as date) "  # noqa: S608
                f"as charge_date, * from (select filename as source_file, {select} from _kl_focus_read)")
    checks = (("ChargePeriodStart", "charge_period_start is null", "is not a date-time (e.g. 2026-02-01T00:00:00Z)"),
              ("BilledCost", "billed_cost is null", "is not a number"),
              ("ChargeCategory", "charge_category is null or charge_category not in (select unnest($cats))",
               f"is not a FOCUS ChargeCategory ({', '.join(CHARGE_CATEGORIES)})"))
    for column, bad, why in checks:
        params = {"cats": list(CHARGE_CATEGORIES)} if "$cats" in bad else {}
        row = con.execute(f"select count(*), min(source_file) from _kl_focus_typed where {bad}",  # noqa: S608
                          params).fetchone()
        if row and row[0]:
            raise FocusBillError(f"{row[1]}: {row[0]} row(s) whose {column} {why}")
    _check_values(con, found)
    return found


def _check_values(con: duckdb.DuckDBPyConnection, found: dict[str, list[str]]) -> None:
    """A number or date-time column with text that does not read as one is an error, not a silent NULL."""
    for raw, columns in found.items():
        kind = COLUMNS[raw][1]
        if kind not in ("number", "timestamp"):
            continue
        for column in columns:
            _check_column(con, column, kind)


def _check_column(con: duckdb.DuckDBPyConnection, column: str, kind: str) -> None:
    typed, text = _expr(column, kind), _expr(column, "text")
    row = con.execute(f"select count(*), min(filename), min({text}) from _kl_focus_read "  # noqa: S608
                      f"where {text} is not null and ({typed}) is null").fetchone()
    if row and row[0]:
        what = "a number" if kind == "number" else "a date-time (e.g. 2026-02-01T00:00:00Z)"
        raise FocusBillError(f"{row[1]}: {row[0]} row(s) whose {column} is not {what}, e.g. {row[2]!r:.60}")


@dataclass(frozen=True)
class BillExport:
    """One kind of bill export, for the one loader below: FOCUS here, AWS CUR 2.0 in cur2.py. Its `stage` reads and
    types the files into the temp table `typed` (charge_date, source_file, *columns), raising FocusBillError."""

    key: str  # billing.<key>: focus_path, cur2_path
    table: str  # raw.<table>, replaced per charge_date
    typed: str  # the temp table `stage` fills
    columns: tuple[str, ...]  # the raw table's typed columns, in its order
    stage: Callable[[duckdb.DuckDBPyConnection, list[str]], object]
    files_noun: str  # check-config's count: "bill file(s)"
    rows_noun: str  # the ledger's kept rows: "bill rows"
    what: str  # the ledger's subject: "the FOCUS bill at billing.focus_path"
    hint: str  # the ledger's fix


def _replace_days(con: duckdb.DuckDBPyConnection, export: BillExport, first: date, end: date) -> tuple[int, int]:
    """Replace raw.<export.table>'s charge days [first, end) with the staged rows of those days, in one transaction.
    Returns (rows written, days with rows)."""
    table = f"raw.{export.table}"
    con.execute("begin transaction")
    try:
        con.execute(f"delete from {table} where charge_date >= ? and charge_date < ?", [first, end])  # noqa: S608
        cols = ", ".join(["charge_date", "source_file", *export.columns])
        con.execute(f"insert into {table} ({cols}, _extracted_at) select {cols}, "  # noqa: S608
                    f"cast(timezone('UTC', now()) as timestamp) from {export.typed} "
                    "where charge_date >= ? and charge_date < ?", [first, end])
        rows, days = con.execute(f"select count(*), count(distinct charge_date) from {table} "  # noqa: S608
                                 "where charge_date >= ? and charge_date < ?", [first, end]).fetchone()
        con.execute("commit")
    except BaseException:
        con.execute("rollback")
        raise
    return int(rows), int(days)


def _drop_temp(con: duckdb.DuckDBPyConnection, typed: str = "_kl_focus_typed") -> None:
    con.execute("drop table if exists _kl_focus_read")
    con.execute(f"drop table if exists {typed}")
    con.execute("drop table if exists _kl_focus_pq")


def load_bills(export: BillExport, settings: Settings, con: duckdb.DuckDBPyConnection, start: date,
               end: date) -> dict[str, Any]:
    """Load the configured export's charge days [start - billing.reread_days, end) into raw.<export.table>.
    Never raises for a bad file: {"configured", "first_day", "end_day", "files", "rows", "days", "problems"}."""
    first = start - timedelta(days=settings.billing.reread_days)
    path = getattr(settings.billing, export.key)
    summary: dict[str, Any] = {"configured": bool(path), "first_day": first.isoformat(),
                               "end_day": end.isoformat(), "files": 0, "rows": 0, "days": 0, "problems": []}
    if not summary["configured"]:
        return summary
    where = bill_location(settings, export.key)
    try:
        with _store(con, where) as fs:
            files = bill_files(settings, export.key, fs)
            summary["files"] = len(files)
            export.stage(con, files)
            summary["rows"], summary["days"] = _replace_days(con, export, first, end)
    except (FocusBillError, duckdb.Error, OSError) as exc:
        summary["problems"].append(_problem(con, export, where, exc, first, end))
    except Exception as exc:  # a store's client error that escaped DuckDB's wrapping: the bill's, not the run's
        if not objectstore.scheme(where):
            raise
        summary["problems"].append(_problem(con, export, where, exc, first, end))
    finally:
        _drop_temp(con, export.typed)
    return summary


def describe_export(export: BillExport, settings: Settings) -> str:
    """`kubeledger check-config`: read and check every configured file of the export in an in-memory DuckDB (nothing
    is written); raises FocusBillError or duckdb.Error saying what is wrong."""
    con = duckdb.connect()
    try:
        with _store(con, bill_location(settings, export.key)) as fs:
            files = bill_files(settings, export.key, fs)
            export.stage(con, files)
        rows, first, last = con.execute("select count(*), min(charge_date), max(charge_date) "  # noqa: S608
                                        f"from {export.typed}").fetchone()
    finally:
        con.close()
    return f"{len(files)} {export.files_noun}, {rows} rows, charge days {first}..{last}"


def _problem(con: duckdb.DuckDBPyConnection, export: BillExport, where: str, exc: Exception, first: date,
             end: date) -> Problem:
    cause = re.sub(r"\s+", " ", str(exc)).strip()[:300]
    try:
        kept = con.execute(f"select count(*) from raw.{export.table} "  # noqa: S608
                           "where charge_date >= ? and charge_date < ?", [first, end]).fetchone()[0]
    except duckdb.Error:
        kept = 0
    days = f"{first}..{end - timedelta(days=1)}"
    instead = (f"the {kept} {export.rows_noun} loaded before for {days} stay in use" if kept
               else f"there are no {export.rows_noun} for {days}")
    message = f"{export.what} could not be loaded ({cause}); {instead}"
    hint = getattr(exc, "hint", None)  # objectstore.ObjectStoreError: the store's own fix
    if hint is None and objectstore.scheme(where) and isinstance(exc, (OSError, duckdb.IOException)):
        hint = objectstore.hint(where)  # a read through the store that failed after its listing
    return Problem("billing", "file", message, hint or export.hint, [where])


FOCUS = BillExport(
    key="focus_path", table=TABLE, typed="_kl_focus_typed", columns=tuple(COLUMNS), stage=_stage,
    files_noun="bill file(s)", rows_noun="bill rows", what="the FOCUS bill at billing.focus_path",
    hint=("fix or replace the bill files (FOCUS 1.0-1.2 CSV or Parquet with ChargePeriodStart, ChargeCategory and "
          "BilledCost), then re-run the day to load them"))


def load_focus_bills(settings: Settings, con: duckdb.DuckDBPyConnection, start: date, end: date) -> dict[str, Any]:
    """Load the configured FOCUS bills' charge days [start - billing.reread_days, end) into raw.focus_charges."""
    return load_bills(FOCUS, settings, con, start, end)


def describe_bills(settings: Settings) -> str:
    """`kubeledger check-config` for billing.focus_path (describe_export)."""
    return describe_export(FOCUS, settings)
