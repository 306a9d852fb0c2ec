# kubeledger: one image for the Dagster webserver, the Dagster daemon (which runs the pipeline: extracts, dbt,
# publish) and the allocation API (`kubeledger serve`). deploy/kubernetes/ runs it; README "Run it in a cluster".
#
#   docker build -t ghcr.io/kubeledger/kubeledger:0.1.0 .
#   docker run --rm -v kubeledger-data:/data ghcr.io/kubeledger/kubeledger:0.1.0 demo      # a demo day into /data
#   docker run --rm -v kubeledger-data:/data -p 9003:9003 ghcr.io/kubeledger/kubeledger:0.1.0  # the API on :9003
#
# Layout (read by the code, do not move):
#   /app   the source tree, root-owned and never written at run time. pipelines/__init__.py resolves
#          PROJECT_ROOT from its own file (Path(__file__).parent.parent), and DBT_PROJECT_DIR, SQL_DIR, SEEDS_DIR and
#          dagster_home/ from it, so the package is installed *editable* from /app (`pip install -e`): a plain
#          `pip install .` would put pipelines/ in site-packages, where dbt_project/, sql/ and seeds/ are not.
#   /data  the volume: DAGSTER_HOME (/data/dagster) and the warehouse (deploy/kubernetes/configmap.yaml puts the
#          DuckDB files and the Parquet export under /data/warehouse). Also the working directory, so that without
#          a kubeledger.yaml the default relative paths (warehouse/...) land on the volume, never under /app.
#   /tmp   scratch: dbt's per-invocation target and log folders (DBT_TARGET_PATH below).
#
# Run as uid/gid 10001. The Kubernetes manifests add readOnlyRootFilesystem with emptyDir volumes on /tmp.

FROM python:3.11-slim

ENV PYTHONUNBUFFERED=1 \
    PYTHONDONTWRITEBYTECODE=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    DO_NOT_TRACK=1

RUN groupadd --system --gid 10001 kubeledger \
 && useradd --system --uid 10001 --gid 10001 --home-dir /home/kubeledger --create-home \
        --shell /usr/sbin/nologin kubeledger \
 && install -d -o 10001 -g 10001 -m 0750 /data

WORKDIR /app

# 1. The dependencies alone (this layer is rebuilt only when pyproject.toml changes). All of them ship wheels for
#    CPython 3.11 on linux amd64/arm64, so the slim image needs no compiler.
COPY pyproject.toml ./
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" \
        > /tmp/requirements.txt \
 && pip install -r /tmp/requirements.txt \
 && rm /tmp/requirements.txt

# 2. The source tree, then the package itself, editable from /app (see the layout above). Only what runs is
#    copied: no tests, no scripts, no .venv (.dockerignore also keeps out dbt_project/target and logs, warehouse/).
COPY README.md NOTICE workspace.yaml ./
COPY pipelines/ pipelines/
COPY bench/ bench/
COPY dagster_home/ dagster_home/
COPY dbt_project/ dbt_project/
COPY seeds/ seeds/
COPY sql/ sql/
RUN pip install --no-deps -e /app \
 && python -m compileall -q /app/pipelines /app/bench

# 3. The dbt manifest, built now: pipelines/dagster_defs/assets_dbt.py (ensure_manifest) re-parses only when
#    dbt_project/target/manifest.json is missing, older than a model/macro/test/seed file or dbt_project.yml, or under
#    `dagster dev` (DAGSTER_IS_DEV_CLI). Parsed exactly as ensure_manifest does (profiles dir = the project); the
#    profile reads KUBELEDGER_WAREHOUSE, which parse never opens, so a dummy path is enough. The build fails if any
#    source file is newer than the manifest (a clock skew would make every process re-parse at start).
RUN cd /app/dbt_project \
 && DBT_PROFILES_DIR=/app/dbt_project KUBELEDGER_WAREHOUSE=/tmp/parse-only.duckdb \
        dbt parse --quiet --project-dir /app/dbt_project --profiles-dir /app/dbt_project \
 && test -f target/manifest.json \
 && stale="$(find dbt_project.yml models macros tests ../seeds -type f -newer target/manifest.json)" \
 && if [ -n "$stale" ]; then echo "files newer than the dbt manifest (clock skew?): $stale" >&2; exit 1; fi \
 && rm -rf /app/dbt_project/logs /app/dbt_project/.user.yml /tmp/parse-only.duckdb

# Run-time paths, all outside /app:
# - DAGSTER_HOME: the instance (dagster.yaml is copied there from /app/dagster_home on first use, by the CLI or the
#   init container of deploy/kubernetes); KUBELEDGER_DAGSTER_STORAGE: its SQLite storages (dagster.yaml reads it).
# - DBT_TARGET_PATH / DBT_LOG_PATH: dagster-dbt gives every dbt invocation its own folder *under* DBT_TARGET_PATH
#   (relative paths are taken under dbt_project/, absolute ones as they are) and points DBT_LOG_PATH at it. Without
#   an absolute path here, every run would write dbt_project/target/<op>-<run>-<id>/ (about 10 MB each) into /app.
#   The build-time manifest stays in /app/dbt_project/target, where the Dagster definitions read it.
ENV DAGSTER_HOME=/data/dagster \
    KUBELEDGER_DAGSTER_STORAGE=/data/dagster/storage \
    DBT_TARGET_PATH=/tmp/dbt-target \
    DBT_LOG_PATH=/tmp/dbt-target

USER 10001:10001
WORKDIR /data
VOLUME ["/data"]
# 9003: kubeledger serve (the allocation API); 3000: dagster-webserver
EXPOSE 9003 3000

# For the default command (kubeledger serve). Healthy = the API answers /healthz: 200 when a published snapshot is
# servable, 503 (with the reason) before the first publish; both mean the server is alive. No curl in slim: Python.
# Kubernetes ignores HEALTHCHECK (deploy/kubernetes has its own probes); run the Dagster commands with
# `docker run --no-healthcheck` (or `healthcheck: {disable: true}` in compose).
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import http.client, sys; c = http.client.HTTPConnection('127.0.0.1', 9003, timeout=4); c.request('GET', '/healthz'); sys.exit(0 if c.getresponse().status in (200, 503) else 1)"]

ENTRYPOINT ["kubeledger"]
CMD ["serve", "--host", "0.0.0.0", "--port", "9003"]
