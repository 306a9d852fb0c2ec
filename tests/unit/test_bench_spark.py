"""bench --engine spark without a JVM: the process-tree RSS sampler and the side-by-side table."""

from __future__ import annotations

import os
import subprocess
import sys

from bench.runner import StageResult
from bench.spark import TreeRssSampler, format_side_by_side, tree_rss_kib


def test_tree_rss_counts_the_children() -> None:
    own = tree_rss_kib(os.getpid())
    # a child holding ~200 MiB: the tree's RSS grows by about that much, the parent's own does not
    child = subprocess.Popen([sys.executable, "-c", "import sys, time; b = bytearray(200 * 2**20); "
                              "sys.stdout.write('ready\\n'); sys.stdout.flush(); time.sleep(30)"],
                             stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline() == "ready\n"
        with TreeRssSampler(interval_s=0.05) as sampler:
            pass
        assert sampler.peak_kib - own > 150 * 1024
        assert tree_rss_kib(child.pid) > 150 * 1024
    finally:
        child.kill()
        child.wait()


def test_side_by_side_table() -> None:
    duck = [StageResult("load", 10.0, 300.0), StageResult("dbt transform", 20.0, 900.0, {"rows_in": 1_000_000}),
            StageResult("publish", 2.0, 200.0)]
    steps = {"jvm_start": 30.0, "lake_export": 5.0, "dbt_seed": 12.0, "lookups": 15.0, "transform": 50.0,
             "marts_load": 3.0}
    spark = StageResult("spark", 120.0, 500.0, {"steps": steps, "tree_peak_rss_mib": 2500.0, "lake_raw_rows": 1_000_000,
                                                  "lake_raw_bytes": 20_000_000, "lake_marts_bytes": 1_000_000,
                                                  "identical": True, "compare": ""})
    text = format_side_by_side(1000, duck, spark)
    assert "50,000" in text.split("duckdb dbt transform")[1].splitlines()[0]
    assert "20,000" in text.split("spark transform")[1].splitlines()[0]
    assert "2,500" in text and "20.0 bytes/row" in text and "identical to DuckDB's" in text
    spark.data["identical"] = False
    assert "DIFFER" in format_side_by_side(1000, duck, spark)
