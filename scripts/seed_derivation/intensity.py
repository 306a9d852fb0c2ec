"""Zones and annual intensity: cloud region -> Electricity Maps zone, annual intensity per
region (CCF) and per zone (CCF regional factors, else Boavizta's country factors)."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from .common import NN, UQ, Col, Seed, accepted, mean, num, read_csv, unique_combo


def seed_region_carbon_zones(shared: Path, report: list[str]) -> Seed:
    rows = []
    dropped = []
    for r in read_csv(shared / "ccf-derived" / "ccf_region_to_electricitymaps_zone.csv"):
        if r["region"] == "Unknown":
            dropped.append(r["provider"])
            continue
        rows.append(
            {
                "provider": r["provider"],
                "region": r["region"].lower(),
                "region_original": r["region"],
                "electricitymaps_zone": r["electricitymaps_zone"],
            }
        )
    keys = [(x["provider"], x["region"]) for x in rows]
    if len(set(keys)) != len(keys):
        raise SystemExit("region_carbon_zones: region collision after lower-casing")
    rows.sort(key=lambda x: (x["provider"], x["region"]))
    report.append(f"region_carbon_zones: dropped CCF 'Unknown' placeholder regions for {dropped}")
    return Seed(
        "region_carbon_zones",
        "Cloud region -> Electricity Maps zone (CCF app mapping, Apache-2.0; METHOD.md B10). Match on "
        "lower(region). Empty zone = CCF knows the region but maps it to no zone: falls through to the "
        "next step.",
        [
            Col("provider", "varchar", "aws, gcp or azure.", [NN, accepted(["aws", "gcp", "azure"])]),
            Col("region", "varchar", "Lower-case region for matching.", [NN]),
            Col("region_original", "varchar", "Region as spelled by CCF (Azure 'EastUS').", [NN]),
            Col("electricitymaps_zone", "varchar", "Electricity Maps zone code; empty = known-unmapped."),
        ],
        rows,
        [unique_combo("provider", "region")],
    )


def grid_factors(shared: Path) -> list[dict[str, str]]:
    return [
        r
        for r in read_csv(shared / "ccf-derived" / "ccf_grid_emission_factors.csv")
        if r["variant"] == "grid"
    ]


def g_per_kwh_from_tonnes(text: str) -> float:
    return float(text) * 1e6


def seed_region_annual_intensity(shared: Path) -> Seed:
    rows = []
    for r in grid_factors(shared):
        region = "__unknown__" if r["region"] == "Unknown" else r["region"].lower()
        rows.append(
            {
                "provider": r["provider"],
                "region": region,
                "region_original": r["region"],
                "g_per_kwh": num(g_per_kwh_from_tonnes(r["tco2e_per_kwh"]), 6),
                "source": "ccf-derived/ccf_grid_emission_factors.csv (variant grid)"
                + (": CCF provider average for unknown regions" if region == "__unknown__" else ""),
            }
        )
    keys = [(x["provider"], x["region"]) for x in rows]
    if len(set(keys)) != len(keys):
        raise SystemExit("region_annual_intensity: region collision after lower-casing")
    rows.sort(key=lambda x: (x["provider"], x["region"]))
    return Seed(
        "region_annual_intensity",
        "Annual grid carbon intensity per cloud region: CCF regional factors (variant 'grid', location-"
        "based; tCO2e/kWh x 1e6 = g/kWh). Region '__unknown__' = CCF's provider average. GCP's "
        "'net_of_google_cfe' variant is deliberately not included.",
        [
            Col("provider", "varchar", "aws, gcp or azure.", [NN, accepted(["aws", "gcp", "azure"])]),
            Col("region", "varchar", "Lower-case region, or '__unknown__'.", [NN]),
            Col("region_original", "varchar", "Region as spelled by CCF.", [NN]),
            Col("g_per_kwh", "double", "gCO2e per kWh.", [NN]),
            Col("source", "varchar", "Origin.", [NN]),
        ],
        rows,
        [unique_combo("provider", "region")],
    )


# ISO 3166-1 alpha-2 (Electricity Maps country zone) -> Boavizta location code (ISO alpha-3 except noted)
_ISO_PAIRS = """
AE:ARE AL:ALB AM:ARM AO:AGO AR:ARG AT:AUT AU:AUS AZ:AZE BA:BIH BD:BGD BE:BEL BG:BGR BH:BHR
BJ:BEN BN:BRN BO:BOL BR:BRA BW:BWA BY:BLR CA:CAN CD:COD CG:COG CH:CHE CI:CIV CL:CHL CM:CMR
CN:CHN CO:COL CR:CRI CU:CUB CY:CYP CZ:CZE DE:DEU DK:DNK DO:DOM DZ:DZA EC:ECU EE:EST EG:EGY
ER:ERI ES:ESP ET:ETH FI:FIN FR:FRA GA:GAB GB:GBR GE:GEO GH:GHA GI:GIB GR:GRC GT:GTM HK:HKG
HN:HND HR:HRV HT:HTI HU:HUN ID:IDN IE:IRL IL:ISR IN:IND IQ:IRQ IR:IRN IS:ISL IT:ITA JM:JAM
JO:JOR JP:JPN KE:KEN KG:KGZ KH:KHM KP:PRK KR:KOR KW:KWT KZ:KAZ LB:LBN LK:LKA LT:LTU LU:LUX
LV:LVA LY:LBY MA:MAR MD:MDA MK:MKD MM:MMR MN:MNG MT:MLT MX:MEX MY:MYS MZ:MOZ NA:NAM NG:NGA
NI:NIC NL:NLD NO:NOR NP:NPL NZ:NZL OM:OMN PA:PAN PE:PER PH:PHL PK:PAK PL:POL PT:PRT PY:PRY
QA:QAT RO:ROU RU:RUS SA:SAU SD:SDN SE:SWE SG:SGP SI:SVN SK:SVK SN:SEN SV:SLV SY:SYR TG:TGO
TH:THA TJ:TJK TM:TKM TN:TUN TR:TUR TT:TTO TW:TWN TZ:TZA UA:UKR US:USA UY:URY UZ:UZB VE:VEN
VN:VNM YE:YEM ZA:ZAF ZM:ZMB ZW:ZWE
"""
ALPHA2_TO_ALPHA3 = dict(pair.split(":") for pair in _ISO_PAIRS.split())
# Serbia: Boavizta keeps the historic 'SCG' (Serbia and Montenegro), labelled "Serbie".
ALPHA2_TO_ALPHA3["RS"] = "SCG"
# Boavizta locations with no Electricity Maps country zone (aggregates / obsolete codes).
BOAVIZTA_NON_COUNTRIES = {"WOR", "EEE", "ANT"}


def ccf_zone_rows(shared: Path, region_zones: Seed) -> dict[str, dict[str, str]]:
    """(a) CCF regional factors, averaged over the regions mapping to a zone: zone -> row."""
    factors = {
        (r["provider"], r["region"].lower()): g_per_kwh_from_tonnes(r["tco2e_per_kwh"])
        for r in grid_factors(shared)
    }
    by_zone: dict[str, list[tuple[str, float]]] = defaultdict(list)
    for r in region_zones.rows:
        zone = r["electricitymaps_zone"]
        if not zone:
            continue
        g = factors.get((r["provider"], r["region"]))
        if g is not None:
            by_zone[zone].append((f"{r['provider']} {r['region_original']}", g))
    rows = {}
    for zone, items in by_zone.items():
        # each provider's estimate counts once: mean per provider, then mean over providers
        per_provider: dict[str, list[float]] = defaultdict(list)
        for name, g in items:
            per_provider[name.split(" ")[0]].append(g)
        rows[zone] = {
            "zone": zone,
            "g_per_kwh": num(mean(mean(v) for v in per_provider.values()), 6),
            "source": "ccf-region-factor",
            "source_detail": "provider-balanced mean of "
            + ", ".join(sorted(n for n, _ in items))
            + " (CCF 2024, grid)",
        }
    return rows


def add_boavizta_zone_rows(shared: Path, rows: dict[str, dict[str, str]], candidates: set[str]) -> list[str]:
    """(b) Boavizta country factors for every other candidate country zone / subzone, added to `rows`;
    returns the candidates left without a factor."""
    boavizta = {
        r["usage_location_nato3"]: r
        for r in read_csv(shared / "boavizta" / "electricity_gwp_factors_by_country.csv")
    }
    unknown_codes = sorted(set(ALPHA2_TO_ALPHA3.values()) - set(boavizta))
    if unknown_codes:
        raise SystemExit(f"zone_annual_intensity: codes not in Boavizta factors: {unknown_codes}")
    unmapped_boavizta = sorted(set(boavizta) - set(ALPHA2_TO_ALPHA3.values()) - BOAVIZTA_NON_COUNTRIES)
    if unmapped_boavizta:
        raise SystemExit(f"zone_annual_intensity: Boavizta countries without alpha-2: {unmapped_boavizta}")
    no_factor = []
    for zone in sorted(candidates):
        if zone in rows:
            continue
        country = zone.split("-")[0]
        code = ALPHA2_TO_ALPHA3.get(country)
        if code is None:
            no_factor.append(zone)
            continue
        b = boavizta[code]
        rows[zone] = {
            "zone": zone,
            "g_per_kwh": num(float(b["gwp_kgco2e_per_kwh"]) * 1000, 6),
            "source": "boavizta-country-factor",
            "source_detail": f"Boavizta factors.yml {code} {b['reference_year']}"
            + (f" (country factor for subzone of {country})" if zone != country else ""),
        }
    return no_factor


def seed_zone_annual_intensity(shared: Path, region_zones: Seed, wattnet: Seed, report: list[str]) -> Seed:
    rows = ccf_zone_rows(shared, region_zones)
    candidates = set(ALPHA2_TO_ALPHA3)
    candidates |= {r["electricitymaps_zone"] for r in region_zones.rows if r["electricitymaps_zone"]}
    candidates |= {r["electricitymaps_zone"] for r in wattnet.rows if r["electricitymaps_zone"]}
    no_factor = add_boavizta_zone_rows(shared, rows, candidates)
    report.append(
        f"zone_annual_intensity: zones with no annual factor (fall to 500 g): {no_factor or 'none'}"
    )
    out = sorted(rows.values(), key=lambda x: x["zone"])
    return Seed(
        "zone_annual_intensity",
        "Built-in annual carbon intensity per Electricity Maps zone (B4 step 3). Precedence: (a) CCF "
        "regional factor (ccf-derived/ccf_grid_emission_factors.csv, variant grid, t/kWh x 1e6) of the "
        "cloud regions that region_carbon_zones maps to the zone (mean per provider, then mean over "
        "providers); (b) otherwise, for a country "
        "zone ('FR') or country subzone ('IT-NO', 'SE-SE1'), the Boavizta annual country factor "
        "(boavizta/electricity_gwp_factors_by_country.csv, kg/kWh x 1000; AGPL-3.0 data). Other zones "
        "are absent (global 500 g applies).",
        [
            Col("zone", "varchar", "Electricity Maps zone code.", [NN, UQ]),
            Col("g_per_kwh", "double", "gCO2e per kWh (annual).", [NN]),
            Col(
                "source",
                "varchar",
                "'ccf-region-factor' or 'boavizta-country-factor'.",
                [NN, accepted(["ccf-region-factor", "boavizta-country-factor"])],
            ),
            Col("source_detail", "varchar", "Regions averaged, or Boavizta code and reference year.", [NN]),
        ],
        out,
    )
