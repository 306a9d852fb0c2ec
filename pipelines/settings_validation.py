"""Reading kubeledger.yaml strictly: every key known, every value of the right kind and within its rule
(settings_rules.py), each error one line naming the file, the key and what is allowed."""

from __future__ import annotations

import math
import os
import re
from dataclasses import MISSING, fields, is_dataclass
from datetime import date, datetime
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from pipelines import settings_models
from pipelines.settings_models import ClusterSettings, Settings, SettingsError
from pipelines.settings_rules import (
    CLUSTER_NAME_RE,
    CONTROL_RE,
    ENV_KEYS,
    ENV_NAME_RE,
    HEADER_NAME_RE,
    HEADER_VALUE_BAD_RE,
    LABEL_KEY_RE,
    NUMBER_RANGES,
    PROM_LABEL_NAME_RE,
    SPARK_CONF_KEY_RE,
    SPARK_CONF_LOOPBACK_RESERVED,
    SPARK_CONF_RESERVED,
    URL_KEYS,
    ZONE_RE,
    choices,
    cron_problem,
    file_problem,
    focus_path_problem,
    jvm_size_problem,
    lake_root_problem,
    location_problem,
    memory_problem,
    on_this_machine,
    path_text_problem,
    spark_master_problem,
    start_date_problem,
    url_credentials_problem,
    url_problem,
)

_BOOL_HINT = "YAML reads unquoted yes/no/on/off/true/false as a boolean"
CREDENTIAL_HEADERS = ("authorization", "proxy-authorization", "cookie")  # the *_env / *_file keys carry these
# the path keys a run writes to, and what each names (lake.root has its own rule: it may be a URI)
PATH_KEYS = {"warehouse.path": "file", "warehouse.serving_path": "file", "warehouse.parquet_path": "folder"}


class DuplicateKeyError(Exception):
    def __init__(self, path: str, first_line: int, line: int) -> None:
        super().__init__(path)
        self.path, self.first_line, self.line = path, first_line, line


MAX_YAML_DEPTH = 100  # no key of kubeledger.yaml nests more than 4 levels


class StrictLoader(yaml.SafeLoader):
    """SafeLoader that rejects a key given twice in one mapping (PyYAML silently keeps the last one) and
    remembers the source text of every scalar that is not a string (`raw_scalars`, by dotted key), so errors can
    quote what was written (`yes`, `.nan`, `0123`) rather than what YAML made of it."""

    def __init__(self, stream: Any) -> None:
        super().__init__(stream)
        self.raw_scalars: dict[str, str] = {}
        self._depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        # PyYAML composes nested collections recursively: bound the depth here, so a hostile file fails the same way
        # whatever the process's recursion limit is (an imported library may raise it, and then 3,000 levels parsed)
        self._depth += 1
        try:
            if self._depth > MAX_YAML_DEPTH:
                raise RecursionError(f"more than {MAX_YAML_DEPTH} levels")
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1

    def construct_document(self, node: yaml.Node) -> Any:
        self._walk(node, "", set())
        return super().construct_document(node)

    def _walk(self, node: yaml.Node, path: str, visited: set[int]) -> None:
        if id(node) in visited:  # anchors/aliases: each node once (also stops recursive structures)
            return
        visited.add(id(node))
        if isinstance(node, yaml.ScalarNode):
            if path and node.tag != "tag:yaml.org,2002:str":
                self.raw_scalars[path] = node.value
        elif isinstance(node, yaml.SequenceNode):
            for i, item in enumerate(node.value):
                self._walk(item, f"{path}[{i}]", visited)
        elif isinstance(node, yaml.MappingNode):
            first_line: dict[Any, int] = {}
            for key_node, value_node in node.value:
                if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *base`: later keys may override it
                    self._walk(value_node, path, visited)
                    continue
                if not isinstance(key_node, yaml.ScalarNode):
                    continue  # a complex key: the constructor reports it
                key = self.construct_object(key_node)
                child = f"{path}.{key}" if path else str(key)
                line = key_node.start_mark.line + 1
                if key in first_line:
                    raise DuplicateKeyError(child, first_line[key], line)
                first_line[key] = line
                self._walk(value_node, child, visited)


class ValidationContext(NamedTuple):
    origin: str
    raw: dict[str, str]

    def shown(self, key: str, value: Any) -> str:
        """The value as written in the file when YAML turned it into something else (yes -> True)."""
        raw = self.raw.get(key)
        return raw if raw is not None and not isinstance(value, str) else repr(value)

    def error(self, key: str, message: str) -> SettingsError:
        return SettingsError(f"{self.origin}: {key or 'top level'}: {message}")


def _generic(key: str) -> str:
    return re.sub(r"\[\d+\]", "[]", key)


def build(cls: type, data: Any, where: str, ctx: ValidationContext) -> Any:
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ctx.error(where, f"expected a mapping, got {type(data).__name__}")
    known = {f.name: f for f in fields(cls) if f.name != "source_file"}
    for name in data:
        if not isinstance(name, str):
            shown = "null" if name is None else repr(name)
            raise ctx.error(where, f"key {shown} is not text ({_BOOL_HINT} and digits as a number); "
                                   f"allowed keys: {', '.join(sorted(known))}")
        if name not in known:
            raise ctx.error(f"{where}.{name}" if where else name,
                            f"unknown key; allowed keys: {', '.join(sorted(known))}")
    for f in known.values():
        if f.name not in data and f.default is MISSING and f.default_factory is MISSING:
            raise ctx.error(f"{where}.{f.name}" if where else f.name, "required key is missing")
    kwargs: dict[str, Any] = {}
    for name, value in data.items():
        key = f"{where}.{name}" if where else name
        kwargs[name] = _coerce(str(known[name].type), value, key, ctx)
        allowed = choices(_generic(key))
        if allowed and kwargs[name] is not None and kwargs[name] not in allowed:
            raise ctx.error(key, f"{ctx.shown(key, value)} is not allowed; use one of: {', '.join(allowed)}")
    out = cls(**kwargs)
    if cls is settings_models.SparkSettings:
        _check_driver_address(out, where, ctx)
    return out


# the nested sections by the type name their fields carry (annotations are text here): every settings dataclass
# but the top level and the clusters' items
_NESTED: dict[str, type] = {
    name: cls for name, cls in vars(settings_models).items()
    if isinstance(cls, type) and is_dataclass(cls) and cls not in (Settings, ClusterSettings)
}


def _coerce(t: str, value: Any, key: str, ctx: ValidationContext) -> Any:
    if t in _NESTED:
        return build(_NESTED[t], value, key, ctx)
    if t.startswith("tuple[ClusterSettings"):
        if not isinstance(value, list) or not value:
            raise ctx.error(key, "expected a non-empty list of clusters")
        clusters = tuple(build(ClusterSettings, item, f"{key}[{i}]", ctx) for i, item in enumerate(value))
        _check_clusters(clusters, key, ctx)
        return clusters
    if t.startswith("tuple[str"):
        if isinstance(value, str):
            value = [v.strip() for v in value.split(",") if v.strip()]
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ctx.error(key, f"expected a list of strings (quote values; {_BOOL_HINT})")
        for i, v in enumerate(value):
            _check_text(f"{key}[{i}]", v, ctx)
            if key.endswith("shared_labels") and ":" not in v:
                raise ctx.error(key, f"{v!r} must look like 'label:value' (e.g. app:prometheus)")
        return tuple(value)
    if t.startswith("dict") and _generic(key) == "lake.spark.conf":
        return _spark_conf(value, key, ctx)
    if t.startswith("dict"):
        return _headers(value, key, ctx)
    if t == "bool":
        if not isinstance(value, bool):
            raise ctx.error(key, f"expected true or false, got {ctx.shown(key, value)}")
        return value
    if t in ("int", "float", "float | None"):
        if value is None and t.endswith("None"):
            return None
        return _number(value, key, t == "int", ctx)
    if _generic(key) == "schedule.start_date" and isinstance(value, date) and not isinstance(value, datetime):
        value = value.isoformat()  # YAML reads an unquoted 2026-01-01 as a date
    # text
    if value is None:
        if t.endswith("None"):
            return None
        raise ctx.error(key, "null is not allowed; write a value or remove the key to use the default")
    if not isinstance(value, str):
        raise ctx.error(key, f"{ctx.shown(key, value)} is not allowed: it is read as {_read_as(value)}, not text "
                             f"({_BOOL_HINT} and digits as a number); quote the value, e.g. "
                             f"{key.rsplit('.', 1)[-1]}: \"{ctx.shown(key, value)}\"")
    _check_text(key, value, ctx)
    return value


def _read_as(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    return f"a {type(value).__name__}"


def _number(value: Any, key: str, integer: bool, ctx: ValidationContext) -> float | int:
    spec = NUMBER_RANGES[_generic(key)]
    allowed = spec.describe()
    shown = ctx.shown(key, value)
    if isinstance(value, bool):
        raise ctx.error(key, f"{shown} is not allowed ({_BOOL_HINT}); use {allowed}")
    if not isinstance(value, (int, float)):
        raise ctx.error(key, f"{shown} is not allowed (not a number); use {allowed}")
    if isinstance(value, float) and not math.isfinite(value):
        raise ctx.error(key, f"{shown} is not allowed (not a finite number); use {allowed}")
    if integer and not isinstance(value, int):
        raise ctx.error(key, f"{shown} is not allowed (not a whole number); use {allowed}")
    if not spec.contains(value):
        raise ctx.error(key, f"{shown} is not allowed; use {allowed}")
    return int(value) if integer else float(value)


def _check_text(key: str, value: str, ctx: ValidationContext) -> None:
    """Text-wide rule (no control characters), then the key's own rule."""
    bad = CONTROL_RE.search(value)
    if bad:
        raise ctx.error(key, f"{value!r} is not allowed; use text without control characters "
                             f"(found {bad.group()!r})")
    generic = _generic(key)
    secret = url_credentials_problem(key, generic, value)
    if secret:  # the message must not repeat the secret: no `{value!r} is not allowed` here
        raise ctx.error(key, secret)
    problem: str | None = None
    if generic == "clusters[].name" and not CLUSTER_NAME_RE.fullmatch(value):
        problem = ("use 1-63 lowercase letters, digits, '-', '_' or '.', starting and ending with a letter or "
                   "digit (it becomes a partition path and a Dagster tag)")
    elif generic == "clusters[].carbon_zone" and not ZONE_RE.fullmatch(value):
        problem = "use an Electricity Maps zone code (e.g. FR, US-CAL-CISO)"
    elif generic in ("clusters[].billing_account_id", "clusters[].billing_account_name") and (
            not value.strip() or value != value.strip() or len(value) > 256):
        problem = ("use the account as the bill names it: 1-256 characters without leading or trailing spaces "
                   "(e.g. 111122223333, an Azure billing account or a GCP billing account id)")
    elif generic == "energy.carbon_zone_label" and not LABEL_KEY_RE.fullmatch(value):
        problem = "use a Kubernetes label key (letters, digits, '.', '_', '-', '/'; e.g. kubeledger.io/carbon-zone)"
    elif generic == "clusters[].prometheus.cluster_label" and not PROM_LABEL_NAME_RE.fullmatch(value):
        problem = "use a Prometheus label name matching [a-zA-Z_][a-zA-Z0-9_]* (e.g. cluster)"
    elif generic in ENV_KEYS and not ENV_NAME_RE.fullmatch(value):
        problem = "use the name of an environment variable: letters, digits and '_', not starting with a digit " \
                  "(e.g. PROM_TOKEN)"
    elif generic in URL_KEYS and value:
        problem = url_problem(value)
    elif generic == "warehouse.memory_limit":
        problem = memory_problem(value)
    elif generic == "schedule.daily_cron":
        problem = cron_problem(value)
    elif generic == "schedule.start_date":
        problem = start_date_problem(value)
    elif generic == "lake.root":
        problem = lake_root_problem(value)
    elif generic in PATH_KEYS:
        problem = path_text_problem(value, PATH_KEYS[generic])
    elif generic in ("billing.focus_path", "billing.cur2_path"):
        problem = focus_path_problem(value)
    elif generic == "lake.spark.master":
        problem = spark_master_problem(value)
    elif generic == "lake.spark.driver_memory":
        problem = jvm_size_problem(value)
    if problem:
        raise ctx.error(key, f"{value!r} is not allowed; {problem}")

def _headers(value: Any, key: str, ctx: ValidationContext) -> dict[str, str]:
    if not isinstance(value, dict):
        raise ctx.error(key, "expected a mapping of header name to value (e.g. {X-Scope-OrgID: tenant-a})")
    out: dict[str, str] = {}
    for name, v in value.items():
        if not isinstance(name, str) or not HEADER_NAME_RE.fullmatch(name):
            raise ctx.error(key, f"header name {name!r} is not allowed; use an HTTP token: letters, digits and "
                                 "!#$%&'*+-.^_`|~ (e.g. X-Scope-OrgID)")
        hkey = f"{key}.{name}"
        if name.lower() in CREDENTIAL_HEADERS:  # a header's value is stored and shown like any setting
            prefix = key.rsplit(".", 1)[0]
            raise ctx.error(hkey, f"is not allowed: a credential written here would be stored in Dagster's run "
                                  f"storage and shown in plain text; put a token in {prefix}.bearer_token_env or "
                                  f"{prefix}.bearer_token_file, or a password in {prefix}.basic_auth_password_env "
                                  f"or {prefix}.basic_auth_password_file")
        if not isinstance(v, str):
            raise ctx.error(hkey, f"{ctx.shown(hkey, v)} is not allowed: the header value is read as "
                                  f"{_read_as(v)}, not text; quote it ({_BOOL_HINT} and digits as a number)")
        bad = HEADER_VALUE_BAD_RE.search(v)
        if bad or v != v.strip():
            found = f"found {bad.group()!r}" if bad else "found leading or trailing spaces"
            raise ctx.error(hkey, f"{v!r} is not allowed; use a header value without CR, LF or other control "
                                  f"characters and without leading or trailing spaces ({found})")
        out[name] = v
    return out


def _spark_conf(value: Any, key: str, ctx: ValidationContext) -> dict[str, str]:
    """Extra Spark settings: spark.* keys; text values (whole numbers and booleans are written as Spark reads
    them, 8 and true)."""
    if not isinstance(value, dict):
        raise ctx.error(key, "expected a mapping of Spark setting to value (e.g. {spark.sql.shuffle.partitions: 8})")
    out: dict[str, str] = {}
    for name, v in value.items():
        if not isinstance(name, str) or not SPARK_CONF_KEY_RE.fullmatch(name):
            raise ctx.error(key, f"{name!r} is not allowed; use a Spark setting name starting with 'spark.' "
                                 "(e.g. spark.hadoop.fs.s3a.endpoint)")
        ckey = f"{key}.{name}"
        if name in SPARK_CONF_RESERVED:
            raise ctx.error(ckey, f"is not allowed here; it is set by {SPARK_CONF_RESERVED[name]}")
        if isinstance(v, bool):
            v = "true" if v else "false"
        elif isinstance(v, int):
            v = str(v)
        if not isinstance(v, str):
            raise ctx.error(ckey, f"{ctx.shown(ckey, v)} is not allowed: use text, a whole number or true/false "
                                  "(quote other values)")
        bad = CONTROL_RE.search(v)
        if bad:
            raise ctx.error(ckey, f"{v!r} is not allowed; use text without control characters (found {bad.group()!r})")
        out[name] = v
    return out


def _check_driver_address(spark: settings_models.SparkSettings, where: str, ctx: ValidationContext) -> None:
    """The driver's address is the engine's (127.0.0.1) when the master is on this machine; with a remote master
    it is Spark's default or the user's (`lake.spark.conf`)."""
    if not on_this_machine(spark.master):
        return
    for name in SPARK_CONF_LOOPBACK_RESERVED:
        if name in spark.conf:
            raise ctx.error(f"{where}.conf.{name}", f"is not allowed with master {spark.master}: the engine binds "
                                                    "the driver to 127.0.0.1 (set it with a remote master only)")


def _check_clusters(clusters: tuple[ClusterSettings, ...], key: str, ctx: ValidationContext) -> None:
    names = [c.name for c in clusters]
    for i, c in enumerate(clusters):
        if c.name in names[:i]:
            raise ctx.error(f"{key}[{i}].name", f"{c.name!r} is configured twice; names must be unique")
        if c.billing_account_name is not None and c.billing_account_id is None:
            raise ctx.error(f"{key}[{i}].billing_account_name",
                            "needs billing_account_id: the name is the named account's (e.g. 111122223333)")
        if c.source == "prometheus" and not c.prometheus.url:
            raise ctx.error(f"{key}[{i}].prometheus.url",
                            "required when source is 'prometheus' (e.g. http://prometheus:9090)")


def check_files(s: Settings, ctx: ValidationContext) -> None:
    """Files the configuration names must exist now, not when a step first opens them."""
    base = Path(s.source_file).parent if s.source_file else Path.cwd()
    checks: list[tuple[str, Path, str]] = []
    for name, what in (("instance_sheet", "an instance price sheet (CSV)"),
                       ("node_csv", "a Kubecost CSV price file"),
                       ("custom_file", "an OpenCost default.json-shaped price file")):
        value = getattr(s.pricing, name)
        if value:  # resolved as the pricing step resolves it: relative to this file's folder
            checks.append((f"pricing.{name}", s.resolve(value), f"point it at {what}; relative paths are "
                                                                f"relative to {base}"))
    for i, c in enumerate(s.clusters):
        if c.source == "prometheus":
            for name in ("bearer_token_file", "basic_auth_password_file", "client_cert_file", "client_key_file",
                         "ca_file"):
                value = getattr(c.prometheus, name)
                if value:  # opened as given by the Prometheus client
                    checks.append((f"clusters[{i}].prometheus.{name}", Path(value).expanduser(),
                                   "point it at an existing file"))
        k = c.kubernetes
        if k.enabled and not k.in_cluster and k.kubeconfig:
            for part in k.kubeconfig.split(os.pathsep):
                if part:
                    checks.append((f"clusters[{i}].kubernetes.kubeconfig", Path(part).expanduser(),
                                   "point it at an existing kubeconfig file"))
    for key, path, fix in checks:
        problem = file_problem(path)
        if problem:
            raise ctx.error(key, f"{path} {problem}; {fix}")


class Location(NamedTuple):
    key: str  # the setting that places it
    path: Path
    kind: str  # "file" (a DuckDB file) or "folder"
    derived: bool = False  # kept next to the warehouse file, not configured itself


def _key(s: Settings, key: str, env: str, value: str) -> str:
    """The key, or the environment variable that replaces it (the CLI sets it to the same path: then the key)."""
    override = os.environ.get(env)
    return f"{env} (in place of {key})" if override and s.resolve(override) != s.resolve(value) else key


def written_locations(s: Settings) -> list[Location]:
    """Every place a run creates or replaces: the configured paths, and the folders kept next to the warehouse
    file (state, reports, the Dagster home; the lake for the spark engine), which warehouse.path places."""
    wh = _key(s, "warehouse.path", "KUBELEDGER_WAREHOUSE", s.warehouse.path)
    out = [Location(wh, s.warehouse_path, "file"),
           Location(_key(s, "warehouse.serving_path", "KUBELEDGER_SERVING", s.warehouse.serving_path),
                    s.serving_path, "file"),
           Location("warehouse.parquet_path", s.parquet_path, "folder")]
    if "://" not in s.lake_root and (s.lake.root or s.engine == "spark"):
        out.append(Location("lake.root", Path(s.lake_root), "folder", derived=not s.lake.root))
    folder = s.warehouse_path.parent
    derived = ["state", "reports"] + ([] if os.environ.get("DAGSTER_HOME") else ["dagster"])
    out += [Location(wh, folder / name, "folder", derived=True) for name in derived]
    return out


_EXAMPLES = {"warehouse.serving_path": "warehouse/serving.duckdb", "warehouse.parquet_path": "warehouse/parquet",
             "lake.root": "warehouse/lake"}


def check_locations(s: Settings, ctx: ValidationContext) -> None:
    """The places a run writes must be creatable now, not a directory where the warehouse file goes (the first
    step then fails naming no key) nor under a file (/dev/null/x.duckdb)."""
    seen: dict[Path, str] = {}
    for loc in written_locations(s):
        problem = location_problem(loc.path, loc.kind)
        if problem and loc.derived:
            raise ctx.error(loc.key, f"{loc.path} {problem}; kubeledger keeps this folder next to the warehouse "
                                     "file: move it away or choose another warehouse.path")
        if problem:
            what = ("a DuckDB file (created when missing) in a folder that exists or can be created"
                    if loc.kind == "file" else "a folder that exists or can be created")
            raise ctx.error(loc.key, f"{loc.path} {problem}; point it at {what}, e.g. "
                                     f"{_EXAMPLES.get(loc.key, 'warehouse/kubeledger.duckdb')}")
        if not loc.derived and loc.path in seen:
            raise ctx.error(loc.key, f"{loc.path} is also {seen[loc.path]}; give each its own path")
        seen.setdefault(loc.path, loc.key)


def yaml_error(origin: str, exc: yaml.YAMLError, text: str = "") -> SettingsError:
    if isinstance(exc, yaml.reader.ReaderError):  # a control character: the reader refuses the whole file
        before = text[: exc.position]
        where = f"line {before.count(chr(10)) + 1}, column {exc.position - before.rfind(chr(10))}: " if text else ""
        return SettingsError(f"{origin}: {where}not valid YAML: control character {chr(exc.character)!r} "
                             f"(#x{exc.character:04x}) is not allowed in the file; remove it (YAML allows printable "
                             "text, tabs and line breaks)")
    if isinstance(exc, yaml.MarkedYAMLError):
        mark = exc.problem_mark or exc.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        what = "; ".join(str(x) for x in (exc.context, exc.problem) if x)
        return SettingsError(f"{origin}: {where}not valid YAML: {' '.join(what.split())}")
    return SettingsError(f"{origin}: not valid YAML: {' '.join(str(exc).split())}")
