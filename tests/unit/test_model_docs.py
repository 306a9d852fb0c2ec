"""Every dbt model has a YAML entry with a description, and every staging model describes its key columns (the
columns named in its grain comment). Pure YAML and text, fast."""

from __future__ import annotations

import re

import yaml

from pipelines import DBT_PROJECT_DIR

MODELS = DBT_PROJECT_DIR / "models"


def _documented() -> dict[str, dict]:
    entries: dict[str, dict] = {}
    for path in MODELS.rglob("*.yml"):
        for model in (yaml.safe_load(path.read_text()) or {}).get("models", []):
            entries[model["name"]] = model
    return entries


def test_every_model_has_a_description():
    documented = _documented()
    missing = [p.stem for p in MODELS.rglob("*.sql")
               if not (documented.get(p.stem) or {}).get("description", "").strip()]
    assert not missing, f"models without a YAML description: {sorted(missing)}"


def test_staging_models_describe_their_grain_columns():
    documented = _documented()
    problems = []
    for path in sorted((MODELS / "staging").glob("stg_*.sql")):
        grain = re.search(r"grain: one row per (?:row of [^(]*|\(([^)]*)\)|(\w+))", path.read_text())
        assert grain, f"{path.name}: no '-- grain:' comment"
        keys = [k.strip() for k in (grain.group(1) or grain.group(2) or "").split(",") if k.strip()]
        columns = {c["name"]: c.get("description", "") for c in documented.get(path.stem, {}).get("columns", [])}
        problems += [f"{path.stem}.{k}" for k in keys if not str(columns.get(k, "")).strip()]
    assert not problems, f"grain columns without a description: {problems}"
