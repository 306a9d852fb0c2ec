"""One label lookup for the API and the shared mart (issue 12): the API's `label:` keys, filters and shareLabels
render the sharing macro's `label_lookup`, so a label in either key form is found the same way by both."""

import duckdb
import pytest

from pipelines.serving.query.aggregates import Params, map_lookup_sql
from pipelines.warehouse.sharing_macros import sharing_macros

ROWS = [
    ('{"app.kubernetes.io/part-of": "monitoring"}', "{}"),  # original key stored (Kubernetes API)
    ('{"app_kubernetes_io_part_of": "shop"}', "{}"),  # sanitised key stored (kube-state-metrics)
    ("{}", '{"app.kubernetes.io/part-of": "ns-level"}'),  # only the namespace has it
    ('{"app.kubernetes.io/part-of": "own"}', '{"app.kubernetes.io/part-of": "ns"}'),  # the pod's own wins
    ('{"app": "x"}', "{}"),
]


@pytest.fixture(scope="module")
def con():
    c = duckdb.connect()
    c.execute("create table t (i int, labels varchar, namespace_labels varchar)")
    c.executemany("insert into t values (?, ?, ?)", [(i, a, b) for i, (a, b) in enumerate(ROWS)])
    yield c
    c.close()


def _values(con, key: str) -> list:
    params = Params()
    sql = f"select {map_lookup_sql('label', key, params)} from t order by i"  # noqa: S608 - the expression under test
    return [r[0] for r in con.execute(sql, params.values).fetchall()]


@pytest.mark.parametrize("key", ["app.kubernetes.io/part-of", "app_kubernetes_io_part_of"])
def test_either_key_form_finds_either_stored_form(con, key):
    assert _values(con, key) == ["monitoring", "shop", "ns-level", "own", None]


def test_plain_keys_skip_the_key_scan(con):
    sql = str(sharing_macros().label_lookup(["labels"], "app"))
    assert "list_filter" not in sql
    assert _values(con, "app") == [None, None, None, None, "x"]


def test_the_api_renders_the_macro_the_mart_uses():
    params = Params()
    macro = str(sharing_macros().label_lookup(["labels", "namespace_labels"], "team.io/owner"))
    assert map_lookup_sql("label", "team.io/owner", params) == f"nullif({macro}, '')"
    assert params.values == {}
