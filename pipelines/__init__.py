"""kubeledger: cost, energy and carbon for every Kubernetes workload."""

from pathlib import Path

__version__ = "0.1.0"

PROJECT_ROOT = Path(__file__).resolve().parent.parent
DBT_PROJECT_DIR = PROJECT_ROOT / "dbt_project"
SQL_DIR = PROJECT_ROOT / "sql"
SEEDS_DIR = PROJECT_ROOT / "seeds"
