"""The recommendation kinds are one list in three places that must agree: the serving layer's
`recommendations.KINDS` (the API's `kind` parameter, the report, the CLI), the models `int_recommendations_counted`
unions (each names its kind in `rec_common_columns`) and the mart's accepted values for `kind`."""

from __future__ import annotations

import re

import yaml

from pipelines import DBT_PROJECT_DIR
from pipelines.serving.query.recommendations import COLUMNS, KINDS

RECS = DBT_PROJECT_DIR / "models" / "intermediate" / "recommendations"


def _counted_models() -> list[str]:
    sql = (RECS / "int_recommendations_counted.sql").read_text()
    block = re.search(r"set kinds = \[(.*?)\]", sql, re.S)
    assert block, "int_recommendations_counted.sql: no `set kinds = [...]`"
    return re.findall(r"'(\w+)'", block.group(1))


def test_the_counted_models_produce_exactly_the_served_kinds() -> None:
    kinds = []
    for model in _counted_models():
        found = re.findall(r"rec_common_columns\('(\w+)'", (RECS / f"{model}.sql").read_text())
        assert len(found) == 1, f"{model}: expected one rec_common_columns('<kind>', ...), found {found}"
        kinds.append(found[0])
    assert sorted(kinds) == sorted(KINDS)
    assert len(set(kinds)) == len(kinds)


def test_the_marts_accepted_kinds_are_the_served_kinds() -> None:
    spec = yaml.safe_load((DBT_PROJECT_DIR / "models" / "marts" / "_recommendations__models.yml").read_text())
    mart = next(m for m in spec["models"] if m["name"] == "fct_recommendation_daily")
    rules = next(t["row_rules"]["arguments"] for t in mart["data_tests"] if "row_rules" in t)
    assert sorted(rules["accepted"]["kind"]) == sorted(KINDS)
    assert [c["name"] for c in mart["columns"]] == list(COLUMNS)  # the contract's columns, in the API's order
