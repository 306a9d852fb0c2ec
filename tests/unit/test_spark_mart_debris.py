"""What a killed Spark write leaves in the lake's mart folders is removed before the next daily build
(pipelines/engines/spark.py clear_mart_debris); files no table owns are refused in one line, never replaced."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.engines.spark import LakeMartConflict, clear_mart_debris


def _file(path: Path, text: str = "x") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_debris_removed_committed_partitions_kept(tmp_path: Path) -> None:
    marts = tmp_path / "marts"
    kept = _file(marts / "fct_a" / "cluster=c" / "usage_date=2026-11-28" / "part-0.parquet")
    _file(marts / "fct_a" / ".spark-staging-1f2e" / "cluster=c" / "usage_date=2026-11-29" / "part-0.parquet", "")
    _file(marts / "fct_a" / "_temporary" / "0" / "_temporary" / "attempt_1" / "part-0.parquet", "")
    # a first build killed mid-write: only debris, no table registered; left empty, CTAS may create it again
    _file(marts / "fct_b" / "_temporary" / "0" / "part-0.parquet", "")
    removed = clear_mart_debris(str(tmp_path), registered=lambda mart: mart == "fct_a")
    assert sorted(p.relative_to(marts).as_posix() for p in removed) == [
        "fct_a/.spark-staging-1f2e", "fct_a/_temporary", "fct_b/_temporary"]
    assert kept.is_file() and (marts / "fct_b").is_dir() and not any((marts / "fct_b").iterdir())
    assert not [p for p in marts.rglob("*") if p.name.startswith(("_temporary", ".spark-staging-"))]


def test_files_no_table_owns_are_refused_naming_the_folder(tmp_path: Path) -> None:
    part = _file(tmp_path / "marts" / "fct_c" / "cluster=c" / "usage_date=2026-11-28" / "part-0.parquet")
    with pytest.raises(LakeMartConflict, match=r"fct_c holds files but the Spark metastore has no table marts\.fct_c"):
        clear_mart_debris(str(tmp_path), registered=lambda mart: False)
    assert part.is_file()  # nothing replaced


def test_no_lake_yet_and_object_store_lakes_are_left_alone(tmp_path: Path) -> None:
    assert clear_mart_debris(str(tmp_path), registered=lambda mart: False) == []
    assert clear_mart_debris("s3a://bucket/lake", registered=lambda mart: False) == []
