"""The demo generator's fixed shapes (instance types, node templates, pod kinds, carbon levels) and its stable
hashing helpers (pipelines/sources/demo.py describes the generator)."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

import numpy as np

SOURCE = "demo"
GIB = float(2**30)
MIB = float(2**20)
DAY_S = 86_400
SCALE_AWAY_END_S = 14 * 3600 + 20 * 60  # the autoscaled node is gone at 14:20 UTC every day
CARBON_ZONE_LABEL = "kubeledger.io/carbon-zone"

# Real instance shapes: (vCPU, GiB, GPUs, GPU model).
INSTANCE_TYPES: dict[str, tuple[float, float, int, str | None]] = {
    "m5.large": (2, 8, 0, None),
    "m5.xlarge": (4, 16, 0, None),
    "c5.2xlarge": (8, 16, 0, None),
    "g4dn.xlarge": (4, 16, 1, "Tesla T4"),
    "n2-standard-4": (4, 16, 0, None),
    "e2-standard-8": (8, 32, 0, None),
    "Standard_D4s_v3": (4, 16, 0, None),
    "custom-bare-metal": (16, 64, 0, None),
}

REGION_ZONES: dict[tuple[str, str | None], str] = {
    ("aws", "us-east-1"): "US-MIDA-PJM",
    ("aws", "eu-west-1"): "IE",
    ("gcp", "europe-west1"): "BE",
    ("azure", "westeurope"): "NL",
}

CARBON_LEVELS: dict[str, float] = {
    "FR": 50.0, "DE": 350.0, "US-MIDA-PJM": 400.0, "IE": 300.0, "BE": 150.0, "NL": 350.0,
    "US-CAL-CISO": 250.0, "SE-SE3": 30.0,
}
CARBON_DEFAULT_LEVEL = 300.0
CARBON_GAP = ("BE", 13)  # (zone, UTC hour): left missing every day so the fallback path runs


@dataclass(frozen=True)
class _Template:
    provider: str
    instance_type: str
    region: str | None
    zone: str | None
    pool: str
    spot: bool = False
    role: str = ""  # gpu | onprem | scale-away


# The first 12 templates carry every feature; larger clusters repeat the plain ones (no second GPU,
# on-prem or scale-away node), smaller ones keep the most important features first.
_TEMPLATES: tuple[_Template, ...] = (
    _Template("aws", "m5.large", "us-east-1", "us-east-1a", "general"),
    _Template("aws", "m5.xlarge", "us-east-1", "us-east-1b", "general"),
    _Template("aws", "g4dn.xlarge", "us-east-1", "us-east-1c", "gpu", role="gpu"),
    _Template("onprem", "custom-bare-metal", None, None, "metal", role="onprem"),
    _Template("aws", "c5.2xlarge", "us-east-1", "us-east-1a", "spot-compute", spot=True),
    _Template("gcp", "n2-standard-4", "europe-west1", "europe-west1-b", "default-pool"),
    _Template("azure", "Standard_D4s_v3", "westeurope", "westeurope-1", "agentpool"),
    _Template("aws", "m5.xlarge", "us-east-1", "us-east-1c", "burst", role="scale-away"),
    _Template("gcp", "e2-standard-8", "europe-west1", "europe-west1-c", "spot-pool", spot=True),
    _Template("aws", "m5.large", "eu-west-1", "eu-west-1a", "general-eu"),
    _Template("aws", "c5.2xlarge", "us-east-1", "us-east-1b", "compute"),
    _Template("aws", "m5.xlarge", "eu-west-1", "eu-west-1b", "spot-eu", spot=True),
)
_REPEAT = tuple(t for t in _TEMPLATES if not t.role)
DEMO_FEATURE_NODES = len(_TEMPLATES)  # clusters up to this size carry the deliberate over-allocation hour
_STORAGE_CLASS = {"aws": "gp3", "gcp": "pd-ssd", "azure": "managed-csi", "onprem": "local-path"}

# Pod kinds
DEPLOY, STS, DS, CRON, JOB, BARE = range(6)
_KIND_OWNER = {DEPLOY: "ReplicaSet", STS: "StatefulSet", DS: "DaemonSet", CRON: "Job", JOB: "Job", BARE: None}
_KIND_CTRL = {DEPLOY: "Deployment", STS: "StatefulSet", DS: "DaemonSet", CRON: "CronJob", JOB: "Job", BARE: None}

_ALPHA = np.frombuffer(b"bcdfghjklmnpqrstvwxz2456789", np.uint8)  # Kubernetes' safe name alphabet
_HEXC = np.frombuffer(b"0123456789abcdef", np.uint8)
_CPU_MENU = np.array([0.01, 0.025, 0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0])
_APPS = ("web", "api", "worker", "frontend", "backend", "cart", "catalog", "auth", "notifier", "gateway",
         "ingest", "scheduler", "recommender", "billing", "ledger", "reporting", "thumbnailer", "mailer",
         "session", "pricing")
_EGRESS_CLASSIFIED = frozenset({"payments", "checkout", "team-a"})  # network-costs DaemonSet only there

# --- stable hashing ------------------------------------------------------------------------------------


def _seed(*parts: object) -> int:
    """A 63-bit seed from hashlib (Python's hash() is salted per process)."""
    digest = hashlib.sha256("|".join(str(p) for p in parts).encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def _mix(x: np.ndarray) -> np.ndarray:
    # splitmix64 finaliser: a fast, vectorised, well-spread integer hash
    with np.errstate(over="ignore"):
        x = x ^ (x >> np.uint64(30))
        x = x * np.uint64(0xBF58476D1CE4E5B9)
        x = x ^ (x >> np.uint64(27))
        x = x * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def _vhash(base: int, *parts: np.ndarray | int) -> np.ndarray:
    n = max((len(p) for p in parts if isinstance(p, np.ndarray)), default=1)
    x = np.full(n, np.uint64(base & 0xFFFFFFFFFFFFFFFF), dtype=np.uint64)
    with np.errstate(over="ignore"):
        for p in parts:
            v = np.asarray(p, dtype=np.int64).astype(np.uint64)
            x = _mix(x ^ (v + np.uint64(0x9E3779B97F4A7C15)))
    return x


def _alpha(h: np.ndarray, length: int) -> np.ndarray:
    """`length` characters of the safe alphabet per hash (base-27 digits)."""
    out = np.empty((len(h), length), np.uint8)
    x = h.copy()
    for i in range(length):
        out[:, i] = _ALPHA[(x % np.uint64(27)).astype(np.intp)]
        x = x // np.uint64(27)
    return out.view(f"S{length}").ravel().astype(f"U{length}")


def _hex(h: np.ndarray, length: int) -> np.ndarray:
    out = np.empty((len(h), length), np.uint8)
    for i in range(length):
        out[:, i] = _HEXC[((h >> np.uint64(60 - 4 * (i % 16))) & np.uint64(15)).astype(np.intp)]
    return out.view(f"S{length}").ravel().astype(f"U{length}")


_UUID_POS = np.array([i for i in range(36) if i not in (8, 13, 18, 23)])


def _uuids(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """RFC 4122 version-4 shaped uuids from two 64-bit hashes."""
    nib = np.empty((len(a), 32), np.uint8)
    for i in range(16):
        shift = np.uint64(60 - 4 * i)
        nib[:, i] = ((a >> shift) & np.uint64(15)).astype(np.uint8)
        nib[:, 16 + i] = ((b >> shift) & np.uint64(15)).astype(np.uint8)
    nib[:, 12] = 4
    nib[:, 16] = 8 | (nib[:, 16] & 3)
    out = np.full((len(a), 36), ord("-"), np.uint8)
    out[:, _UUID_POS] = _HEXC[nib]
    return out.view("S36").ravel().astype("U36")


def _js(d: dict[str, Any]) -> str:
    return json.dumps(d, separators=(",", ":"), sort_keys=True)

