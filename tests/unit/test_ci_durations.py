"""scripts/ci/durations.py: the seconds per module tests/conftest.py orders the modules by."""

from __future__ import annotations

import json
from pathlib import Path

from scripts.ci.durations import main, module_of, module_seconds

XML = """<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" tests="4">
<testcase classname="tests.unit.test_ci_durations" name="test_a" time="1.5"/>
<testcase classname="tests.unit.test_ci_durations" name="test_b" time="2.0"/>
<testcase classname="tests.unit.test_settings.TestRows" name="test_c" time="0.25"/>
<testcase classname="tests.nowhere.test_gone" name="test_d" time="9"/>
</testsuite></testsuites>"""


def test_module_of_strips_classes_and_refuses_unknown_files() -> None:
    assert module_of("tests.unit.test_settings.TestRows") == "tests/unit/test_settings.py"
    assert module_of("tests.unit.test_ci_durations") == "tests/unit/test_ci_durations.py"
    assert module_of("tests.nowhere.test_gone") is None


def test_seconds_are_summed_per_module_and_old_figures_kept(tmp_path: Path, capsys) -> None:
    (tmp_path / "main.xml").write_text(XML)
    (tmp_path / "broken.xml").write_text("<testsuites>")  # a group stopped mid-write: skipped
    assert module_seconds(tmp_path) == {"tests/unit/test_ci_durations.py": 3.5, "tests/unit/test_settings.py": 0.25}
    old = tmp_path / "old.json"
    old.write_text(json.dumps({"tests/unit/test_ci_durations.py": 99.0, "tests/unit/test_lake.py": 7.0}))
    assert main([str(tmp_path), str(old)]) == 0
    out = json.loads(capsys.readouterr().out)
    # this run's figure replaces the old one; a module it did not time keeps its own; under 0.5 s is left out
    assert list(out.items()) == [("tests/unit/test_lake.py", 7.0), ("tests/unit/test_ci_durations.py", 3.5)]
