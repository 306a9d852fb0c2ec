"""Secrets (issue 31, item 3): credentials written into a URL-valued setting or an Authorization header are refused
at load in one line (file, key, the `*_env` / `*_file` key to use), never quoting the secret; `redact` masks what
could still carry one. The end-to-end checks (run storage, warehouse, logs, API) are in
tests/integration/test_secrets.py."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipelines.redaction import redact, redact_url, remember, url_credentials
from pipelines.settings import SettingsError, load_settings

SECRET = "s3cret-Pa55word"
PROM = "clusters:\n  - name: c\n    source: prometheus\n    prometheus: {{url: \"{url}\"{extra}}}\n"


@pytest.mark.parametrize(("text", "key", "instead"), [
    (PROM.format(url=f"http://alice:{SECRET}@prom:9090", extra=""), "clusters[0].prometheus.url",
     "clusters[0].prometheus.basic_auth_password_env or clusters[0].prometheus.basic_auth_password_file"),
    (PROM.format(url=f"https://prom:9090/api?access_token={SECRET}", extra=""), "clusters[0].prometheus.url",
     "clusters[0].prometheus.bearer_token_env or clusters[0].prometheus.bearer_token_file"),
    (PROM.format(url="http://prom:9090", extra=f", headers: {{Authorization: \"Bearer {SECRET}\"}}"),
     "clusters[0].prometheus.headers.Authorization", "clusters[0].prometheus.bearer_token_env"),
    ("clusters:\n  - name: c\n    kubernetes: {enabled: true, host: \"https://admin:" + SECRET + "@k8s:6443\"}\n",
     "clusters[0].kubernetes.host", "clusters[0].kubernetes.kubeconfig"),
    (f"carbon: {{provider: electricitymaps, base_url: \"https://api.example/v3/?auth-token={SECRET}\"}}\n",
     "carbon.base_url", "carbon.token_env"),
    (f"boavizta: {{url: \"http://u:{SECRET}@boavizta:5000\"}}\n", "boavizta.url", "takes no credentials"),
    (f"engine: spark\nlake: {{root: \"s3a://AKIAEXAMPLE:{SECRET}@bucket/kl\"}}\n", "lake.root",
     "AWS_SECRET_ACCESS_KEY"),
])
def test_credentials_in_settings_are_refused_in_one_line_without_the_secret(tmp_path: Path, text: str, key: str,
                                                                            instead: str) -> None:
    path = tmp_path / "kubeledger.yaml"
    path.write_text(text)
    with pytest.raises(SettingsError) as err:
        load_settings(path)
    message = str(err.value)
    assert message.startswith(f"{path}: {key}: "), message
    assert instead in message and "plain text" in message, message
    assert SECRET not in message and "\n" not in message


def test_basic_auth_password_from_a_file(tmp_path: Path) -> None:
    secret = tmp_path / "password"
    secret.write_text(f"{SECRET}\n")
    path = tmp_path / "kubeledger.yaml"
    path.write_text(PROM.format(url="http://prom:9090", extra=f", basic_auth_username: kl, "
                                                               f"basic_auth_password_file: \"{secret}\""))
    assert load_settings(path).clusters[0].prometheus.basic_auth() == ("kl", SECRET)
    assert redact(f"the server said: bad password {SECRET}") == "the server said: bad password ***"
    secret.unlink()
    with pytest.raises(SettingsError, match=r"clusters\[0\]\.prometheus\.basic_auth_password_file: .* not found"):
        load_settings(path)


def test_redact_masks_what_may_carry_a_secret() -> None:
    remember("tok-123456789")
    text = ("GET http://u:pw@prom:9090/api/v1/query?query=up&token=abc failed; Authorization: Bearer xyz; "
            "echo tok-123456789; https://api.example/v3/?zone=FR")
    assert redact(text) == ("GET http://u:***@prom:9090/api/v1/query?query=up&token=*** failed; Authorization: "
                            "Bearer ***; echo ***; https://api.example/v3/?zone=FR")
    assert redact_url("http://tok@h:1/") == "http://***@h:1/"
    assert url_credentials("http://h:1/?api_key=x") == "the query parameter 'api_key'"
    assert url_credentials("http://prom:9090/prefix") is None
    remember("short")  # too short to mask without mangling ordinary words
    assert redact("a short line") == "a short line"
