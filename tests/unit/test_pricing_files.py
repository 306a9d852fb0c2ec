"""Validated loaders of user price files (pipelines/sources/pricing.py)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from pipelines.sources.pricing import (
    PricingFileError,
    load_custom_prices,
    load_node_price_csv,
    load_price_sheet,
)
from pipelines.warehouse.connection import ensure_raw_schema
from pipelines.warehouse.landing import replace_partitions

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "pricing"
SAMPLE_CSVS = sorted(FIXTURES.glob("pricing_schema*.csv"))
SHEET_HEADER = "provider,region,instance_type,hourly_usd,spot_hourly_usd\n"


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def _land(result) -> duckdb.DuckDBPyConnection:
    con = duckdb.connect()
    ensure_raw_schema(con)
    replace_partitions(con, result.batches, result.partitions)
    return con


# --- Kubecost CSV schema --------------------------------------------------------------------------------

def test_all_sample_csvs_load() -> None:
    assert len(SAMPLE_CSVS) == 5
    for path in SAMPLE_CSVS:
        result = load_node_price_csv(path)
        frame = result.batches["price_node_csv"]
        assert len(frame) >= 1, path
        assert result.partitions == [{"source_file": str(path.resolve())}]
        assert set(frame["asset_class"]) <= {"node", "gpu", "pv"}
        assert frame["market_price_hourly"].notna().all()


def test_sample_csv_values() -> None:
    frame = load_node_price_csv(FIXTURES / "pricing_schema.csv").batches["price_node_csv"]
    assert frame["line_no"].tolist() == [2, 3, 4]
    first = frame.iloc[0]
    assert (first.instance_id, first.asset_class, first.instance_id_field) == (
        "gke-standard-cluster-1-pool-1-91dc432d-cg69", "node", "metadata.name")
    assert first.market_price_hourly == 0.1337 and first.end_timestamp == "2019-04-17 23:34:22 UTC"
    assert pd.isna(first.region) and pd.isna(first.version)
    assert frame["market_price_hourly"].tolist() == [0.1337, 0.75, 0.80]

    regional = load_node_price_csv(FIXTURES / "pricing_schema_region.csv").batches["price_node_csv"]
    assert regional["region"].tolist()[:2] == ["regionone", "regiontwo"]
    assert pd.isna(regional["region"].iloc[2])  # blank region = any region → NULL
    mixed = load_node_price_csv(FIXTURES / "pricing_schema_mixed_gpu_ondemand.csv")  # no final newline
    assert mixed.batches["price_node_csv"]["instance_id_field"].tolist()[:2] == [
        "metadata.labels.TestClusterUsage"] * 2
    assert mixed.metadata["warnings"] == []

    con = _land(load_node_price_csv(FIXTURES / "pricing_schema_region.csv"))
    assert con.execute("select count(*), count(region) from raw.price_node_csv").fetchone() == (3, 2)


@pytest.mark.parametrize(("body", "message"), [
    ("EndTimestamp,InstanceID,Region,AssetClass,InstanceIDField,InstanceType,MarketPriceHourly,Version,Discount\n",
     "line 1, field Discount: unknown column 'Discount'"),
    ("EndTimestamp,InstanceID,Region,AssetClass,InstanceIDField,InstanceType,Version\n",
     "field MarketPriceHourly: required column 'MarketPriceHourly' is missing"),
    ("InstanceID,AssetClass,InstanceIDField,MarketPriceHourly\nn1,node,metadata.name,-0.1\n",
     "line 2, field MarketPriceHourly: '-0.1' is negative"),
    ("InstanceID,AssetClass,InstanceIDField,MarketPriceHourly\nn1,node,metadata.name,NaN\n",
     "line 2, field MarketPriceHourly: 'NaN' is not a finite price"),
    ("InstanceID,AssetClass,InstanceIDField,MarketPriceHourly\nn1,disk,metadata.name,0.1\n",
     "line 2, field AssetClass: 'disk' is not allowed; use one of node, gpu, pv"),
    ("InstanceID,AssetClass,InstanceIDField,MarketPriceHourly\nn1,node,metadata.name,0.1\n\n"
     "n1,node,metadata.name,0.2\n", "duplicate node price for 'n1'"),
    ("InstanceID,AssetClass,InstanceIDField,MarketPriceHourly\nn1,node,metadata.name,$0.10\n",
     "line 2, field MarketPriceHourly: '$0.10' is not a number"),
    ("InstanceID,AssetClass,InstanceIDField,MarketPriceHourly\n,node,metadata.name,0.1\n",
     "line 2, field InstanceID: the value is empty"),
])
def test_node_csv_errors(tmp_path: Path, body: str, message: str) -> None:
    path = _write(tmp_path, "nodes.csv", body)
    with pytest.raises(PricingFileError) as info:
        load_node_price_csv(path)
    assert str(path) in str(info.value)
    assert message in str(info.value)


def test_node_csv_duplicate_names_both_lines(tmp_path: Path) -> None:
    path = _write(tmp_path, "nodes.csv", "InstanceID,AssetClass,InstanceIDField,MarketPriceHourly\n"
                                         "n1,node,metadata.name,0.1\nn2,node,metadata.name,0.1\n"
                                         "n1,node,metadata.name,0.2\n")
    with pytest.raises(PricingFileError, match="on lines 2 and 4"):
        load_node_price_csv(path)


def test_node_csv_unknown_id_field_warns(tmp_path: Path) -> None:
    path = _write(tmp_path, "nodes.csv", "InstanceID,AssetClass,InstanceIDField,MarketPriceHourly\n"
                                         "n1,node,spec.nodeName,0.1\n")
    result = load_node_price_csv(path)
    assert "spec.nodeName" in result.metadata["warnings"][0]


# --- instance price sheet -------------------------------------------------------------------------------

def test_price_sheet_loads_and_lands(tmp_path: Path) -> None:
    path = _write(tmp_path, "sheet.csv", SHEET_HEADER + "aws,us-east-1,m5.large,0.096,0.0356\n"
                                                        "AWS,us-west-2,m5.large,0.096,\n"
                                                        "\n"
                                                        "azure,westeurope,Standard_D4s_v5,0.23,\n")
    result = load_price_sheet(path)
    frame = result.batches["price_sheet"]
    assert frame["line_no"].tolist() == [2, 3, 5]
    assert frame["provider"].tolist() == ["aws", "aws", "azure"]
    assert frame["hourly_usd"].tolist() == [0.096, 0.096, 0.23]
    assert frame["spot_hourly_usd"].iloc[0] == 0.0356 and pd.isna(frame["spot_hourly_usd"].iloc[1])
    con = _land(result)
    assert con.execute("select count(*), count(spot_hourly_usd), any_value(source_file) "
                       "from raw.price_sheet").fetchone() == (3, 1, str(path.resolve()))


def test_price_sheet_spot_column_is_optional(tmp_path: Path) -> None:
    path = _write(tmp_path, "sheet.csv", "provider,region,instance_type,hourly_usd\ngcp,europe-west1,n2-standard-4,0.2\n")
    frame = load_price_sheet(path).batches["price_sheet"]
    assert frame["hourly_usd"].tolist() == [0.2] and pd.isna(frame["spot_hourly_usd"].iloc[0])


@pytest.mark.parametrize(("body", "message"), [
    ("provider,region,instance_type,hourly_usd,currency\n", "line 1, field currency: unknown column 'currency'"),
    ("provider,region,hourly_usd\n", "field instance_type: required column 'instance_type' is missing"),
    (SHEET_HEADER + "aws,us-east-1,m5.large,-0.096,\n", "line 2, field hourly_usd: '-0.096' is negative"),
    (SHEET_HEADER + "aws,us-east-1,m5.large,0.096,nan\n", "line 2, field spot_hourly_usd: 'nan' is not a finite"),
    (SHEET_HEADER + "aws,us-east-1,m5.large,,\n", "line 2, field hourly_usd: the price is empty"),
    (SHEET_HEADER + "aws,us-east-1,m5.large,0,096,\n", "line 2: 6 fields but the header has 5"),
    (SHEET_HEADER + "amazon,us-east-1,m5.large,0.096,\n",
     "line 2, field provider: 'amazon' is not a known provider; use one of aws, gcp, azure, alibaba, oracle, "
     "ovhcloud, scaleway, onprem"),
    (SHEET_HEADER + "aws,us-east-1,m5.large,0.096,\naws,us-east-1,m5.xlarge,0.192,\naws,us-east-1,m5.large,0.1,\n",
     "line 4, field instance_type: duplicate price for aws/us-east-1/m5.large on lines 2 and 4"),
    ("", "the file is empty"),
])
def test_price_sheet_errors(tmp_path: Path, body: str, message: str) -> None:
    path = _write(tmp_path, "sheet.csv", body)
    with pytest.raises(PricingFileError) as info:
        load_price_sheet(path)
    assert str(info.value).startswith(str(path.resolve()))
    assert message in str(info.value)


def test_missing_file_is_a_pricing_error(tmp_path: Path) -> None:
    with pytest.raises(PricingFileError, match="price file not found"):
        load_price_sheet(tmp_path / "nope.csv")


# --- default.json-shaped custom prices ------------------------------------------------------------------

def test_default_json_loads_hourly() -> None:
    result = load_custom_prices(FIXTURES / "default.json", "hourly")
    frame = result.batches["price_custom"].set_index("price_key")
    assert frame.loc["CPU", "hourly_value"] == 0.031611 and frame.loc["RAM", "hourly_value"] == 0.004237
    assert frame.loc["storage", "hourly_value"] == 0.00005479452
    assert frame.loc["internetNetworkEgress", "value_as_given"] == 0.12
    assert set(frame["convention"]) == {"hourly"}
    assert (frame["hourly_value"] == frame["value_as_given"]).all()
    assert sorted(result.metadata["skipped_keys"]) == ["description", "provider"]
    assert len(frame) == 9
    con = _land(result)
    assert con.execute("select count(*) from raw.price_custom").fetchone() == (9,)


def test_provider_files_shape_loads(tmp_path: Path) -> None:
    """aws.json-like files carry many non-price keys (labels, bucket names, secrets): all skipped."""
    data = {"provider": "custom", "CPU": 0.031611, "spotCPU": "0.006655", "RAM": "0.004237", "spotGPU": "",
            "spotLabel": "kops.k8s.io/instancegroup", "spotLabelValue": "spotinstance-nodes",
            "awsSpotDataRegion": "", "projectID": "", "customPricesEnabled": "true", "defaultLBPrice": "0.007"}
    result = load_custom_prices(_write(tmp_path, "aws.json", json.dumps(data)), "hourly")
    assert sorted(result.batches["price_custom"]["price_key"]) == ["CPU", "RAM", "defaultLBPrice", "spotCPU"]
    assert result.metadata["empty_keys"] == ["spotGPU"]
    assert "customPricesEnabled" in result.metadata["skipped_keys"]


def test_monthly_conversion_exact(tmp_path: Path) -> None:
    data = {"CPU": "23.076", "spotCPU": 4.858, "RAM": "3.09301", "GPU": "693.5", "storage": "0.04",
            "internetNetworkEgress": "0.12", "LoadBalancer": 0.025}
    result = load_custom_prices(_write(tmp_path, "monthly.json", json.dumps(data)), "monthly")
    frame = result.batches["price_custom"].set_index("price_key")
    assert frame.loc["CPU", "value_as_given"] == 23.076
    assert frame.loc["CPU", "hourly_value"] == pytest.approx(0.031611, abs=5e-7)
    assert frame.loc["CPU", "hourly_value"] == 23.076 / 730
    assert frame.loc["storage", "hourly_value"] == 0.04 / 730 == pytest.approx(0.00005479452, rel=1e-9)
    assert frame.loc["GPU", "hourly_value"] == 0.95
    # egress and load balancer are never monthly
    assert frame.loc["internetNetworkEgress", "hourly_value"] == 0.12
    assert frame.loc["LoadBalancer", "hourly_value"] == 0.025
    assert set(frame["convention"]) == {"monthly"}


def test_monthly_file_read_as_hourly_is_rejected(tmp_path: Path) -> None:
    path = _write(tmp_path, "monthly.json", json.dumps({"CPU": "23.076", "RAM": "3.09"}))
    with pytest.raises(PricingFileError) as info:
        load_custom_prices(path, "hourly")
    message = str(info.value)
    assert str(path.resolve()) in message and "field CPU" in message
    assert "implausible" in message and "custom_convention: monthly" in message


@pytest.mark.parametrize(("data", "convention", "message"), [
    ({"RAM": "3.09"}, "hourly", "field RAM: '3.09' read as hourly is implausible (> 0.5 $/GiB-h)"),
    ({"storage": "0.04"}, "hourly", "field storage: '0.04' read as hourly is implausible"),
    ({"CPU": "-0.03"}, "hourly", "field CPU: '-0.03' is negative"),
    ({"CPU": "NaN"}, "hourly", "field CPU: 'NaN' is not a finite price"),
    ({"CPU": "cheap"}, "hourly", "field CPU: 'cheap' is not a number"),
    ({"CPU": True}, "hourly", "field CPU: True is not a price"),
    ({"cpu": "0.03"}, "hourly", "unknown key 'cpu'; did you mean 'CPU'?"),
    ({"internetNetworkEgress": "87.6"}, "monthly", "is implausible (> 1 $/GiB after the monthly convention)"),
    ({"provider": "custom"}, "hourly", "no price keys found"),
])
def test_custom_price_errors(tmp_path: Path, data: dict, convention: str, message: str) -> None:
    path = _write(tmp_path, "prices.json", json.dumps(data))
    with pytest.raises(PricingFileError) as info:
        load_custom_prices(path, convention)
    assert str(path.resolve()) in str(info.value)
    assert message in str(info.value)


def test_custom_prices_bad_json_and_convention(tmp_path: Path) -> None:
    path = _write(tmp_path, "prices.json", '{\n  "CPU": "0.03",\n}\n')
    with pytest.raises(PricingFileError, match=r"line 3: not valid JSON"):
        load_custom_prices(path)
    with pytest.raises(PricingFileError, match="custom_convention: 'yearly'"):
        load_custom_prices(FIXTURES / "default.json", "yearly")
    with pytest.raises(PricingFileError, match="expected a JSON object"):
        load_custom_prices(_write(tmp_path, "list.json", "[1, 2]"))


def test_hourly_file_read_as_monthly_warns() -> None:
    result = load_custom_prices(FIXTURES / "default.json", "monthly")
    assert any("hourly file read as monthly" in w for w in result.metadata["warnings"])


def test_pricing_error_is_value_error() -> None:
    assert issubclass(PricingFileError, ValueError)


# --- plausibility, strict decimals, duplicate JSON keys, paths that are not files ----------------------------

@pytest.mark.parametrize(("cell", "message"), [
    ("1e300", "'1e300' is implausible (> 1000 $/instance-h)"),
    ("1000.01", "'1000.01' is implausible (> 1000 $/instance-h)"),
    ("1e400", "'1e400' is not a finite price"),
    ("1_000", "'1_000' is not a plain decimal; write ASCII digits"),
    ("0.0_96", "'0.0_96' is not a plain decimal"),
    ("١٢", "'١٢' is not a plain decimal"),
    ("１", "'１' is not a plain decimal"),
    ("0.٠٩٦", "is not a plain decimal"),
    ('"1,000"', "'1,000' is not a number"),
    ("infinity", "'infinity' is not a finite price"),
])
def test_price_sheet_rejects_implausible_and_non_ascii_prices(tmp_path: Path, cell: str, message: str) -> None:
    for column, row in (("hourly_usd", f"aws,us-east-1,m5.large,{cell},\n"),
                        ("spot_hourly_usd", f"aws,us-east-1,m5.large,0.096,{cell}\n")):
        path = _write(tmp_path, "sheet.csv", SHEET_HEADER + row)
        with pytest.raises(PricingFileError) as info:
            load_price_sheet(path)
        assert f"line 2, field {column}: " in str(info.value)
        assert message in str(info.value)
        assert "\n" not in str(info.value)


def test_price_sheet_plain_decimals_still_load(tmp_path: Path) -> None:
    path = _write(tmp_path, "sheet.csv", SHEET_HEADER + "aws,us-east-1,m5.large, 0.096 ,9.6E-3\n"
                                                        "aws,us-east-1,u-24tb1.112xlarge,218.4,\n"
                                                        "aws,us-east-1,t4g.nano,.0042,+0.0013\n"
                                                        "aws,us-east-1,cap,1000,0\n")
    frame = load_price_sheet(path).batches["price_sheet"]
    assert frame["hourly_usd"].tolist() == [0.096, 218.4, 0.0042, 1000.0]
    assert frame["spot_hourly_usd"].tolist()[0] == 0.0096


@pytest.mark.parametrize(("row", "message"), [
    ("n1,node,metadata.name,1e300", "field MarketPriceHourly: '1e300' is implausible (> 1000 $/instance-h)"),
    ("Tesla_T4,gpu,nvidia.com/gpu_type,250", "field MarketPriceHourly: '250' is implausible (> 50 $/GPU-h)"),
    ("pv1,pv,metadata.name,5000", "field MarketPriceHourly: '5000' is implausible (> 1000 $/volume-h)"),
    ("n1,node,metadata.name,1_0", "field MarketPriceHourly: '1_0' is not a plain decimal"),
    ("n1,node,metadata.name,٠.١", "field MarketPriceHourly: '٠.١' is not a plain decimal"),
])
def test_node_csv_caps_and_decimals(tmp_path: Path, row: str, message: str) -> None:
    path = _write(tmp_path, "nodes.csv", f"InstanceID,AssetClass,InstanceIDField,MarketPriceHourly\n{row}\n")
    with pytest.raises(PricingFileError) as info:
        load_node_price_csv(path)
    assert f"{path.resolve()}, line 2, {message}" in str(info.value)


@pytest.mark.parametrize(("text", "message"), [
    ('{"CPU": "0.031611", "RAM": "0.004237", "CPU": "0.05"}', "field CPU: key 'CPU' appears twice"),
    ('{"CPU": "0.03", "nested": {"a": 1, "a": 2}}', "field a: key 'a' appears twice"),
    ('{"CPU": 1e300}', "field CPU: 1e+300 read as hourly is implausible"),
    ('{"LoadBalancer": "1e300"}', "field LoadBalancer: '1e300' is implausible (> 10 $/h"),
    ('{"LBIngressDataCost": "5"}', "field LBIngressDataCost: '5' is implausible (> 1 $/GiB"),
    ('{"CPU": 1' + "0" * 400 + "}", "field CPU: 1000"),
    ('{"CPU": NaN}', "field CPU: nan is not a finite price"),
    ('{"CPU": Infinity}', "field CPU: inf is not a finite price"),
    ('{"CPU": "0.0_3"}', "field CPU: '0.0_3' is not a plain decimal"),
    ('{"GPU": "٠.٩٥"}', "field GPU: '٠.٩٥' is not a plain decimal"),
])
def test_custom_prices_duplicates_caps_and_decimals(tmp_path: Path, text: str, message: str) -> None:
    path = _write(tmp_path, "prices.json", text)
    with pytest.raises(PricingFileError) as info:
        load_custom_prices(path, "hourly")
    assert str(info.value).startswith(str(path.resolve()))
    assert message in str(info.value)


@pytest.mark.parametrize("loader", [load_price_sheet, load_node_price_csv, load_custom_prices])
def test_directory_and_fifo_are_not_reported_as_missing(tmp_path: Path, loader) -> None:
    folder = tmp_path / "prices.csv"
    folder.mkdir()
    with pytest.raises(PricingFileError, match=r"prices\.csv: is a directory, not a file; a price file must be a "
                                               r"regular file"):
        loader(folder)
    fifo = tmp_path / "prices.fifo"
    os.mkfifo(fifo)
    with pytest.raises(PricingFileError, match=r"prices\.fifo: is not a regular file \(a FIFO"):
        loader(fifo)  # checked before opening: a FIFO would block the read forever
    with pytest.raises(PricingFileError, match="price file not found"):
        loader(tmp_path / "nope.csv")
