"""The cheaper query forms (query_plan.running, .mem) equal the per-step subqueries they replace, exactly.

Against the backfilled scenario (pods starting and ending inside hours, a container restart with two cgroups,
HA kube-state-metrics): where `running` gives `first`, it is the subquery's; where no `needs_last` is counted,
max(last, last_now) is last_now; where `mem` counts one series, its average is the per-step one. The rest is
what follow_up_pods sends to `per_step`; the test checks that such cases exist, so it cannot pass vacuously.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

import pytest

from pipelines.settings import PrometheusSettings
from pipelines.sources.prometheus import PrometheusClient, _plan, _Runner, equal_matcher, hour_chunks
from pipelines.sources.prometheus.assemble_pods import follow_up_pods
from pipelines.sources.prometheus.frames import by_part
from tests.fixtures.prom_scenario import DAY, HOURS, SCRAPE_S

pytestmark = [pytest.mark.integration, pytest.mark.prometheus]

Key = tuple[datetime, str, str, str, str]


def _key(p: Any) -> Key:
    h, lab, _ = p
    return h, lab.get("namespace", ""), lab.get("pod", ""), lab.get("uid", ""), lab.get("container", "")


def test_cheaper_forms_equal_the_per_step_subqueries(prometheus_scenario: Any) -> None:
    hours = [DAY + timedelta(hours=i) for i in range(HOURS)]
    settled_elsewhere = {"first": 0, "last": 0, "mem": 0}
    compared = {"first": 0, "last": 0, "mem": 0}
    for cluster in ("small", "big", "fleet-east", "fleet-west", "legacy-ksm"):
        client = PrometheusClient(PrometheusSettings(url=prometheus_scenario.url, retries=1, timeout_s=30), cluster)
        left_open = client.left_open_ranges()
        base = [equal_matcher("cluster", cluster)]
        plan = {q.name: q for q in _plan(base, left_open, SCRAPE_S)}
        runner = _Runner(client, cluster, base, "1h" if left_open else "59m59s")
        for chunk in hour_chunks(hours):
            running_pts = runner.run(plan["running"], chunk)
            mem_pts = runner.run(plan["mem"], chunk)
            running, mem = by_part(running_pts), by_part(mem_pts)
            exact = by_part(runner.run(plan["per_step"], chunk))  # unrestricted: every container's subqueries
            first = {_key(p): p[2] for p in exact["first"]}
            last = {_key(p): p[2] for p in exact["last"]}
            avg = {_key(p): p[2] for p in exact["mem_avg"]}

            for p in running["first"]:
                assert first[_key(p)] == p[2], p
                compared["first"] += 1
            needs_last = {_key(p) for p in running["needs_last"]}
            for p in running["last_now"]:
                if _key(p) not in needs_last:
                    assert max(last.get(_key(p), p[2]), p[2]) == p[2], p
                    compared["last"] += 1
            single = {_key(p) for p in mem["series"] if p[2] == 1}
            for p in mem["avg"]:
                if _key(p) in single:
                    assert avg[_key(p)] == p[2], p
                    compared["mem"] += 1

            # what the cheaper forms leave open is sent to per_step
            counted = {_key(p) for p in running["count"] if p[2]}
            open_first = {k for k in counted - {_key(p) for p in running["first"]} if k in first}
            multi = {_key(p) for p in mem["series"] if p[2] != 1}
            pods = set(follow_up_pods({"running": running_pts, "mem": mem_pts}, [chunk])[0])
            assert {k[2] for k in open_first | needs_last | multi} <= pods
            settled_elsewhere["first"] += len(open_first)
            settled_elsewhere["last"] += len(needs_last & set(last))
            settled_elsewhere["mem"] += len(multi)
    assert all(compared.values()), compared
    assert all(settled_elsewhere.values()), settled_elsewhere  # the scenario exercises every follow-up case
