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
#   /tmp   scratch (Python and DuckDB temporary files).
#
# Run as uid/gid 10001. The Kubernetes manifests add readOnlyRootFilesystem with emptyDir volumes on /tmp.

# The base image by digest, not by tag alone: python:3.11-slim is re-pushed with every Python patch and Debian
# update, so the tag gives a different image from one month to the next. This digest is the multi-arch index
# (linux/amd64, linux/arm64) of python:3.11-slim (= 3.11-slim-trixie) pushed 2026-08-16: Python 3.11.16 on Debian
# trixie. To move it: `docker pull python:3.11-slim` (or `docker buildx imagetools inspect python:3.11-slim`), copy
# the index digest here, rebuild and run the image test (tests/integration/test_docker_image.py).
FROM python:3.11-slim@sha256:9c900dea9e8fb7e16277c179b555cc72d29a352dbc33cff48ad5a0412fd5bfc7

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

# 1. The dependencies alone (this layer is rebuilt only when requirements.lock changes): every package at the
#    version and file hash of requirements.lock (bash scripts/lock.sh writes it from pyproject.toml), so two builds
#    install the same files, and a file that changed on the index fails the build. Wheels only: the slim image
#    has no compiler, and an sdist would build with build dependencies nobody pinned. The lock also holds the
#    build backend (setuptools, wheel) for step 2.
COPY requirements.lock ./
RUN pip install --require-hashes --only-binary=:all: -r requirements.lock \
 && pip check

# 2. The source tree, then the package itself, editable from /app (see the layout above). Only what runs is
#    copied: no tests, no scripts, no .venv (.dockerignore also keeps out dbt_project/target and logs, warehouse/).
#    Nothing more is fetched: --no-deps (step 1 installed them), --no-build-isolation (the locked setuptools
#    builds it, not whatever version an isolated build would download) and --no-index.
COPY pyproject.toml README.md NOTICE workspace.yaml ./
COPY pipelines/ pipelines/
COPY bench/ bench/
COPY dagster_home/ dagster_home/
COPY dbt_project/ dbt_project/
COPY seeds/ seeds/
COPY sql/ sql/
RUN pip install --no-deps --no-build-isolation --no-index -e /app \
 && python -m compileall -q /app/pipelines /app/bench

# 3. The dbt manifest, built now, so that no process parses at run time. pipelines/dagster_defs/assets_dbt.py
#    (ensure_manifest) uses dbt_project/target/manifest.json only while the project's content hash matches the one
#    recorded next to it (kubeledger-manifest.sha256: dbt files, project path, dbt versions); otherwise it parses
#    into <warehouse folder>/state/dbt/manifest/<hash>/. The module's own entry point parses exactly as
#    ensure_manifest does and writes that hash. The profile reads KUBELEDGER_WAREHOUSE, which parse never opens,
#    so a dummy path is enough; its file name is the warehouse's (kubeledger.duckdb, every relation's database),
#    so the run time's first dbt call starts from this partial parse (pipelines/engines/dbt_runner.py leaves the
#    folder out of dbt's profile comparison). Same path (/app/dbt_project) and same dbt here as at run time: the
#    hash matches.
RUN cd /app \
 && DBT_PROFILES_DIR=/app/dbt_project KUBELEDGER_WAREHOUSE=/tmp/parse-only/kubeledger.duckdb \
        python -m pipelines.dagster_defs.assets_dbt \
 && test -f /app/dbt_project/target/manifest.json -a -f /app/dbt_project/target/kubeledger-manifest.sha256 \
 && rm -rf /app/dbt_project/logs /app/dbt_project/.user.yml /tmp/parse-only

# Run-time paths, all outside /app (nothing writes under it: checked by running a day on a copy of this layout):
# - DAGSTER_HOME: the instance. dagster.yaml is written there from /app/dagster_home by the CLI or by the init
#   container of deploy/kubernetes; KUBELEDGER_DAGSTER_STORAGE: its SQLite storages (dagster.yaml reads it).
# - dbt: no environment variable needed. kubeledger gives every dbt call an explicit target and log folder under
#   <warehouse folder>/state/dbt/runs/ (the newest warehouse.keep_run_folders kept per asset), not dagster-dbt's
#   default dbt_project/target/<op>-<run>-<id>/, and parses (if ever) into <warehouse folder>/state/dbt/manifest/.
#   The warehouse folder is on /data (deploy/kubernetes/configmap.yaml; without a kubeledger.yaml, ./warehouse
#   under the working directory /data).
ENV DAGSTER_HOME=/data/dagster \
    KUBELEDGER_DAGSTER_STORAGE=/data/dagster/storage

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
