"""Helpers shared by the seed modules: plain-decimal numbers, CSV reading, and the seed specification
(`Seed`, `Col` and the dbt data tests) that renders to the CSV and to `_seeds.yml`."""

from __future__ import annotations

import csv
from collections.abc import Iterable
from dataclasses import dataclass, field
from decimal import Decimal
from pathlib import Path

CCF_APP = "ccf-app"
CCF_2026 = "ccf-2026"


# --------------------------------------------------------------------------------------------- helpers


def num(value: object, digits: int = 10) -> str:
    """Plain-decimal text for a number (no exponent), rounded to ``digits`` decimals; '' for None/''."""
    if value is None or value == "":
        return ""
    x = round(float(value), digits)
    if x == 0:
        x = 0.0  # no negative zero
    text = format(Decimal(repr(x)), "f")
    if "." not in text:
        text += ".0"
    return text


def integer(value: object) -> str:
    if value is None or value == "":
        return ""
    x = float(value)
    if x != int(x):
        raise ValueError(f"not an integer: {value!r}")
    return str(int(x))


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    return [{(k or "").strip(): (v or "").strip() for k, v in row.items()} for row in rows]


def mean(values: Iterable[float]) -> float:
    vals = list(values)
    return sum(vals) / len(vals)


# ------------------------------------------------------------------------------------ seed specification


@dataclass
class Col:
    name: str
    type: str  # varchar | double | integer | boolean
    description: str
    tests: list = field(default_factory=list)


@dataclass
class Seed:
    name: str
    description: str
    columns: list[Col]
    rows: list[dict[str, str]]
    model_tests: list = field(default_factory=list)


def accepted(values: list[str]) -> dict:
    return {"accepted_values": {"arguments": {"values": list(values)}}}


def unique_combo(*cols: str) -> dict:
    """A key of several columns: one of the seed's row_rules (render.py)."""
    return {UNIQUE_KEY: list(cols)}


def relationship(to_seed: str, to_field: str) -> dict:
    return {"relationships": {"arguments": {"to": f"ref('{to_seed}')", "field": to_field}}}


NN = "not_null"
UQ = "unique"
UNIQUE_KEY = "unique_key"  # a model test of unique_combo: folded into the seed's row_rules
