"""Asset endpoint parameters: the filter and aggregate compile to SQL that DuckDB accepts, and any hostile input is a
QueryError naming a parameter (a 400), never another exception (a 500)."""

from __future__ import annotations

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pipelines.serving.query.aggregates import Params
from pipelines.serving.query.asset_query import compile_asset_filter, key_sql, parse_asset_filter
from pipelines.serving.query.errors import QueryError
from pipelines.serving.routes.assets import IMPLEMENTED, asset_query_from_params

ROWS = """SELECT * FROM (VALUES
    ('Node', 'Compute', 'aws', NULL, NULL, 'Kubernetes', 'c1', 'n1', 'aws:///i-1'),
    ('Disk', 'Storage', NULL, NULL, NULL, 'Kubernetes', 'c1', 'pv-1', 'pv-1'),
    ('ClusterManagement', 'Management', 'gcp', NULL, NULL, 'Kubernetes', 'c2', 'cluster-management', NULL))
    AS t(asset_type, category, prov, account, project, service, cluster, asset_name, provider_id)"""


def matching(filt: str) -> list[str]:
    params = Params()
    where = compile_asset_filter(parse_asset_filter(filt), params)
    sql = f"SELECT asset_name FROM ({ROWS}) WHERE {where} ORDER BY asset_name"  # noqa: S608 - test
    return [r[0] for r in duckdb.connect().execute(sql, params.values).fetchall()]


@pytest.mark.parametrize(("filt", "want"), [
    ('assetType:"node"', ["n1"]),
    ('type:"Disk","ClusterManagement"', ["cluster-management", "pv-1"]),
    ('provider:"AWS"', ["n1"]),
    ('provider:"__undefined__"', ["pv-1"]),
    ('category!:"Compute"+cluster:"c1"', ["pv-1"]),
    ('name<~:"pv"|providerID~>:"i-1"', ["n1", "pv-1"]),
    ('(cluster:"c2"|name:"n1")+service:"Kubernetes"', ["cluster-management", "n1"]),
    ('label[team]:"a"', []),
    ('label[team]!:"a"', ["cluster-management", "n1", "pv-1"]),
    ('label[team]:"__unallocated__"', ["cluster-management", "n1", "pv-1"]),
])
def test_filter_semantics(filt: str, want: list[str]) -> None:
    assert matching(filt) == want


def test_keys() -> None:
    params = Params()
    sql = f"SELECT {key_sql('type,cluster,label:team', params)} FROM ({ROWS}) ORDER BY 1"  # noqa: S608 - test
    assert [r[0] for r in duckdb.connect().execute(sql, params.values).fetchall()] == [
        "ClusterManagement/c2/__undefined__", "Disk/c1/__undefined__", "Node/c1/__undefined__"]
    default = f"SELECT {key_sql('', params)} FROM ({ROWS}) WHERE asset_name = 'n1'"  # noqa: S608 - test
    assert duckdb.connect().execute(default, params.values).fetchone()[0] == (
        "aws/__undefined__/__undefined__/Compute/c1/Node/Kubernetes/aws:///i-1/n1")


@pytest.mark.parametrize(("params", "name"), [
    ({"aggregate": "namespace"}, "aggregate"), ({"aggregate": "type,,cluster"}, "aggregate"),
    ({"filter": 'node:"x"'}, "filter"), ({"filter": 'type:"x"+cluster:"y"|name:"z"'}, "filter"),
    ({"filter": 'label~:"x"'}, "filter"), ({"filter": 'type[x]:"y"'}, "filter"), ({"offset": "x"}, "offset"),
    ({"format": "xml"}, "format"), ({"accumulate": "sometimes"}, "accumulate"), ({"step": "2h"}, "step"),
    ({"window": "soon"}, "window"), ({"foo": "1", "strict": "true"}, "foo"), ({"strict": "maybe"}, "strict"),
])
def test_bad_parameters_name_themselves(params: dict[str, str], name: str) -> None:
    with pytest.raises(QueryError) as exc:
        asset_query_from_params({"window": "2024-03-01T00:00:00Z,2024-03-02T00:00:00Z", **params},
                                "kubecost").validate()
    assert exc.value.param == name and exc.value.status == 400


def test_carbon_has_no_csv_and_opencost_notes_partial_accumulation() -> None:
    with pytest.raises(QueryError):
        asset_query_from_params({"window": "7d", "format": "csv"}, "carbon")
    q = asset_query_from_params({"window": "7d", "accumulate": "day"}, "opencost")
    assert q.accumulate == "all" and any("one set" in n for n in q.notes)
    assert not asset_query_from_params({"window": "7d", "accumulate": "true"}, "opencost").notes


TEXT = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=60) | st.sampled_from(
    ['type:"a"', 'label[x]:"y"', "(", ")", '"', "+", "|", "!~:", "label:", ",", "cluster:\"a\",\"b\""])


@settings(max_examples=300, deadline=None)
@given(name=st.sampled_from(sorted(IMPLEMENTED)), value=TEXT, flavor=st.sampled_from(["kubecost", "opencost", "carbon"]))
def test_hostile_values_are_query_errors(name: str, value: str, flavor: str) -> None:
    params = {"window": "2024-03-01T00:00:00Z,2024-03-05T00:00:00Z", name: value}
    try:
        c = asset_query_from_params(params, flavor).validate()
    except QueryError as exc:
        assert exc.status == 400 and exc.message.startswith(f"{exc.param}:")
        return
    # what validates compiles to SQL DuckDB accepts
    sql = f"SELECT {c['key_sql']} FROM ({ROWS}) WHERE {c['filter_sql']}"  # noqa: S608 - test
    duckdb.connect().execute(sql, c["params"].values).fetchall()
