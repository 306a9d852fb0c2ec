"""dbt unit tests compare floats within a tolerance (dbt_project/macros/float_tolerance.sql), never bit-exact.

A throwaway dbt project in a temp dir (one inline model, the project's tolerance macro file copied in, a DuckDB
profile in the temp dir) runs unit tests whose expected doubles are off by one ulp (must pass), by 1e-6 relative
(must fail), and whose non-float columns are off (must fail: they still compare exactly). The same last-bit test
without the macro file fails: that is what the override changes (issue 14, item 6: 0.5833333333333334 vs
0.5833333333333333 stopped a crash-recovery re-run).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from dbt.cli.main import dbtRunner

from pipelines import DBT_PROJECT_DIR

pytestmark = pytest.mark.integration

# the tolerance, and Spark's unit materialization (the model's rows computed once: DuckDB ignores it)
MACRO_FILES = [DBT_PROJECT_DIR / "macros" / name for name in ("float_tolerance.sql", "unit_test_spark.sql")]

PROJECT = """\
name: tolerance_probe
version: "0.1.0"
config-version: 2
profile: tolerance_probe
flags:
  send_anonymous_usage_stats: false
"""

PROFILES = """\
tolerance_probe:
  target: local
  outputs:
    local:
      type: duckdb
      path: "{path}"
      threads: 1
    spark:
      type: spark
      method: session
      host: NA
      schema: tolerance_probe
      threads: 1
"""

# 7/12 = 0.5833333333333334 in IEEE doubles; 0.5833333333333333 is 1 ulp below (the pair of the failing CI run,
# where the order of a parallel sum decided). The expected values of ut_last_bit_passes are each 1 ulp off the
# computed ones (0.1 + 0.2 = 0.30000000000000004 vs 0.3); row 6 is huge (no DECIMAL cast could hold it), row 7 is
# below the absolute floor (1e-12) and equals 0. f32 is single precision (DuckDB FLOAT): 1/3 in float32 is
# 0.33333334, two float32 ulps from 0.3333333, within its 1e-6 relative tolerance.
MODEL = """\
select k, ratio, f32, amount, label, n
from (values
    (1, cast(7 as double) / 12, cast(0.5 as float), cast(1.5 as decimal(18, 9)), 'a', 7),
    (2, cast(0 as double), cast(0 as float), cast(0 as decimal(18, 9)), 'b', 0),
    (3, cast(-1 as double) / 3, cast(-2.25 as float), cast(-2.25 as decimal(18, 9)), 'c', -3),
    (4, cast(null as double), cast(null as float), cast(null as decimal(18, 9)), cast(null as string), null),
    (5, cast(1 as double) / 10 + cast(2 as double) / 10, cast(cast(1 as float) / cast(3 as float) as float),
     cast(1 as decimal(18, 9)), 'e', 1),
    (6, cast(7e300 as double) / 12, cast(1 as float), cast(1 as decimal(18, 9)), 'f', 1),
    (7, cast(7e-300 as double) / 12, cast(1 as float), cast(1 as decimal(18, 9)), 'g', 1)
) as t(k, ratio, f32, amount, label, n)
"""

UNIT_TESTS = """\
unit_tests:
  - name: ut_last_bit_passes
    model: probe
    given: []
    expect:
      rows:
        - {k: 1, ratio: 0.5833333333333333, f32: 0.5, amount: 1.5, label: a, n: 7}
        - {k: 2, ratio: 0.0, f32: 0.0, amount: 0, label: b, n: 0}
        - {k: 3, ratio: -0.33333333333333337, f32: -2.25, amount: -2.25, label: c, n: -3}
        - {k: 4, ratio: null, f32: null, amount: null, label: null, n: null}
        - {k: 5, ratio: 0.3, f32: 0.3333333, amount: 1, label: e, n: 1}
        - {k: 6, ratio: 5.833333333333334e+299, f32: 1, amount: 1, label: f, n: 1}
        - {k: 7, ratio: 0.0, f32: 1, amount: 1, label: g, n: 1}

  - name: ut_nan_and_infinity_pass
    model: probe_special
    given: []
    expect:
      format: sql
      rows: |
        select 1 as k, cast('nan' as double) as v
        union all select 2, cast('inf' as double)
        union all select 3, cast('-inf' as double)

  - name: ut_relative_1e6_fails
    model: probe
    given: []
    expect:
      rows:
        - {k: 1, ratio: 0.5833339166666667}
        - {k: 2, ratio: 0.0}
        - {k: 3, ratio: -0.3333333333333333}
        - {k: 4, ratio: null}
        - {k: 5, ratio: 0.30000000000000004}
        - {k: 6, ratio: 5.833333333333334e+299}
        - {k: 7, ratio: 5.833333333333334e-301}

  - name: ut_decimal_stays_exact_fails
    model: probe
    given: []
    expect:
      rows:
        - {k: 1, amount: 1.500000001}
        - {k: 2, amount: 0}
        - {k: 3, amount: -2.25}
        - {k: 4, amount: null}
        - {k: 5, amount: 1}
        - {k: 6, amount: 1}
        - {k: 7, amount: 1}

  - name: ut_null_is_not_zero_fails
    model: probe
    given: []
    expect:
      rows:
        - {k: 1, ratio: 0.5833333333333334}
        - {k: 2, ratio: 0.0}
        - {k: 3, ratio: -0.3333333333333333}
        - {k: 4, ratio: 0.0}
        - {k: 5, ratio: 0.30000000000000004}
        - {k: 6, ratio: 5.833333333333334e+299}
        - {k: 7, ratio: 5.833333333333334e-301}

  - name: ut_nan_is_not_a_number_fails
    model: probe_special
    given: []
    expect:
      format: sql
      rows: |
        select 1 as k, cast(1 as double) as v
        union all select 2, cast('inf' as double)
        union all select 3, cast('-inf' as double)

  - name: ut_duplicates_count_fails
    model: probe_special
    given: []
    expect:
      format: sql
      rows: |
        select 1 as k, cast('nan' as double) as v
        union all select 2, cast('inf' as double)
        union all select 2, cast('inf' as double)
"""

SPECIAL = """\
select 1 as k, cast('nan' as double) as v
union all select 2, cast('inf' as double)
union all select 3, cast('-inf' as double)
"""


def probe_project(root: Path, with_macro: bool) -> Path:
    """The throwaway project in root: its two models, their unit tests, a profile per engine (`local`: DuckDB in a
    file of root; `spark`: the process's Spark session, tests/spark), the project's macro files when with_macro."""
    (root / "models").mkdir(parents=True)
    (root / "macros").mkdir()
    (root / "dbt_project.yml").write_text(PROJECT)
    (root / "profiles.yml").write_text(PROFILES.format(path=(root / "probe.duckdb").as_posix()))
    (root / "models" / "probe.sql").write_text(MODEL)
    (root / "models" / "probe_special.sql").write_text(SPECIAL)
    (root / "models" / "_unit_tests.yml").write_text(UNIT_TESTS)
    if with_macro:
        for f in MACRO_FILES:
            shutil.copy(f, root / "macros" / f.name)
    return root


def unit_test_statuses(root: Path, target: str = "local") -> dict[str, str]:
    """{unit test: pass/fail} of the probe project's unit tests on the target."""
    res = dbtRunner().invoke([
        "test", "--select", "test_type:unit", "--project-dir", str(root), "--profiles-dir", str(root),
        "--target-path", str(root / "target"), "--log-path", str(root / "logs"), "--target", target,
    ])
    assert res.exception is None, res.exception
    return {r.node.name: str(r.status) for r in res.result}


# what the override decides: the last bit and NaN/infinity pass; a relative 1e-6, a decimal's last digit, NULL
# against 0, NaN against a number and a duplicated row fail
EXPECTED = {
    "ut_last_bit_passes": "pass",
    "ut_nan_and_infinity_pass": "pass",
    "ut_relative_1e6_fails": "fail",
    "ut_decimal_stays_exact_fails": "fail",
    "ut_null_is_not_zero_fails": "fail",
    "ut_nan_is_not_a_number_fails": "fail",
    "ut_duplicates_count_fails": "fail",
}


def test_floats_compare_within_tolerance(tmp_path, monkeypatch):
    monkeypatch.setenv("DO_NOT_TRACK", "1")
    assert unit_test_statuses(probe_project(tmp_path / "with_macro", with_macro=True)) == EXPECTED


def test_without_the_override_the_last_bit_fails(tmp_path, monkeypatch):
    """Control: dbt's own comparison is bit-exact, so the pass above is the override's doing."""
    monkeypatch.setenv("DO_NOT_TRACK", "1")
    statuses = unit_test_statuses(probe_project(tmp_path / "without_macro", with_macro=False))
    assert statuses["ut_last_bit_passes"] == "fail"
    assert statuses["ut_relative_1e6_fails"] == "fail"
