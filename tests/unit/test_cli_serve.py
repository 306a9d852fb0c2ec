"""`kubeledger serve`'s connection bounds from the command line (issue 31: behind an ingress every client shares
the ingress's address, so the per-address cap must be raisable without a code change)."""

from __future__ import annotations

import pytest

from pipelines.cli import build_parser, serve_limits
from pipelines.serving.http.app import ServerLimits


def test_the_flags_set_the_server_limits_and_the_defaults_stay() -> None:
    args = build_parser().parse_args(["serve", "--max-connections-per-client", "512", "--request-timeout", "2.5"])
    limits = serve_limits(args, ServerLimits())
    assert (limits.max_connections_per_client, limits.request_timeout_s) == (512, 2.5)
    default = serve_limits(build_parser().parse_args(["serve"]), ServerLimits())
    assert default == ServerLimits()


@pytest.mark.parametrize("flag, value", [("--max-connections-per-client", "0"), ("--max-connections-per-client", "x"),
                                         ("--max-connections-per-client", "1.5"), ("--request-timeout", "-1"),
                                         ("--request-timeout", "nan"), ("--request-timeout", "inf")])
def test_a_bad_bound_is_one_line_naming_the_flag(flag: str, value: str, capsys: pytest.CaptureFixture) -> None:
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(["serve", flag, value])
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert flag in err and "positive" in err, err
