"""Prices: OpenCost's price files, LoadBalancer prices and the curated instance price sheet."""

from __future__ import annotations

import json
from pathlib import Path

from .common import NN, UQ, Col, Seed, accepted, num, unique_combo

INSTANCE_PRICE_SOURCE = "curated list price (verify before production use)"


# OpenCost JSON keys that hold hourly prices -> (seed price_key, unit)
OPENCOST_PRICE_KEYS = {
    "CPU": ("CPU", "USD/vCPU-h"),
    "spotCPU": ("spotCPU", "USD/vCPU-h"),
    "RAM": ("RAM", "USD/GiB-h"),
    "spotRAM": ("spotRAM", "USD/GiB-h"),
    "GPU": ("GPU", "USD/GPU-h"),
    "spotGPU": ("spotGPU", "USD/GPU-h"),
    "storage": ("storage", "USD/GiB-h"),
    "zoneNetworkEgress": ("zoneNetworkEgress", "USD/GiB"),
    "regionNetworkEgress": ("regionNetworkEgress", "USD/GiB"),
    "internetNetworkEgress": ("internetNetworkEgress", "USD/GiB"),
    "defaultLBPrice": ("LoadBalancer", "USD/h"),
}
OPENCOST_FILES = ["default", "aws", "gcp", "azure", "alibaba", "oracle"]
# METHOD.md A4: OpenCost's built-in fallback when no pricing file is configured.
OPENCOST_BUILTIN = {
    "CPU": 0.021811,
    "spotCPU": 0.006543,
    "RAM": 0.002923,
    "spotRAM": 0.000877,
    "GPU": 0.95,
    "spotGPU": 0.308,
}


def _is_number(text: object) -> bool:
    if not isinstance(text, str | int | float) or isinstance(text, bool) or text == "":
        return False
    try:
        float(text)
    except ValueError:
        return False
    return True


def seed_opencost_prices(shared: Path) -> Seed:
    rows = []
    for provider in OPENCOST_FILES:
        data = json.loads((shared / "opencost" / f"{provider}.json").read_text(encoding="utf-8"))
        for key, value in data.items():
            if key not in OPENCOST_PRICE_KEYS:
                if _is_number(value):
                    raise SystemExit(f"opencost/{provider}.json: unknown numeric key {key!r}; classify it")
                continue  # provider name, description, credentials, labels...
            if not _is_number(value):
                raise SystemExit(f"opencost/{provider}.json: {key}={value!r} is not a number")
            price_key, unit = OPENCOST_PRICE_KEYS[key]
            rows.append(
                {
                    "provider": provider,
                    "price_key": price_key,
                    "hourly_usd": num(value),
                    "unit": unit,
                    "json_key": key,
                    "source": f"opencost/{provider}.json",
                }
            )
    for key, value in OPENCOST_BUILTIN.items():
        price_key, unit = OPENCOST_PRICE_KEYS[key]
        rows.append(
            {
                "provider": "opencost_builtin",
                "price_key": price_key,
                "hourly_usd": num(value),
                "unit": unit,
                "json_key": "",
                "source": "OpenCost built-in fallback (METHOD.md A4)",
            }
        )
    rows.sort(key=lambda r: (r["provider"], r["price_key"]))
    return Seed(
        "opencost_prices",
        "OpenCost default and provider price files (HOURLY values; OpenCost's monthly ConfigMap divides by "
        "730, these files do not) plus OpenCost's built-in fallback. Origin: shared/data/opencost/*.json "
        "(OpenCost, Apache-2.0). Non-price keys are dropped; defaultLBPrice is stored as LoadBalancer.",
        [
            Col(
                "provider",
                "varchar",
                "File stem (default, aws, gcp, azure, alibaba, oracle) or 'opencost_builtin'.",
                [NN, accepted(OPENCOST_FILES + ["opencost_builtin"])],
            ),
            Col(
                "price_key",
                "varchar",
                "Price name (OpenCost JSON key; defaultLBPrice -> LoadBalancer).",
                [NN, accepted(sorted({v[0] for v in OPENCOST_PRICE_KEYS.values()}))],
            ),
            Col(
                "hourly_usd",
                "double",
                "Price in USD per unit (see unit); hourly for CPU/RAM/GPU/storage.",
                [NN],
            ),
            Col(
                "unit",
                "varchar",
                "USD/vCPU-h, USD/GiB-h, USD/GPU-h, USD/GiB (egress) or USD/h (load balancer).",
                [NN, accepted(sorted({v[1] for v in OPENCOST_PRICE_KEYS.values()}))],
            ),
            Col("json_key", "varchar", "Original JSON key ('' / NULL for built-in rows)."),
            Col("source", "varchar", "Origin file or document.", [NN]),
        ],
        rows,
        [unique_combo("provider", "price_key")],
    )


LOAD_BALANCER = [
    ("aws", 0.025, "OpenCost implementation (METHOD.md A9)"),
    ("gcp", 0.025, "OpenCost implementation (METHOD.md A9)"),
    ("azure", 0.005, "OpenCost implementation (METHOD.md A9)"),
    ("alibaba", 0.007, "OpenCost implementation (METHOD.md A9); opencost/alibaba.json defaultLBPrice"),
    ("oracle", 0.0113, "OpenCost implementation (METHOD.md A9); opencost/oracle.json defaultLBPrice"),
    ("default", 0.025, "kubeledger default for unknown providers (= aws/gcp)"),
]


def seed_load_balancer_prices() -> Seed:
    rows = [{"provider": p, "hourly_usd": num(v), "source": s} for p, v, s in LOAD_BALANCER]
    rows.sort(key=lambda r: r["provider"])
    return Seed(
        "load_balancer_prices",
        "Hourly price of one LoadBalancer Service per provider (OpenCost implementation, METHOD.md A9).",
        [
            Col(
                "provider",
                "varchar",
                "aws, gcp, azure, alibaba, oracle, or 'default'.",
                [NN, UQ, accepted([p for p, _, _ in LOAD_BALANCER])],
            ),
            Col("hourly_usd", "double", "USD per service-hour.", [NN]),
            Col("source", "varchar", "Where the value comes from.", [NN]),
        ],
        rows,
    )


# (provider, region, instance_type, on-demand USD/h, confidence, note)
LIST = "list"
APPROX = "approximate"
GCP_EU_NOTE = "approximate: us-central1 per-resource rates x 1.10 (europe-west1 uplift)"
AZ_EU_NOTE = "approximate: westeurope pay-as-you-go, about 1.2 x eastus"
INSTANCE_PRICES = [
    # AWS, Linux, shared tenancy, on-demand
    ("aws", "us-east-1", "m5.large", 0.096, LIST, ""),
    ("aws", "us-east-1", "m5.xlarge", 0.192, LIST, ""),
    ("aws", "us-east-1", "m5.2xlarge", 0.384, LIST, ""),
    ("aws", "us-east-1", "m5.4xlarge", 0.768, LIST, ""),
    ("aws", "us-east-1", "c5.large", 0.085, LIST, ""),
    ("aws", "us-east-1", "c5.xlarge", 0.17, LIST, ""),
    ("aws", "us-east-1", "c5.2xlarge", 0.34, LIST, ""),
    ("aws", "us-east-1", "c5.4xlarge", 0.68, LIST, ""),
    ("aws", "us-east-1", "r5.large", 0.126, LIST, ""),
    ("aws", "us-east-1", "r5.xlarge", 0.252, LIST, ""),
    ("aws", "us-east-1", "t3.medium", 0.0416, LIST, ""),
    ("aws", "us-east-1", "t3.large", 0.0832, LIST, ""),
    ("aws", "us-east-1", "m6i.large", 0.096, LIST, ""),
    ("aws", "us-east-1", "m6i.xlarge", 0.192, LIST, ""),
    ("aws", "us-east-1", "m6g.large", 0.077, LIST, ""),
    ("aws", "us-east-1", "g4dn.xlarge", 0.526, LIST, ""),
    ("aws", "us-east-1", "g4dn.2xlarge", 0.752, LIST, ""),
    ("aws", "us-east-1", "p3.2xlarge", 3.06, LIST, ""),
    ("aws", "eu-west-1", "m5.large", 0.107, LIST, ""),
    ("aws", "eu-west-1", "m5.xlarge", 0.214, LIST, ""),
    ("aws", "eu-west-1", "m5.2xlarge", 0.428, LIST, ""),
    ("aws", "eu-west-1", "c5.xlarge", 0.192, LIST, ""),
    ("aws", "eu-west-1", "c5.2xlarge", 0.384, LIST, ""),
    ("aws", "eu-west-1", "r5.large", 0.141, LIST, ""),
    ("aws", "eu-west-1", "t3.medium", 0.0456, LIST, ""),
    ("aws", "eu-west-1", "m6i.large", 0.107, LIST, ""),
    ("aws", "eu-west-1", "g4dn.xlarge", 0.587, LIST, ""),
    ("aws", "eu-west-1", "p3.2xlarge", 3.305, LIST, ""),
    # GCP, on-demand (us-central1 = vCPU/RAM SKU rates x shape)
    ("gcp", "us-central1", "e2-medium", 0.033503, LIST, ""),
    ("gcp", "us-central1", "e2-standard-2", 0.067006, LIST, ""),
    ("gcp", "us-central1", "e2-standard-4", 0.134012, LIST, ""),
    ("gcp", "us-central1", "e2-standard-8", 0.268024, LIST, ""),
    ("gcp", "us-central1", "n2-standard-2", 0.097118, LIST, ""),
    ("gcp", "us-central1", "n2-standard-4", 0.194236, LIST, ""),
    ("gcp", "us-central1", "n2-standard-8", 0.388472, LIST, ""),
    ("gcp", "us-central1", "n1-standard-1", 0.0475, LIST, ""),
    ("gcp", "us-central1", "n1-standard-2", 0.095, LIST, ""),
    ("gcp", "us-central1", "n1-standard-4", 0.19, LIST, ""),
    ("gcp", "us-central1", "c2-standard-4", 0.20872, LIST, ""),
    ("gcp", "europe-west1", "e2-standard-4", 0.147413, APPROX, GCP_EU_NOTE),
    ("gcp", "europe-west1", "e2-standard-8", 0.294826, APPROX, GCP_EU_NOTE),
    ("gcp", "europe-west1", "n2-standard-4", 0.21366, APPROX, GCP_EU_NOTE),
    ("gcp", "europe-west1", "n1-standard-4", 0.209, APPROX, GCP_EU_NOTE),
    # Azure, Linux pay-as-you-go
    ("azure", "eastus", "Standard_B2s", 0.0416, LIST, ""),
    ("azure", "eastus", "Standard_D2s_v3", 0.096, LIST, ""),
    ("azure", "eastus", "Standard_D4s_v3", 0.192, LIST, ""),
    ("azure", "eastus", "Standard_D8s_v3", 0.384, LIST, ""),
    ("azure", "eastus", "Standard_D2s_v5", 0.096, LIST, ""),
    ("azure", "eastus", "Standard_D4s_v5", 0.192, LIST, ""),
    ("azure", "eastus", "Standard_E2s_v3", 0.126, LIST, ""),
    ("azure", "eastus", "Standard_E4s_v3", 0.252, LIST, ""),
    ("azure", "eastus", "Standard_F4s_v2", 0.169, LIST, ""),
    ("azure", "eastus", "Standard_NC6s_v3", 3.06, LIST, ""),
    ("azure", "westeurope", "Standard_D2s_v3", 0.115, APPROX, AZ_EU_NOTE),
    ("azure", "westeurope", "Standard_D4s_v3", 0.23, APPROX, AZ_EU_NOTE),
    ("azure", "westeurope", "Standard_D4s_v5", 0.23, APPROX, AZ_EU_NOTE),
]
# The demo cluster's nodes must be priced by the sheet.
DEMO_INSTANCES = [
    ("aws", "us-east-1", "m5.large"),
    ("aws", "us-east-1", "m5.xlarge"),
    ("aws", "us-east-1", "c5.2xlarge"),
    ("aws", "us-east-1", "g4dn.xlarge"),
    ("gcp", "europe-west1", "n2-standard-4"),
    ("gcp", "europe-west1", "e2-standard-8"),
    ("azure", "westeurope", "Standard_D4s_v3"),
]


def seed_instance_prices() -> Seed:
    rows = [
        {
            "provider": p,
            "region": r,
            "instance_type": t,
            "hourly_usd": num(v),
            "spot_hourly_usd": "",
            "price_confidence": c,
            "note": n,
            "source": INSTANCE_PRICE_SOURCE,
        }
        for p, r, t, v, c, n in INSTANCE_PRICES
    ]
    keys = {(x["provider"], x["region"], x["instance_type"]) for x in rows}
    if len(keys) != len(rows):
        raise SystemExit("instance_prices: duplicate (provider, region, instance_type)")
    missing = [k for k in DEMO_INSTANCES if k not in keys]
    if missing:
        raise SystemExit(f"instance_prices: demo instances missing: {missing}")
    rows.sort(key=lambda x: (x["provider"], x["region"], x["instance_type"]))
    return Seed(
        "instance_prices",
        "Small curated on-demand (Linux, shared tenancy) price sheet; joins on (provider, region, "
        "instance_type), never on the type alone (METHOD.md A4). NOT derived from shared/data: verify "
        "against the provider price APIs (SOURCES.md §9) before production use.",
        [
            Col("provider", "varchar", "aws, gcp or azure.", [NN, accepted(["aws", "gcp", "azure"])]),
            Col("region", "varchar", "Provider region as in topology.kubernetes.io/region.", [NN]),
            Col("instance_type", "varchar", "Instance type as in node.kubernetes.io/instance-type.", [NN]),
            Col("hourly_usd", "double", "On-demand USD per instance-hour.", [NN]),
            Col("spot_hourly_usd", "double", "Spot USD per instance-hour (optional; empty = unknown)."),
            Col(
                "price_confidence",
                "varchar",
                "'list' (published list price) or 'approximate' (derived from a regional uplift, see note).",
                [NN, accepted([LIST, APPROX])],
            ),
            Col("note", "varchar", "How an approximate price was obtained."),
            Col("source", "varchar", "Always '" + INSTANCE_PRICE_SOURCE + "'.", [NN]),
        ],
        rows,
        [unique_combo("provider", "region", "instance_type")],
    )
