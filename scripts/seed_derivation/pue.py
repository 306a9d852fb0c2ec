"""PUE: per provider (GreenKube and CCF values) and per region (CCF's GCP values)."""

from __future__ import annotations

from pathlib import Path

from .ccf_constants import ccf_constants_rows
from .common import NN, UQ, Col, Seed, accepted, num, unique_combo

PUE_GREENKUBE = {"aws": 1.15, "gcp": 1.09, "azure": 1.18, "ovhcloud": 1.26, "scaleway": 1.37}
PUE_CCF_EXTRA = {"alibaba": 1.3}  # CCF's Alibaba constant (METHOD.md B5); not in ccf_provider_constants.csv


def seed_pue_by_provider(shared: Path) -> Seed:
    ccf = dict(PUE_CCF_EXTRA)
    for r in ccf_constants_rows(shared):
        if r["constant"] == "PUE_AVG":
            ccf[r["provider"]] = float(r["value"])
    rows = []
    for provider in sorted(set(PUE_GREENKUBE) | set(ccf)):
        rows.append(
            {
                "provider": provider,
                "pue_greenkube": num(PUE_GREENKUBE.get(provider)),
                "pue_ccf": num(ccf.get(provider)),
            }
        )
    return Seed(
        "pue_by_provider",
        "Provider PUE: GreenKube implementation values and CCF values (they differ; METHOD.md B5). CCF "
        "values from ccf-derived/ccf_provider_constants.csv PUE_AVG (alibaba 1.3 from CCF's Alibaba "
        "constants, METHOD.md B5). Unknown/on-prem: var default_pue (1.3), flagged.",
        [
            Col("provider", "varchar", "Provider.", [NN, UQ]),
            Col("pue_greenkube", "double", "GreenKube PUE (empty = none)."),
            Col("pue_ccf", "double", "CCF fleet PUE (empty = none)."),
        ],
        rows,
    )


def seed_pue_by_region(shared: Path) -> Seed:
    rows = []
    for r in ccf_constants_rows(shared):
        c = r["constant"]
        if c.startswith("PUE_TRAILING_TWELVE_MONTH[") and c.endswith("]"):
            region = c[len("PUE_TRAILING_TWELVE_MONTH[") : -1]
            rows.append(
                {
                    "provider": r["provider"],
                    "region": region.lower(),
                    "pue": num(r["value"]),
                    "source": "ccf-derived/ccf_provider_constants.csv PUE_TRAILING_TWELVE_MONTH",
                }
            )
    rows.sort(key=lambda x: (x["provider"], x["region"]))
    return Seed(
        "pue_by_region",
        "Region-specific PUE (CCF: GCP trailing-twelve-month values; METHOD.md B5). Used with "
        "pue_source = ccf before the provider value.",
        [
            Col("provider", "varchar", "Provider.", [NN, accepted(["gcp"])]),
            Col("region", "varchar", "Lower-case region.", [NN]),
            Col("pue", "double", "PUE.", [NN]),
            Col("source", "varchar", "Origin.", [NN]),
        ],
        rows,
        [unique_combo("provider", "region")],
    )
