"""CSV answers: text cells neutralised against spreadsheet formula injection, floats written in full."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from typing import Any

_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def csv_text(value: Any) -> Any:
    """A text cell that a spreadsheet would read as a formula (=, +, -, @, tab, CR first) gets a leading
    apostrophe (OWASP's CSV-injection advice); numbers are written as numbers and never touched."""
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def _cell(value: Any) -> Any:
    if value is None:
        return ""
    return repr(value) if isinstance(value, float) else csv_text(value)


def write_csv(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(header)
    for row in rows:
        w.writerow([_cell(v) for v in row])
    return buf.getvalue()
