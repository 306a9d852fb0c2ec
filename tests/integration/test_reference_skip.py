"""The reference job (seeds and price files) runs only when its inputs changed (pipelines/reference_inputs.py)."""

from __future__ import annotations

import pytest

from tests.fixtures.pipeline_workdir import CONFIG, D1, D2, published_workdir, run_cli

pytestmark = [pytest.mark.integration, pytest.mark.slow]


def test_reference_runs_only_when_its_inputs_change(tmp_path_factory: pytest.TempPathFactory) -> None:
    workdir = published_workdir(tmp_path_factory, "reference-skip", (D1,))
    unchanged = run_cli(workdir, "materialize", "--date", D2.isoformat())
    assert "reference: skipped" in unchanged.stdout, unchanged.stdout
    (workdir / "kubeledger.yaml").write_text(CONFIG + "pricing:\n  cpu_discount_pct: 10\n")  # a pricing input
    changed = run_cli(workdir, "materialize", "--date", D2.isoformat())
    assert "reference: ok" in changed.stdout, changed.stdout
