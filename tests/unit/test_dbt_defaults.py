"""One home per default: the settings dataclasses (pipelines/settings_models.py).

The pipeline passes every dbt var from the settings (pipelines/dagster_defs/dbt_args.py `dbt_vars`); dbt_project.yml's
vars, the defaults of a dbt call without vars (the dbt unit tests, sqlfluff, dbt by hand), are generated from the
default settings (`python -m pipelines.dagster_defs.dbt_project_vars`). Here that block is what the command writes and
equals the default settings key by key (names and values, nested sections included), and the SQL restates none of
them: no var is read with an inline fallback, the `recommendations` var is read in one macro, and a dbt unit test
gives only the recommendation keys it changes. Pure text and YAML, fast.
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from pipelines import DBT_PROJECT_DIR
from pipelines.dagster_defs import dbt_project_vars
from pipelines.dagster_defs.dbt_args import dbt_vars
from pipelines.dagster_defs.dbt_project_vars import DBT_ONLY_VARS, SECTION_VARS
from pipelines.settings_models import RecommendationSettings, Settings

# the build's window and cluster selection: no defaults of a setting (empty = the whole warehouse, every cluster)
RUN_VARS = ("min_ts", "max_ts", "cluster", "clusters")


def _project_vars() -> dict[str, Any]:
    return yaml.safe_load((DBT_PROJECT_DIR / "dbt_project.yml").read_text())["vars"]


def _flat(value: Any, prefix: str) -> dict[str, Any]:
    """Nested dicts as dotted keys (sharing.split), so a missing or extra nested key is named."""
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            out.update(_flat(item, f"{prefix}.{key}"))
        return out
    return {prefix: value}


def _same(project: Any, settings: Any) -> bool:
    """Equal as dbt renders them: a YAML 500 is the settings' 500.0, a bool is never a number."""
    if isinstance(project, bool) or isinstance(settings, bool):
        return type(project) is type(settings) and project == settings
    if isinstance(project, int | float) and isinstance(settings, int | float):
        return float(project) == float(settings)
    return type(project) is type(settings) and project == settings


def _sql_files() -> list[Path]:
    return sorted(p for p in DBT_PROJECT_DIR.rglob("*.sql") if not {"target", "dbt_packages"} & set(p.parts))


def test_the_project_vars_are_generated_from_the_settings():
    block = dbt_project_vars.current((DBT_PROJECT_DIR / "dbt_project.yml").read_text())
    assert block is not None, f"dbt_project.yml has lost its generated vars block: {dbt_project_vars.BEGIN!r}"
    assert block == dbt_project_vars.render(), (
        f"dbt_project.yml's vars are stale (a setting added or a default changed): run `{dbt_project_vars.COMMAND}`")


def test_the_vars_command_rewrites_a_stale_block_and_checks(tmp_path):
    path = tmp_path / "dbt_project.yml"
    fresh = (DBT_PROJECT_DIR / "dbt_project.yml").read_text()
    path.write_text(fresh.replace("    volume_headroom: 1.3", "    volume_headroom: 1.5"))
    assert dbt_project_vars.sync(path, check=True) is False
    assert "volume_headroom: 1.5" in path.read_text()  # --check writes nothing
    assert dbt_project_vars.sync(path) is False and path.read_text() == fresh
    assert dbt_project_vars.sync(path, check=True) is True


def test_the_project_vars_are_the_pipeline_vars_by_name():
    assert set(_project_vars()) == set(dbt_vars(Settings(), None, None)) | set(DBT_ONLY_VARS)
    assert {k: _project_vars()[k] for k in DBT_ONLY_VARS} == DBT_ONLY_VARS


def test_every_project_default_equals_the_settings_default():
    project, passed = _project_vars(), dbt_vars(Settings(), None, None)
    policy = sorted(set(project) - set(RUN_VARS) - set(DBT_ONLY_VARS))
    assert "default_pue" in policy and "recommendations" in policy and "sharing" in policy
    flat_project = {k: v for name in policy for k, v in _flat(project[name], name).items()}
    flat_passed = {k: v for name in policy for k, v in _flat(passed[name], name).items()}
    assert set(flat_project) == set(flat_passed), "dbt_project.yml vars and the settings name different keys"
    differ = {k: (flat_project[k], flat_passed[k]) for k in flat_project if not _same(flat_project[k], flat_passed[k])}
    assert not differ, f"dbt_project.yml var (left) differs from the settings default (right): {differ}"


def test_the_run_vars_select_nothing_by_default():
    project, passed = _project_vars(), dbt_vars(Settings(), None, None)
    assert {k: project[k] for k in RUN_VARS} == {"min_ts": None, "max_ts": None, "cluster": None, "clusters": {}}
    assert {k: passed[k] for k in RUN_VARS[:3]} == {"min_ts": None, "max_ts": None, "cluster": None}
    # the default cluster sets nothing: the same as no entry (macros/windows.sql cluster_config_relation)
    assert all(v is None for c in passed["clusters"].values() for v in c.values())


@pytest.mark.parametrize("name, section", SECTION_VARS.items())
def test_a_section_var_has_every_field(name, section):
    fields = {f.name for f in dataclasses.fields(section)}
    assert set(_project_vars()[name]) == fields
    assert set(dbt_vars(Settings(), None, None)[name]) == fields


def test_no_sql_reads_a_var_with_a_fallback_of_its_own():
    """A fallback (`var('default_pue', 1.3)`) is a second home of the default; only the run vars, whose default is
    "no selection", may say so inline."""
    fallback = re.compile(r"\bvar\(\s*['\"](\w+)['\"]\s*,")
    found = [f"{p.relative_to(DBT_PROJECT_DIR)}: var('{name}', ...)"
             for p in _sql_files() for name in fallback.findall(p.read_text()) if name not in RUN_VARS]
    assert not found, found


def test_the_recommendations_var_is_read_in_one_macro():
    reads = [p.relative_to(DBT_PROJECT_DIR).as_posix() for p in _sql_files()
             for _ in re.finditer(r"\bvar\(\s*['\"]recommendations['\"]", p.read_text())]
    assert reads == ["macros/recommendations.sql"]
    macros = (DBT_PROJECT_DIR / "macros" / "recommendations.sql").read_text()
    assert "rec_setting" in macros.split("var('recommendations')")[0].rsplit("{% macro", 1)[1]


def _unit_test_overrides() -> list[tuple[str, str, dict[str, Any]]]:
    out = []
    for path in sorted((DBT_PROJECT_DIR / "models").rglob("*.yml")):
        for test in (yaml.safe_load(path.read_text()) or {}).get("unit_tests") or []:
            for name, value in ((test.get("overrides") or {}).get("vars") or {}).items():
                out.append((test["name"], name, value))
    return out


def test_a_unit_test_override_of_a_section_gives_every_key():
    """dbt replaces a dict var whole and the macros read it without defaults: an override of a section lists every
    field. The recommendations are changed through `recommendations_overrides` instead (the next test)."""
    overrides = [(test, name, value) for test, name, value in _unit_test_overrides() if name in SECTION_VARS]
    assert not [test for test, name, _ in overrides if name == "recommendations"], \
        "override only the keys a test changes, with the var recommendations_overrides"
    for test, name, value in overrides:
        assert set(value) == {f.name for f in dataclasses.fields(SECTION_VARS[name])}, (test, name)


def test_a_unit_test_overrides_only_the_recommendation_keys_it_changes():
    """`recommendations_overrides` names keys of RecommendationSettings (macros/recommendations.sql rec_setting fails
    on another), each with a value other than its default: a new setting never touches the unit tests."""
    defaults = dataclasses.asdict(RecommendationSettings())
    overrides = [(test, value) for test, name, value in _unit_test_overrides() if name == "recommendations_overrides"]
    assert overrides, "no unit test overrides a recommendation key (the check would check nothing)"
    for test, value in overrides:
        assert value and set(value) <= set(defaults), (test, sorted(set(value) - set(defaults)))
        same = sorted(k for k, v in value.items() if _same(v, defaults[k]))
        assert not same, f"{test}: recommendations_overrides repeats the default of {same}"


def test_a_unit_test_overrides_only_known_vars():
    known = set(_project_vars())
    assert {(test, name) for test, name, _ in _unit_test_overrides() if name not in known} == set()
