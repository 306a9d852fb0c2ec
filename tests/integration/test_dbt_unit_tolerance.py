"""dbt unit tests compare floats within a tolerance (dbt_project/macros/float_tolerance.sql), never bit-exact.

A throwaway dbt project in a temp dir (tests/fixtures/tolerance_probe.py: one inline model, the project's macro files copied in, a DuckDB
profile in the temp dir) runs unit tests whose expected doubles are off by one ulp (must pass), by 1e-6 relative
(must fail), and whose non-float columns are off (must fail: they still compare exactly). The same last-bit test
without the macro file fails: that is what the override changes (issue 14, item 6: 0.5833333333333334 vs
0.5833333333333333 stopped a crash-recovery re-run).
"""

from __future__ import annotations

import pytest

from tests.fixtures.tolerance_probe import EXPECTED, probe_project, unit_test_statuses

pytestmark = pytest.mark.integration


def test_floats_compare_within_tolerance(tmp_path, monkeypatch):
    monkeypatch.setenv("DO_NOT_TRACK", "1")
    assert unit_test_statuses(probe_project(tmp_path / "with_macro", with_macro=True)) == EXPECTED


def test_without_the_override_the_last_bit_fails(tmp_path, monkeypatch):
    """Control: dbt's own comparison is bit-exact, so the pass above is the override's doing."""
    monkeypatch.setenv("DO_NOT_TRACK", "1")
    statuses = unit_test_statuses(probe_project(tmp_path / "without_macro", with_macro=False))
    assert statuses["ut_last_bit_passes"] == "fail"
    assert statuses["ut_relative_1e6_fails"] == "fail"
