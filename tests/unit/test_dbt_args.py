"""The daily dbt build's command line: unit tests are CI's, data and singular tests still run."""

from __future__ import annotations

import json

from pipelines.dagster_defs.dbt_args import DAILY_BUILD_EXCLUDES_UNIT_TESTS, daily_build_args

VARS = {"min_ts": "2026-03-01 00:00:00", "max_ts": "2026-03-02 00:00:00", "cluster": None,
        "sharing": {"share_idle": False, "shared_namespaces": ["kube-system"]}}


def test_daily_build_skips_unit_tests_by_default():
    assert DAILY_BUILD_EXCLUDES_UNIT_TESTS is True
    args = daily_build_args(VARS)
    assert args == ["build", "--vars", json.dumps(VARS), "--exclude-resource-type", "unit_test"]
    assert json.loads(args[2]) == VARS


def test_daily_build_keeps_data_and_singular_tests():
    args = daily_build_args(VARS)
    assert args[0] == "build"  # build, not run: data tests and singular tests run with the models
    excluded = [args[i + 1] for i, a in enumerate(args) if a == "--exclude-resource-type"]
    assert excluded == ["unit_test"]
    assert "--select" not in args and "--exclude" not in args  # dagster-dbt adds the asset selection


def test_daily_build_can_run_unit_tests():
    assert daily_build_args(VARS, exclude_unit_tests=False) == ["build", "--vars", json.dumps(VARS)]
