"""Filter language v2 (METHOD A16): every operator, lists, precedence, parentheses, aliases, errors, binding."""

from __future__ import annotations

from collections.abc import Iterator

import duckdb
import pytest

from pipelines.serving.query.aggregates import Params, aggregate_key_sql
from pipelines.serving.query.errors import QueryError
from pipelines.serving.query.filters import Condition, Group, compile_filter, parse_filter
from tests.fixtures.opencost_fixture import create_allocation_table, insert_rows, opencost_rows


@pytest.fixture(scope="module")
def con() -> Iterator[duckdb.DuckDBPyConnection]:
    c = duckdb.connect()
    create_allocation_table(c)
    rows = [r for r in opencost_rows() if r["allocation_kind"] == "workload"]
    rows[0]["labels"] = '{"app": "app1", "env": "env1", "app.kubernetes.io/name": "web"}'
    rows[0]["namespace_labels"] = '{"team": "blue"}'
    insert_rows(c, rows)
    yield c
    c.close()


def match(con: duckdb.DuckDBPyConnection, text: str) -> set[str]:
    params = Params()
    pred = compile_filter(parse_filter(text), params)
    sql = f"SELECT cluster || '/' || container FROM marts.fct_allocation_daily WHERE {pred}"  # noqa: S608
    return {r[0] for r in con.execute(sql, params.values).fetchall()}


def containers(names: str) -> set[str]:
    return set(names.split())


@pytest.mark.parametrize(("text", "expected"), [
    ('namespace:"namespace1"', "cluster1/container1 cluster1/container2 cluster1/container3"),
    ('namespace!:"namespace2","namespace3"', "cluster1/container1 cluster1/container2 cluster1/container3"),
    ('pod~:"vwx"', "cluster2/container8 cluster2/container9"),
    ('pod!~:"-"', "cluster1/container1"),
    ('container<~:"container1"', "cluster1/container1"),
    ('node!<~:"c1","node1"', "cluster2/container6 cluster2/container7 cluster2/container8 cluster2/container9"),
    ('pod~>:"ghi"', "cluster1/container4 cluster1/container5"),
    ('pod!~>:"ghi"+cluster:"cluster1"', "cluster1/container1 cluster1/container2 cluster1/container3 cluster1/container6"),
    ('controllerKind:"DaemonSet"', "cluster1/container6 cluster2/container6"),
    ('controllerName:"__unallocated__"', "cluster1/container1"),
    ('services:"service1"', "cluster1/container6 cluster2/container6"),
    ('services~:"vice"+cluster:"cluster2"', "cluster2/container6"),
    ('label[app]:"app2"+cluster:"cluster2"', "cluster2/container4 cluster2/container5"),
    ('label[env]:"__unallocated__"+cluster:"cluster1"',
     "cluster1/container2 cluster1/container3 cluster1/container6"),
    ('label[app_kubernetes_io_name]:"web"', "cluster1/container1"),  # sanitised key matches the original
    ('label[app.kubernetes.io/name]:"web"', "cluster1/container1"),
    ('label:"env"', "cluster1/container1 cluster1/container4 cluster1/container5"),
    ('annotation[team]:"team1"', "cluster2/container7 cluster2/container9"),
    ('team:"blue"', "cluster1/container1"),  # alias → label[team], namespace labels as fallback
    ('product:"app1"', "cluster1/container1"),  # alias → label[app]
    ('provider~:"cluster2/node3"', "cluster2/container8 cluster2/container9"),
])
def test_operators(con: duckdb.DuckDBPyConnection, text: str, expected: str) -> None:
    assert match(con, text) == containers(expected)


def test_precedence_and_parentheses(con: duckdb.DuckDBPyConnection) -> None:
    a = match(con, '(namespace:"namespace1" | namespace:"namespace3") + cluster:"cluster2"')
    assert a == containers("cluster2/container7 cluster2/container8 cluster2/container9")
    b = match(con, 'namespace:"namespace1" | (namespace:"namespace3" + container:"container7")')
    assert b == containers("cluster1/container1 cluster1/container2 cluster1/container3 cluster2/container7")
    assert match(con, '((pod:"pod1"))') == {"cluster1/container1"}
    with pytest.raises(QueryError, match="parentheses"):
        parse_filter('namespace:"a" + pod:"b" | pod:"c"')


def test_ast_shape() -> None:
    node = parse_filter('cluster:"a","b" + (pod~:"x" | label[app]!:"y")')
    assert node == Group("+", (Condition("cluster", None, ":", ("a", "b")),
                               Group("|", (Condition("pod", None, "~:", ("x",)),
                                           Condition("label", "app", "!:", ("y",))))))
    assert parse_filter("   ") is None
    assert parse_filter('pod:"a\\"b"') == Condition("pod", None, ":", ('a"b',))


@pytest.mark.parametrize("text", [
    'namespace:kubecost', 'namespace="x"', 'foo:"x"', 'label[:"x"', 'label["a b"]:"x"', '(namespace:"x"',
    'namespace:"x")', 'namespace:"x"+', '+namespace:"x"', 'namespace:"unterminated', 'label~:"app"',
    'cluster[x]:"y"', 'namespace:"x",', "namespace:'x'", "((((((((((((((((((((((((((((((((((pod:\"a\"))))))))))))))))))))))))))))))))))",
    'namespäce:"x"', 'namespace :: "x"', 'pod:"a" pod:"b"',
])
def test_errors_name_the_parameter(text: str) -> None:
    with pytest.raises(QueryError) as exc:
        parse_filter(text)
    assert exc.value.param == "filter" and exc.value.message.startswith("filter: ")


def test_values_are_bound_never_inlined() -> None:
    params = Params()
    hostile = "x'); DROP TABLE marts.fct_allocation_daily; --"
    sql = compile_filter(parse_filter(f'namespace:"{hostile}"+label[app]:"{hostile}"'), params)
    assert hostile not in sql and "DROP" not in sql
    assert hostile in params.values.values()


def test_aggregate_keys(con: duckdb.DuckDBPyConnection) -> None:
    def keys(aggregate: str) -> set[str]:
        params = Params()
        sql = f"SELECT DISTINCT {aggregate_key_sql(aggregate, params)} FROM marts.fct_allocation_daily"  # noqa: S608
        return {r[0] for r in con.execute(sql, params.values).fetchall()}

    assert keys("controller") == {"__unallocated__", "deployment:deployment1", "deployment:deployment2",
                                  "daemonset:daemonset1", "deployment:deployment3", "statefulset:statefulset1"}
    assert keys("statefulset") == {"__unallocated__", "statefulset1"}
    assert keys("service") == {"__unallocated__", "service1"}
    assert keys("cluster,label:app") == {"cluster1/app1", "cluster1/app2", "cluster1/__unallocated__",
                                         "cluster2/app2", "cluster2/__unallocated__"}
    assert keys("label:team") == {"blue", "__unallocated__"}
    for bad in ("bogus", "label:", "label:a b", "cluster,,node", ",".join(["cluster"] * 13)):
        with pytest.raises(QueryError):
            keys(bad)
