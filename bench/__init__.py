"""kubeledger benchmarks at real cluster sizes (`python -m bench`, `kubeledger bench`).

Each stage of the daily pipeline (generate, load, dbt seed/staging/intermediate/marts, publish, query) runs in
its own child process so its wall time and peak RSS (``ru_maxrss`` from ``os.wait4``) are measured apart; the
reconciliation totals are checked at every scale. See BENCHMARKS.md for the latest numbers.
"""

SCALES: dict[int, tuple[int, int]] = {
    # nodes: (pods per node, containers per pod)
    100: (30, 2),
    1000: (30, 2),
    5000: (30, 2),
}
