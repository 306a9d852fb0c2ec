"""Query-string values shared by every endpoint: booleans, ASCII integers, comma lists, filter quoting, and the
tolerance for parameters an endpoint does not use (upstream ignores them; `strict=true` makes them a 400)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pipelines.serving.query.errors import QueryError

TRUE = ("true", "1", "yes", "t")
FALSE = ("false", "0", "no", "f")


def param_bool(params: Mapping[str, str], name: str, default: bool) -> bool:
    v = params.get(name)
    if v is None or v.strip() == "":
        return default
    low = v.strip().lower()
    if low in TRUE:
        return True
    if low in FALSE:
        return False
    raise QueryError(name, v, "use true or false")


def param_reconcile(params: Mapping[str, str]) -> bool:
    """`reconcile` of the allocation and asset endpoints, default true as Kubecost's: costs adjusted to the cloud
    bill where a node or volume was matched (README, API). Kubecost's `disableAdjustments=true` also asks for the
    list cost; `reconcile` wins when both are given. A value other than true/false is a 400 naming its parameter."""
    return param_bool(params, "reconcile", not param_bool(params, "disableAdjustments", False))


def param_int(params: Mapping[str, str], name: str) -> int | None:
    v = params.get(name)
    if v is None or v == "":
        return None
    text = v.strip()
    # ASCII digits only: str.isdigit() also accepts superscripts and other scripts' digits, which int() rejects
    if not text or len(text) > 9 or not all("0" <= ch <= "9" for ch in text):
        raise QueryError(name, v, "a non-negative integer (ASCII digits)")
    return int(text)


def param_list(value: str | None) -> tuple[str, ...]:
    return tuple(x.strip() for x in (value or "").split(",") if x.strip())


def filter_quote(value: str) -> str:
    """A value as a double-quoted filter-language string."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


def legacy_filter(params: Mapping[str, str], fields: Mapping[str, str]) -> str:
    """Kubecost's v1 filter parameters (`fields`: parameter -> v2 field) as v2 filter terms, ANDed with `filter`."""
    filt = params.get("filter", "") or ""
    terms = [f"{field}:{','.join(filter_quote(v) for v in param_list(params.get(p)))}"
             for p, field in fields.items() if param_list(params.get(p))]
    if terms:
        filt = "+".join([f"({filt})"] * bool(filt.strip()) + terms)
    return filt


def tolerance_notes(params: Mapping[str, str], implemented: Iterable[str], ignored: Mapping[str, str],
                    only_if_true: Iterable[str] = ()) -> list[str]:
    """Warnings for accepted-but-ignored parameters (those in `only_if_true` only when true) and for unknown ones;
    with strict=true an unknown parameter is a 400 naming it."""
    strict = param_bool(params, "strict", False)  # validated whether or not anything is unknown
    if_true = set(only_if_true)
    notes = [f"{name}: ignored; {why}" for name, why in ignored.items()
             if name in params and (name not in if_true or param_bool(params, name, False))]
    known = set(implemented) | set(ignored) | {"strict"}
    unknown = sorted(set(params) - known)
    if unknown:
        if strict:
            raise QueryError(unknown[0], params[unknown[0]], "unknown parameter (strict=true); allowed: "
                             + ", ".join(sorted(known)))
        notes.append("unknown parameter(s) ignored: " + ", ".join(unknown) + " (strict=true rejects them)")
    return notes
