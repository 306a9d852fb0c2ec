#!/usr/bin/env bash
# Installs what the Spark engine's tests need: Java 17 (Debian openjdk-17-jre-headless, when `java` is missing) and
# the `spark` extra of kubeledger (dbt-spark[session] + pyspark) into the project venv.
# Idempotent and quiet: does nothing when java runs and the venv already has the pinned pyspark and dbt-spark.
# pyspark is a ~456 MB source distribution: about 3-4 min cold with pip, ~27 s with uv (scripts/venv_install.sh).
set -euo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/apt_install.sh"
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
VENV="${VENV:-${ROOT}/.venv}"
PYSPARK_VERSION="4.3.0"
DBT_SPARK_VERSION="1.11.0"

if ! command -v java >/dev/null 2>&1; then
    # slim Debian images lack the man folder the JRE's postinst writes a link into
    if [[ "$(id -u)" == "0" ]]; then mkdir -p /usr/share/man/man1; else sudo mkdir -p /usr/share/man/man1; fi
    apt_install openjdk-17-jre-headless >/dev/null
fi

installed() {
    "${VENV}/bin/python" - "$PYSPARK_VERSION" "$DBT_SPARK_VERSION" <<'PY' 2>/dev/null
import importlib.metadata as m, sys
ok = m.version("pyspark") == sys.argv[1] and m.version("dbt-spark") == sys.argv[2]
import dbt.adapters.spark, pyspark  # noqa: E401,F401 - importable, not only recorded
sys.exit(0 if ok else 1)
PY
}

if ! installed; then
    source "${ROOT}/scripts/venv_install.sh"
    venv_install "$VENV" -e "${ROOT}[spark]"
fi
echo "spark engine: $(java -version 2>&1 | head -n1), pyspark $("${VENV}/bin/python" -c \
    'import importlib.metadata as m; print(m.version("pyspark"), "dbt-spark", m.version("dbt-spark"))')"
