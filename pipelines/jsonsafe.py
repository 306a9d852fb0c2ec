"""One JSON-safe encoder for every payload that leaves Python as JSON: Dagster metadata, log and warning payloads,
the source-health ledger.

Why: a failure record carrying a `datetime` once reached `MetadataValue.json` and Dagster refused it ("Value is not
JSON serializable"), which failed the whole daily run at the one moment it had to degrade gracefully. Every
structure is passed through `json_safe` first, so the types that sources naturally produce never break a run:

- datetimes and timestamps: ISO 8601 in UTC (`2026-12-04T00:00:00Z`; naive values are UTC by the house rule),
  dates: `2026-12-04`, time deltas: seconds;
- Decimal: a float when finite, else its text; float NaN/Inf: the strings "NaN", "Infinity", "-Infinity";
- bytes: UTF-8 text (invalid bytes replaced); sets and frozensets: sorted lists; tuples: lists;
- numpy and pandas scalars (np.int64, np.bool_, pd.Timestamp, pd.NA, NaT): their Python value;
- paths and anything else: `str(value)`. Mapping keys become strings.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from pathlib import PurePath
from typing import Any

MAX_DEPTH = 32  # deeper structures are cut (a cycle or a runaway payload never hangs a run)


def _iso(ts: datetime) -> str:
    if ts.tzinfo is not None:
        ts = ts.astimezone(UTC).replace(tzinfo=None)
    text = ts.isoformat(timespec="microseconds" if ts.microsecond else "seconds")
    return text + "Z"


def _float(value: float) -> float | str:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return value


def _scalar(value: Any) -> tuple[bool, Any]:
    """(handled, encoded) for the leaf types; numpy/pandas are recognised without importing them."""
    if value is None or isinstance(value, bool | int | str):
        return True, value
    if isinstance(value, float):
        return True, _float(value)
    module = type(value).__module__.split(".")[0]
    if module in ("numpy", "pandas"):  # before datetime: pd.Timestamp and pd.NaT are datetimes
        return _numpy_pandas(value)
    if isinstance(value, datetime):  # before date: a datetime is a date
        return True, _iso(value)
    if isinstance(value, date):
        return True, value.isoformat()
    if isinstance(value, time):
        return True, value.isoformat()
    if isinstance(value, timedelta):
        return True, _float(value.total_seconds())
    if isinstance(value, Decimal):
        return True, _float(float(value)) if value.is_finite() else str(value)
    if isinstance(value, bytes | bytearray | memoryview):
        return True, bytes(value).decode("utf-8", errors="replace")
    if isinstance(value, PurePath):
        return True, str(value)
    return False, None


def _numpy_pandas(value: Any) -> tuple[bool, Any]:
    import numpy as np
    import pandas as pd

    if value is pd.NA or value is pd.NaT:
        return True, None
    if isinstance(value, pd.Timestamp):
        return True, _iso(value.to_pydatetime())
    if isinstance(value, pd.Timedelta):
        return True, _float(value.total_seconds())
    if isinstance(value, np.datetime64):
        return (True, None) if np.isnat(value) else (True, _iso(pd.Timestamp(value).to_pydatetime()))
    if isinstance(value, np.ndarray):
        return True, [json_safe(v) for v in value.tolist()]
    if isinstance(value, np.generic):
        return _scalar(value.item())
    return False, None


def json_safe(value: Any, _depth: int = 0) -> Any:
    """`value` as plain JSON types (dict with str keys, list, str, int, float, bool, None); see the module doc."""
    handled, encoded = _scalar(value)
    if handled:
        return encoded
    if _depth >= MAX_DEPTH:
        return str(value)
    if isinstance(value, Mapping):
        return {_key(k): json_safe(v, _depth + 1) for k, v in value.items()}
    if isinstance(value, set | frozenset):
        items = [json_safe(v, _depth + 1) for v in value]
        return sorted(items, key=lambda v: json.dumps(v, sort_keys=True))
    if isinstance(value, list | tuple):
        return [json_safe(v, _depth + 1) for v in value]
    if hasattr(value, "__dataclass_fields__"):
        from dataclasses import asdict

        return json_safe(asdict(value), _depth + 1)
    return str(value)


def _key(key: Any) -> str:
    encoded = json_safe(key)
    return encoded if isinstance(encoded, str) else json.dumps(encoded)


def json_text(value: Any, limit: int | None = None) -> str:
    """`value` as compact JSON text (for a log line or a text column), cut to `limit` characters when given."""
    text = json.dumps(json_safe(value), ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return text if limit is None or len(text) <= limit else text[: max(0, limit - 1)] + "…"
