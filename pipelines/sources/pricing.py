"""Validated loaders for user price files → raw.price_sheet, raw.price_node_csv, raw.price_custom.

Price files are hand-edited, so every problem stops the load with a `PricingFileError` whose message names
the file, the line (CSV) and the field, and says how to fix it. Nothing is guessed: a value that cannot be
read is an error, never a 0. Each file replaces its own partition (`source_file` = absolute path).

Plausibility thresholds for default.json-shaped files (METHOD.md A4, the hourly/monthly unit trap): OpenCost's
JSON is hourly, its ConfigMap is monthly (÷730). Read as hourly, a monthly file gives prices ~730× too high, so
we reject hourly values above:

    CPU, spotCPU      1.5  $/vCPU-h   (default 0.031611; the priciest cloud vCPU-h is ~0.3; monthly default 23)
    RAM, spotRAM      0.5  $/GiB-h    (default 0.004237; monthly default 3.09)
    GPU, spotGPU      50   $/GPU-h    (default 0.95, H100 ~12; a monthly T4 is ~250)
    storage           0.01 $/GiB-h    (= 7.3 $/GiB-month; default 0.0000548, monthly default 0.04)
    egress keys       1.0  $/GiB      (defaults 0.01-0.143; never monthly)
    load balancer     10   $/h        (LoadBalancer, defaultLBPrice, forwarding rules; defaults ~0.025)
    LBIngressDataCost 1.0  $/GiB      (default 0.008)

The same table caps the other files: an instance price sheet row (hourly_usd, spot_hourly_usd) and a Kubecost CSV
`node` row at 1000 $/instance-h (the largest cloud instances list at ~100-400 $/h), a CSV `gpu` row at the GPU cap
and a CSV `pv` row at 1000 $/volume-h. A price written as text must be a plain decimal in ASCII digits
(`0.096`, `9.6e-2`): `1_000`, `1,000`, non-ASCII digits ('١٢', '１') and NaN/inf are rejected, and a value above
its cap (`1e300`) is implausible. A key given twice in a JSON file is an error (JSON parsers keep the last).
"""

from __future__ import annotations

import csv
import json
import math
import re
from collections.abc import Iterator, Sequence
from datetime import datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

import duckdb
import pandas as pd

from pipelines.settings import PROVIDERS, Settings, file_problem
from pipelines.timeutil import utc_now

from . import base
from .base import ExtractResult
from .faults import Problem

HOURS_PER_MONTH = 730  # OpenCost's monthly convention
SHEET_REQUIRED = ("provider", "region", "instance_type", "hourly_usd")
SHEET_OPTIONAL = ("spot_hourly_usd",)
NODE_CSV_COLUMNS = ("EndTimestamp", "InstanceID", "Region", "AssetClass", "InstanceIDField", "InstanceType",
                    "MarketPriceHourly", "Version")
NODE_CSV_REQUIRED = ("InstanceID", "AssetClass", "MarketPriceHourly")
ASSET_CLASSES = ("node", "gpu", "pv")
# InstanceIDField values the Kubecost/OpenCost CSV provider matches on (SOURCES.md §9); others only warn.
KNOWN_ID_FIELDS = ("metadata.name", "spec.providerID", "nvidia.com/gpu_type", "gpu.nvidia.com/class",
                   "spec.storageClassName")

# default.json keys that are prices; everything else (provider, description, spotLabel, projectID, keys and
# secrets for billing APIs...) is configuration and is skipped.
CUSTOM_PRICE_KEYS = (
    "CPU", "spotCPU", "RAM", "spotRAM", "GPU", "spotGPU", "storage",
    "zoneNetworkEgress", "regionNetworkEgress", "internetNetworkEgress",
    "LoadBalancer", "defaultLBPrice", "firstFiveForwardingRulesCost", "additionalForwardingRuleCost",
    "LBIngressDataCost",
)
MONTHLY_KEYS = frozenset({"CPU", "spotCPU", "RAM", "spotRAM", "GPU", "spotGPU", "storage"})
CONVENTIONS = ("hourly", "monthly")
# key -> (max plausible hourly value, unit) — see the module docstring
PLAUSIBLE_MAX: dict[str, tuple[float, str]] = {
    "CPU": (1.5, "$/vCPU-h"), "spotCPU": (1.5, "$/vCPU-h"),
    "RAM": (0.5, "$/GiB-h"), "spotRAM": (0.5, "$/GiB-h"),
    "GPU": (50.0, "$/GPU-h"), "spotGPU": (50.0, "$/GPU-h"),
    "storage": (0.01, "$/GiB-h"),
    "zoneNetworkEgress": (1.0, "$/GiB"), "regionNetworkEgress": (1.0, "$/GiB"),
    "internetNetworkEgress": (1.0, "$/GiB"),
    "LoadBalancer": (10.0, "$/h"), "defaultLBPrice": (10.0, "$/h"),
    "firstFiveForwardingRulesCost": (10.0, "$/h"), "additionalForwardingRuleCost": (10.0, "$/h"),
    "LBIngressDataCost": (1.0, "$/GiB"),
    # whole-asset prices (instance price sheet, Kubecost CSV)
    "instance": (1000.0, "$/instance-h"),
    "volume": (1000.0, "$/volume-h"),
}
# Kubecost CSV AssetClass -> its PLAUSIBLE_MAX entry
NODE_CSV_CAPS = {"node": "instance", "gpu": "GPU", "pv": "volume"}
# a plain decimal in ASCII digits (float() also takes '1_000', '١٢' and '１', which no price file means)
DECIMAL_RE = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]{1,3})?")


class PricingFileError(ValueError):
    """A price file that cannot be used; the message names the file, line and field, and the fix."""


# --- shared helpers -------------------------------------------------------------------------------------

def _now() -> datetime:
    return utc_now()


def _resolve(path: str | Path) -> Path:
    p = Path(path).expanduser().resolve()
    problem = file_problem(p)
    if problem == "not found":
        raise PricingFileError(f"{p}: price file not found (check the path in kubeledger.yaml `pricing:`)")
    if problem:
        raise PricingFileError(f"{p}: {problem}; a price file must be a regular file (check the path in "
                               "kubeledger.yaml `pricing:`)")
    return p


def _where(file: Path, line: int | None, field: str | None) -> str:
    out = str(file)
    if line is not None:
        out += f", line {line}"
    if field is not None:
        out += f", field {field}"
    return out


def _price(raw: Any, file: Path, line: int | None, field: str, required: bool,
           cap: str | None = None) -> float | None:
    """A finite, non-negative number (at most PLAUSIBLE_MAX[cap] when given); '' is missing (an error when
    required). Text must be a plain ASCII decimal."""
    where = _where(file, line, field)
    if isinstance(raw, bool):
        raise PricingFileError(f"{where}: {raw!r} is not a price; write a number such as 0.096")
    if raw is None or (isinstance(raw, str) and raw.strip() == ""):
        if required:
            raise PricingFileError(f"{where}: the price is empty; write a number such as 0.096 (USD)")
        return None
    try:
        value = float(raw.strip()) if isinstance(raw, str) else float(raw)
    except (TypeError, ValueError, OverflowError):
        raise PricingFileError(
            f"{where}: {raw!r} is not a number; write a plain decimal such as 0.096 (no currency sign, "
            "no thousands separator, '.' as the decimal point)"
        ) from None
    if not math.isfinite(value):
        raise PricingFileError(f"{where}: {raw!r} is not a finite price (NaN/inf); write the real price "
                               "or remove the row")
    if isinstance(raw, str) and not DECIMAL_RE.fullmatch(raw.strip()):
        raise PricingFileError(
            f"{where}: {raw!r} is not a plain decimal; write ASCII digits with '.' as the decimal point, such as "
            "0.096 (no '_' or thousands separator)"
        )
    if value < 0:
        raise PricingFileError(f"{where}: {raw!r} is negative; prices must be >= 0")
    if cap is not None and value > PLAUSIBLE_MAX[cap][0]:
        max_value, unit = PLAUSIBLE_MAX[cap]
        raise PricingFileError(f"{where}: {raw!r} is implausible (> {max_value:g} {unit}); check the unit "
                               "and the decimal point")
    return value


def _read_csv(file: Path, allowed: Sequence[str], required: Sequence[str],
              ) -> Iterator[tuple[int, dict[str, str]]]:
    """(line number, {canonical column: stripped cell}) for each non-blank record; header checked first."""
    canonical = {c.lower(): c for c in allowed}
    try:
        handle = file.open(newline="", encoding="utf-8-sig")  # tolerate a spreadsheet's BOM
    except OSError as exc:
        raise PricingFileError(f"{file}: cannot read the file: {exc}") from exc
    with handle:
        reader = csv.reader(handle)
        try:
            header = next(reader)
        except StopIteration:
            raise PricingFileError(f"{file}: the file is empty; the first line must be the header "
                                   f"{','.join(allowed)}") from None
        except (csv.Error, UnicodeDecodeError) as exc:
            raise PricingFileError(f"{_where(file, 1, None)}: not a readable CSV header: {exc}") from exc
        names: list[str] = []
        for i, cell in enumerate(header, start=1):
            name = cell.strip()
            if name.lower() not in canonical:
                raise PricingFileError(
                    f"{_where(file, 1, name or f'#{i}')}: unknown column {name!r}; "
                    f"allowed columns: {', '.join(allowed)}"
                )
            if canonical[name.lower()] in names:
                raise PricingFileError(f"{_where(file, 1, name)}: column {name!r} appears twice in the header")
            names.append(canonical[name.lower()])
        missing = [c for c in required if c not in names]
        if missing:
            raise PricingFileError(
                f"{_where(file, 1, missing[0])}: required column {missing[0]!r} is missing; the header must "
                f"contain {', '.join(required)}"
            )
        try:
            for cells in reader:
                line = reader.line_num
                if not any(c.strip() for c in cells):
                    continue
                if len(cells) > len(names):
                    raise PricingFileError(
                        f"{_where(file, line, None)}: {len(cells)} fields but the header has {len(names)}; "
                        "quote values that contain commas"
                    )
                row = {n: "" for n in names}
                row.update({n: c.strip() for n, c in zip(names, cells, strict=False)})
                yield line, row
        except (csv.Error, UnicodeDecodeError) as exc:
            raise PricingFileError(f"{_where(file, reader.line_num, None)}: not readable as CSV: {exc}") from exc


def _required_text(row: dict[str, str], file: Path, line: int, field: str, example: str) -> str:
    value = row.get(field, "")
    if not value:
        raise PricingFileError(f"{_where(file, line, field)}: the value is empty; write e.g. {example}")
    return value


def _result(table: str, rows: list[dict[str, Any]], columns: Sequence[str], dtypes: dict[str, str],
            file: Path, metadata: dict[str, Any]) -> ExtractResult:
    frame = pd.DataFrame(rows, columns=list(columns))
    for col, dtype in dtypes.items():
        frame[col] = frame[col].astype(dtype)
    frame["_extracted_at"] = pd.Series([_now()] * len(frame), dtype="datetime64[us]")
    return ExtractResult(batches={table: frame}, partitions=[{"source_file": str(file)}],
                         metadata={"file": str(file), "rows": len(frame), **metadata})


def _unique_keys(pairs: list[tuple[str, Any]], file: Path) -> dict[str, Any]:
    """json object_pairs_hook: a key given twice is an error (json.loads would keep the last value)."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise PricingFileError(f"{_where(file, None, key)}: key {key!r} appears twice; JSON keeps only the "
                                   "last value silently: keep one")
        out[key] = value
    return out


# --- instance price sheet -------------------------------------------------------------------------------

def load_price_sheet(path: str | Path) -> ExtractResult:
    """provider,region,instance_type,hourly_usd[,spot_hourly_usd] → raw.price_sheet.

    Joined downstream on (provider, region, instance_type), so each such triple may appear once.
    """
    file = _resolve(path)
    rows: list[dict[str, Any]] = []
    seen: dict[tuple[str, str, str], int] = {}
    for line, row in _read_csv(file, SHEET_REQUIRED + SHEET_OPTIONAL, SHEET_REQUIRED):
        provider = _required_text(row, file, line, "provider", "aws").lower()
        if provider not in PROVIDERS:
            raise PricingFileError(
                f"{_where(file, line, 'provider')}: {row['provider']!r} is not a known provider; "
                f"use one of {', '.join(PROVIDERS)}"
            )
        region = _required_text(row, file, line, "region", "us-east-1")
        instance_type = _required_text(row, file, line, "instance_type", "m5.large")
        key = (provider, region, instance_type)
        if key in seen:
            raise PricingFileError(
                f"{_where(file, line, 'instance_type')}: duplicate price for {provider}/{region}/{instance_type} "
                f"on lines {seen[key]} and {line}; keep one row per (provider, region, instance_type)"
            )
        seen[key] = line
        rows.append({
            "source_file": str(file), "line_no": line, "provider": provider, "region": region,
            "instance_type": instance_type,
            "hourly_usd": _price(row["hourly_usd"], file, line, "hourly_usd", required=True, cap="instance"),
            "spot_hourly_usd": _price(row.get("spot_hourly_usd"), file, line, "spot_hourly_usd", required=False,
                                      cap="instance"),
        })
    warnings = [] if rows else [f"{file}: no price rows (header only)"]
    return _result(
        "price_sheet", rows,
        ["source_file", "line_no", "provider", "region", "instance_type", "hourly_usd", "spot_hourly_usd"],
        {"line_no": "int32", "hourly_usd": "float64", "spot_hourly_usd": "Float64"},
        file, {"warnings": warnings},
    )


# --- Kubecost/OpenCost CSV custom pricing ---------------------------------------------------------------

def load_node_price_csv(path: str | Path) -> ExtractResult:
    """Kubecost CSV pricing schema (EndTimestamp,InstanceID,Region,AssetClass,InstanceIDField,InstanceType,
    MarketPriceHourly,Version) → raw.price_node_csv.

    Rows for the same asset with and without Region are distinct (region-specific first, blank = any).
    EndTimestamp is part of the duplicate key: its semantics are undocumented and may version a price.
    """
    file = _resolve(path)
    rows: list[dict[str, Any]] = []
    warnings: list[str] = []
    seen: dict[tuple[str, ...], int] = {}
    for line, row in _read_csv(file, NODE_CSV_COLUMNS, NODE_CSV_REQUIRED):
        instance_id = _required_text(row, file, line, "InstanceID", "a node name or provider id")
        asset_class = _required_text(row, file, line, "AssetClass", "node").lower()
        if asset_class not in ASSET_CLASSES:
            raise PricingFileError(
                f"{_where(file, line, 'AssetClass')}: {row['AssetClass']!r} is not allowed; "
                f"use one of {', '.join(ASSET_CLASSES)}"
            )
        id_field = row.get("InstanceIDField", "")
        if id_field and id_field not in KNOWN_ID_FIELDS and not id_field.startswith("metadata.labels."):
            warnings.append(f"{_where(file, line, 'InstanceIDField')}: {id_field!r} is not a field kubeledger "
                            f"matches on ({', '.join(KNOWN_ID_FIELDS)}, metadata.labels.<key>)")
        key = (asset_class, id_field, instance_id, row.get("Region", ""), row.get("EndTimestamp", ""))
        if key in seen:
            raise PricingFileError(
                f"{_where(file, line, 'InstanceID')}: duplicate {asset_class} price for {instance_id!r} "
                f"(InstanceIDField {id_field!r}, Region {row.get('Region', '')!r}) on lines {seen[key]} and "
                f"{line}; keep one row per asset, region and EndTimestamp"
            )
        seen[key] = line
        rows.append({
            "source_file": str(file), "line_no": line,
            "end_timestamp": row.get("EndTimestamp") or None, "instance_id": instance_id,
            "region": row.get("Region") or None, "asset_class": asset_class,
            "instance_id_field": id_field or None, "instance_type": row.get("InstanceType") or None,
            "market_price_hourly": _price(row["MarketPriceHourly"], file, line, "MarketPriceHourly", True,
                                          cap=NODE_CSV_CAPS[asset_class]),
            "version": row.get("Version") or None,
        })
    if not rows:
        warnings.append(f"{file}: no price rows (header only)")
    return _result(
        "price_node_csv", rows,
        ["source_file", "line_no", "end_timestamp", "instance_id", "region", "asset_class", "instance_id_field",
         "instance_type", "market_price_hourly", "version"],
        {"line_no": "int32", "market_price_hourly": "float64"},
        file, {"warnings": warnings},
    )


# --- OpenCost default.json-shaped custom prices ---------------------------------------------------------

def load_custom_prices(path: str | Path, convention: str = "hourly") -> ExtractResult:
    """default.json-shaped prices → raw.price_custom, one row per price key, converted to hourly.

    `convention='monthly'` divides CPU, spotCPU, RAM, spotRAM, GPU, spotGPU and storage by 730 (egress and
    load-balancer prices are never monthly). An hourly reading with implausible values is rejected.
    """
    if convention not in CONVENTIONS:
        raise PricingFileError(f"pricing.custom_convention: {convention!r} is not allowed; use hourly or monthly")
    file = _resolve(path)
    try:
        data = json.loads(file.read_text(encoding="utf-8-sig"),
                          object_pairs_hook=lambda pairs: _unique_keys(pairs, file))
    except json.JSONDecodeError as exc:
        raise PricingFileError(f"{_where(file, exc.lineno, None)}: not valid JSON: {exc.msg} "
                               f"(column {exc.colno})") from exc
    except (OSError, UnicodeDecodeError) as exc:
        raise PricingFileError(f"{file}: cannot read the file: {exc}") from exc
    except PricingFileError:
        raise
    except (ValueError, RecursionError) as exc:  # e.g. an integer of more than 4300 digits, absurd nesting
        raise PricingFileError(f"{file}: not valid JSON: {' '.join(str(exc).split())[:200]}") from exc
    if not isinstance(data, dict):
        raise PricingFileError(f"{file}: expected a JSON object like OpenCost's default.json "
                               f'({{"CPU": "0.031611", "RAM": "0.004237", ...}})')
    by_lower = {k.lower(): k for k in CUSTOM_PRICE_KEYS}
    rows: list[dict[str, Any]] = []
    skipped: list[str] = []
    empty: list[str] = []
    warnings: list[str] = []
    for key, raw in data.items():
        if key not in CUSTOM_PRICE_KEYS:
            if key.lower() in by_lower:  # a misspelt price would silently fall back to defaults
                raise PricingFileError(f"{_where(file, None, key)}: unknown key {key!r}; did you mean "
                                       f"{by_lower[key.lower()]!r}? (keys are case-sensitive)")
            skipped.append(key)
            continue
        given = _price(raw, file, None, key, required=False)
        if given is None:
            empty.append(key)  # OpenCost writes "" for "not set": missing, not 0
            continue
        monthly = convention == "monthly" and key in MONTHLY_KEYS
        # Decimal keeps the division exact to the last float digit (23.076/730 -> 0.0316109589...)
        hourly = float(Decimal(str(raw).strip()) / HOURS_PER_MONTH) if monthly else given
        limit = PLAUSIBLE_MAX.get(key)
        if limit and hourly > limit[0]:
            max_value, unit = limit
            if key in MONTHLY_KEYS and convention == "hourly":
                raise PricingFileError(
                    f"{_where(file, None, key)}: {raw!r} read as hourly is implausible (> {max_value:g} {unit}); "
                    "this looks like a monthly price file (OpenCost ConfigMap convention). Set "
                    "`pricing.custom_convention: monthly` in kubeledger.yaml to divide CPU, spotCPU, RAM, "
                    "spotRAM, GPU, spotGPU and storage by 730"
                )
            raise PricingFileError(
                f"{_where(file, None, key)}: {raw!r} is implausible (> {max_value:g} {unit} "
                f"after the {convention} convention); check the unit"
            )
        if monthly and key in ("CPU", "RAM") and hourly < PLAUSIBLE_MAX[key][0] / 10_000:
            warnings.append(f"{_where(file, None, key)}: {hourly:.3g} {PLAUSIBLE_MAX[key][1]} after ÷730 is "
                            "very low; is this an hourly file read as monthly?")
        rows.append({"source_file": str(file), "price_key": key, "value_as_given": given,
                     "convention": convention, "hourly_value": hourly})
    if not rows:
        raise PricingFileError(f"{file}: no price keys found; expected some of {', '.join(CUSTOM_PRICE_KEYS)}")
    return _result(
        "price_custom", rows,
        ["source_file", "price_key", "value_as_given", "convention", "hourly_value"],
        {"value_as_given": "float64", "hourly_value": "float64"},
        file, {"convention": convention, "skipped_keys": skipped, "empty_keys": empty, "warnings": warnings},
    )


PRICE_TABLES = ("price_sheet", "price_node_csv", "price_custom")


def load_pricing(settings: Settings, con: duckdb.DuckDBPyConnection) -> dict[str, Any]:
    """Validate and land the configured price files. A file that cannot be used (`check-config` names the line
    and field) never fails the run: its table keeps the last good load of it, or is empty so the models use the
    default prices (flagged default_price), and the file is one Problem (source `pricing`)."""
    summary: dict[str, Any] = {"files": [], "problems": []}
    p = settings.pricing
    wanted: list[tuple[str, str, Any]] = []
    if p.instance_sheet:
        wanted.append(("price_sheet", "pricing.instance_sheet",
                       lambda: load_price_sheet(settings.resolve(p.instance_sheet))))
    if p.node_csv:
        wanted.append(("price_node_csv", "pricing.node_csv",
                       lambda: load_node_price_csv(settings.resolve(p.node_csv))))
    if p.custom_file:
        wanted.append(("price_custom", "pricing.custom_file",
                       lambda: load_custom_prices(settings.resolve(p.custom_file), p.custom_convention)))
    loaded: list[tuple[str, ExtractResult]] = []
    kept: dict[str, list[str]] = {}  # table -> files whose last good rows stay (the new version is unusable)
    for table, key, load in wanted:
        try:
            loaded.append((table, load()))
        except (PricingFileError, OSError) as exc:
            resolved = str(Path(settings.resolve(getattr(p, key.split(".")[1]))).expanduser().resolve())
            kept.setdefault(table, []).append(resolved)
            summary["problems"].append(_file_problem(con, table, key, resolved, exc))
    con.execute("begin transaction")
    try:
        # files no longer configured are removed, so the warehouse reflects the current configuration
        for table in PRICE_TABLES:
            keep = [str(r.partitions[0]["source_file"]) for t, r in loaded if t == table and r.partitions]
            keep += kept.get(table, [])
            if keep:
                con.execute(f"delete from raw.{table} where source_file not in (select unnest(?))", [keep])  # noqa: S608
            else:
                con.execute(f"delete from raw.{table}")  # noqa: S608 - table names are fixed above
        con.execute("commit")
    except BaseException:
        con.execute("rollback")
        raise
    for table, result in loaded:
        written = base.land(con, result)
        summary["files"].append({"table": table, "rows": written.get(table, 0),
                                 "file": str(result.partitions[0]["source_file"]) if result.partitions else None})
    return summary


def _file_problem(con: duckdb.DuckDBPyConnection, table: str, key: str, file: str, exc: Exception) -> Problem:
    last = con.execute(f"select count(*), max(_extracted_at) from raw.{table} where source_file = ?",  # noqa: S608
                       [file]).fetchone()
    instead = (f"its last good load ({last[0]} rows from {last[1]:%Y-%m-%d %H:%M} UTC) stays in use"
               if last and last[0] else "the default prices apply, flagged default_price")
    message = f"{key} could not be loaded ({str(exc)[:300]}); {instead}"
    hint = "fix the file (`kubeledger check-config` names the line and field); the next run loads it"
    return Problem("pricing", "file", message, hint, [file])
