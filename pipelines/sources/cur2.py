"""AWS CUR 2.0 (the AWS Data Exports "CUR 2.0" table, COST_AND_USAGE_REPORT) → raw.cur2_line_items.

`billing.cur2_path` names a folder (its *.parquet, *.csv and *.csv.gz files, recursively), one file or a glob: the
export's data files as AWS writes them to S3, read there (an s3:// URI: pipelines/sources/objectstore.py) or synced to
a local folder. The CUR 2.0 columns kubeledger maps to FOCUS
are kept under their CUR names, typed; the mapping to the FOCUS columns of stg_focus__charges is dbt's
(models/staging/stg_cur2__line_items.sql, its sources named in _staging__models.yml). A column no file has is NULL;
resource_tags (a map) is kept as JSON object text.

Loading is the FOCUS loader's (pipelines/sources/focus.py: load_bills, given this module's BillExport CUR2): files
read by DuckDB as text, every column typed and checked, the charge days [run start - `billing.reread_days`, run end)
replaced in one transaction, the day being the UTC day of line_item_usage_start_date. A file that cannot be used never
fails the run: nothing is replaced, the last good load stays, and the source-health ledger gets one 'billing' problem
saying what to fix.
"""

from __future__ import annotations

from datetime import date
from typing import Any

import duckdb

from pipelines.settings import Settings
from pipelines.sources.focus import (
    BillExport,
    FocusBillError,
    _check_column,
    _expr,
    _read_files,
    describe_export,
    load_bills,
)

TABLE = "cur2_line_items"
REQUIRED = ("line_item_usage_start_date", "line_item_line_item_type", "line_item_unblended_cost")
# CUR 2.0 column -> kind (text, number, timestamp, tags); the raw table's columns, in its order. Names and meanings:
# AWS Data Exports user guide, "Cost and Usage Report (CUR) 2.0" table dictionary (table-dictionary-cur2*.html).
COLUMNS: dict[str, str] = {
    "bill_billing_period_start_date": "timestamp",
    "bill_billing_period_end_date": "timestamp",
    "bill_payer_account_id": "text",
    "bill_payer_account_name": "text",
    "bill_invoicing_entity": "text",
    "bill_invoice_id": "text",
    "line_item_usage_start_date": "timestamp",
    "line_item_usage_end_date": "timestamp",
    "line_item_line_item_type": "text",
    "line_item_line_item_description": "text",
    "line_item_usage_account_id": "text",
    "line_item_usage_account_name": "text",
    "line_item_product_code": "text",
    "line_item_usage_type": "text",
    "line_item_resource_id": "text",
    "line_item_availability_zone": "text",
    "line_item_currency_code": "text",
    "line_item_usage_amount": "number",
    "line_item_unblended_cost": "number",
    "product_servicecode": "text",
    "product_region_code": "text",
    "pricing_term": "text",
    "pricing_public_on_demand_cost": "number",
    "savings_plan_savings_plan_a_r_n": "text",
    "savings_plan_savings_plan_effective_cost": "number",
    "savings_plan_total_commitment_to_date": "number",
    "savings_plan_used_commitment": "number",
    "reservation_reservation_a_r_n": "text",
    "reservation_effective_cost": "number",
    "reservation_unused_amortized_upfront_fee_for_billing_period": "number",
    "reservation_unused_recurring_fee": "number",
    "resource_tags": "tags",
}


def _stage(con: duckdb.DuckDBPyConnection, files: list[str]) -> None:
    """The typed rows of every file in the temp table _kl_cur2_typed, checked; raises FocusBillError."""
    described = _read_files(con, files)
    by_lower = {name.lower(): name for name, _ in described}
    missing = [c for c in REQUIRED if c not in by_lower]
    if missing:
        raise FocusBillError(f"required CUR 2.0 column {missing[0]} is missing (the files have: "
                             f"{', '.join(n for n, _ in described if n != 'filename')[:300]})")
    select = ", ".join(f"{_expr(by_lower.get(col), kind)} as {col}" for col, kind in COLUMNS.items())
    con.execute(f"create or replace temp table _kl_cur2_typed as select cast(line_item_usage_start_date as date) "  # noqa: S608
                f"as charge_date, * from (select filename as source_file, {select} from _kl_focus_read)")
    for column, why in (("line_item_usage_start_date", "is not a date-time (e.g. 2026-02-01T00:00:00Z)"),
                        ("line_item_unblended_cost", "is not a number"),
                        ("line_item_line_item_type", "is empty")):
        row = con.execute(f"select count(*), min(source_file) from _kl_cur2_typed where {column} is null"  # noqa: S608
                          ).fetchone()
        if row and row[0]:
            raise FocusBillError(f"{row[1]}: {row[0]} row(s) whose {column} {why}")
    for col, kind in COLUMNS.items():
        if kind in ("number", "timestamp") and col in by_lower:
            _check_column(con, by_lower[col], kind)


CUR2 = BillExport(
    key="cur2_path", table=TABLE, typed="_kl_cur2_typed", columns=tuple(COLUMNS), stage=_stage,
    files_noun="CUR 2.0 file(s)", rows_noun="CUR rows", what="the AWS CUR 2.0 export at billing.cur2_path",
    hint=("fix or replace the export files (CUR 2.0 Parquet or CSV with line_item_usage_start_date, "
          "line_item_line_item_type and line_item_unblended_cost), then re-run the day to load them"))


def load_cur2_bills(settings: Settings, con: duckdb.DuckDBPyConnection, start: date, end: date) -> dict[str, Any]:
    """Load the configured CUR 2.0 files' charge days [start - billing.reread_days, end) into raw.cur2_line_items."""
    return load_bills(CUR2, settings, con, start, end)


def describe_cur2(settings: Settings) -> str:
    """`kubeledger check-config` for billing.cur2_path (describe_export)."""
    return describe_export(CUR2, settings)
