"""One JSON-safe encoder for every metadata and log payload (issue: a datetime in a carbon failure record failed
the whole daily run with DagsterInvalidMetadata). Each type a source produces goes through `json_safe` and through
`safe_metadata` into Dagster's own metadata normalisation; and no asset or check builds metadata another way."""

from __future__ import annotations

import ast
import json
import math
from datetime import UTC, date, datetime, timedelta, timezone
from decimal import Decimal
from pathlib import Path

import dagster as dg
import numpy as np
import pandas as pd
import pytest
from dagster._core.definitions.metadata import normalize_metadata

from pipelines import PROJECT_ROOT
from pipelines.dagster_defs.metadata import safe_metadata
from pipelines.jsonsafe import json_safe, json_text

CASES = [
    (datetime(2026, 12, 4, 0, 0), "2026-12-04T00:00:00Z"),
    (datetime(2026, 12, 4, 1, 30, tzinfo=timezone(timedelta(hours=1))), "2026-12-04T00:30:00Z"),
    (datetime(2026, 12, 4, 0, 0, 0, 5000, tzinfo=UTC), "2026-12-04T00:00:00.005000Z"),
    (date(2026, 12, 4), "2026-12-04"),
    (timedelta(minutes=90), 5400.0),
    (Decimal("1.25"), 1.25),
    (Decimal("NaN"), "NaN"),
    (Decimal("Infinity"), "Infinity"),
    (float("nan"), "NaN"),
    (float("inf"), "Infinity"),
    (float("-inf"), "-Infinity"),
    (b"caf\xc3\xa9 \xff", "café \ufffd"),
    ({3, 1, 2}, [1, 2, 3]),
    (frozenset({"b", "a"}), ["a", "b"]),
    ((1, "x"), [1, "x"]),
    (np.int64(7), 7),
    (np.float32(0.5), 0.5),
    (np.float64("nan"), "NaN"),
    (np.bool_(True), True),
    (np.datetime64("2026-12-04T05:00:00"), "2026-12-04T05:00:00Z"),
    (np.datetime64("NaT"), None),
    (np.array([1, 2]), [1, 2]),
    (pd.Timestamp("2026-12-04 06:00", tz="UTC"), "2026-12-04T06:00:00Z"),
    (pd.Timestamp("2026-12-04 06:00"), "2026-12-04T06:00:00Z"),
    (pd.NaT, None),
    (pd.NA, None),
    (pd.Timedelta(seconds=3), 3.0),
    (Path("/tmp/x.csv"), "/tmp/x.csv"),
    (None, None),
]


@pytest.mark.parametrize(("value", "expected"), CASES, ids=[type(v).__name__ + str(i) for i, (v, _) in enumerate(CASES)])
def test_each_type_encodes(value: object, expected: object) -> None:
    encoded = json_safe(value)
    assert encoded == expected
    json.dumps(encoded, allow_nan=False)  # strict JSON: no NaN/Infinity literals


def test_nested_failure_record_is_strict_json() -> None:
    record = {"zone": "FR", "start": datetime(2026, 12, 4), "status": None, "hours": {datetime(2026, 12, 4, 1)},
              "cost": Decimal("0.10"), "share": float("nan"), 5: np.int64(1)}
    encoded = json_safe([record])
    text = json.dumps(encoded, allow_nan=False)
    assert '"start": "2026-12-04T00:00:00Z"' in text and '"5": 1' in text
    assert json_text(record, limit=20).endswith("…") and len(json_text(record, limit=20)) == 20


def test_deep_structures_are_cut_not_recursed_forever() -> None:
    loop: list = []
    loop.append(loop)
    assert isinstance(json.dumps(json_safe(loop)), str)


def test_safe_metadata_passes_dagster_normalisation() -> None:
    """Every type through the one helper all assets use, then through Dagster's own check (which raised
    DagsterInvalidMetadata for the carbon failure records before the fix)."""
    raw = {f"k{i}": v for i, (v, _) in enumerate(CASES)}
    raw["failures"] = [{"start": datetime(2026, 12, 4), "end": pd.Timestamp("2026-12-05"), "bytes": b"x"}]
    raw["json"] = dg.MetadataValue.json({"when": "2026-12-04T00:00:00Z", "n": 1})
    raw["path"] = dg.MetadataValue.path("/tmp/report.html")
    normalised = normalize_metadata(safe_metadata(raw))
    assert normalised["failures"].value == [{"start": "2026-12-04T00:00:00Z", "end": "2026-12-05T00:00:00Z",
                                            "bytes": "x"}]
    assert normalised["json"].value == {"when": "2026-12-04T00:00:00Z", "n": 1}
    assert normalised["path"].value == "/tmp/report.html"
    assert normalised["k8"].value == "NaN"
    assert not any(isinstance(v.value, float) and math.isnan(v.value) for v in normalised.values())


def test_unsafe_record_fails_without_the_helper() -> None:
    """The hazard the helper removes: Dagster refuses a datetime inside JSON metadata."""
    with pytest.raises(Exception, match="JSON serializable"):
        normalize_metadata({"failures": dg.MetadataValue.json([{"start": datetime(2026, 12, 4)}])})


RESULT_TYPES = {"MaterializeResult", "AssetCheckResult", "Output", "AssetMaterialization", "AssetObservation"}


def _calls(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            yield node


def test_every_asset_and_check_builds_metadata_through_safe_metadata() -> None:
    """No metadata in pipelines/ is built another way: a `metadata=` of a Dagster result is `safe_metadata(...)`
    and `MetadataValue.json` appears only in the helper."""
    offenders = []
    for path in sorted((PROJECT_ROOT / "pipelines").rglob("*.py")):
        tree = ast.parse(path.read_text())
        rel = path.relative_to(PROJECT_ROOT)
        for call in _calls(tree):
            func = call.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name == "json" and isinstance(func, ast.Attribute) and getattr(func.value, "attr", "") == \
                    "MetadataValue" and rel.as_posix() != "pipelines/dagster_defs/metadata.py":
                offenders.append(f"{rel}:{call.lineno} MetadataValue.json outside the helper")
            if name in RESULT_TYPES:
                for kw in call.keywords:
                    if kw.arg == "metadata" and not (isinstance(kw.value, ast.Call)
                                                     and getattr(kw.value.func, "id", "") == "safe_metadata"):
                        offenders.append(f"{rel}:{call.lineno} {name}(metadata=...) without safe_metadata")
    assert not offenders, offenders
