"""kubeledger: cost, energy and carbon for every Kubernetes workload."""

import shutil
import sys
from pathlib import Path

__version__ = "0.1.0"

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DBT_PROJECT_DIR = PROJECT_ROOT / "dbt_project"
SQL_DIR = PROJECT_ROOT / "sql"
SEEDS_DIR = PROJECT_ROOT / "seeds"


def dbt_executable() -> str:
    """The dbt next to this interpreter (the project venv), even when the venv is not on PATH."""
    local = Path(sys.executable).parent / "dbt"
    return str(local) if local.exists() else (shutil.which("dbt") or "dbt")


def cli_version() -> str:
    """The installed kubeledger's version (what `kubeledger --version`, the run log and the report show)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("kubeledger")
    except PackageNotFoundError:
        return "unknown (not installed)"
