"""A demo range generated at once (extract_demo_hours, stamped once) equals its hours generated one by one."""

from __future__ import annotations

from datetime import datetime, timedelta

import pandas as pd

from pipelines.settings import load_settings
from pipelines.sources.demo import extract_demo_hours, iter_demo_hours


def test_range_equals_hour_by_hour(tmp_path) -> None:
    cfg = tmp_path / "kubeledger.yaml"
    cfg.write_text(f"warehouse:\n  path: {tmp_path}/wh/kubeledger.duckdb\n")
    cluster = load_settings(str(cfg)).clusters[0]
    hours = [datetime(2026, 11, 27, 22) + timedelta(hours=i) for i in range(5)]  # across midnight
    ranged = extract_demo_hours(cluster, hours)
    single = list(iter_demo_hours(cluster, hours))
    assert ranged.partitions == [p for r in single for p in r.partitions]
    assert set(ranged.batches) == set(single[0].batches)
    for table, frame in ranged.batches.items():
        expected = pd.concat([r.batches[table] for r in single], ignore_index=True)
        pd.testing.assert_frame_equal(frame, expected, check_exact=True)
        assert len(frame) > 0 or table == "gpu_hours"


def test_land_chunks_grow_only_for_a_small_demo_cluster(tmp_path) -> None:
    from dataclasses import replace

    from pipelines.sources.metrics import LAND_CHUNK_HOURS, land_chunk_hours

    cfg = tmp_path / "kubeledger.yaml"
    cfg.write_text(f"warehouse:\n  path: {tmp_path}/wh/kubeledger.duckdb\n")
    cluster = load_settings(str(cfg)).clusters[0]
    assert land_chunk_hours(cluster) == 24  # 12 nodes x 8 pods
    big = replace(cluster, demo=replace(cluster.demo, nodes=1000, pods_per_node=30))
    assert land_chunk_hours(big) == LAND_CHUNK_HOURS
    assert land_chunk_hours(replace(cluster, source="prometheus")) == LAND_CHUNK_HOURS
