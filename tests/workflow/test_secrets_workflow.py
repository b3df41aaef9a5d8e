"""A secret in the wrong key never reaches the terminal or Snakemake's log: the run stops at start, redacted."""

from __future__ import annotations

from pathlib import Path

import pytest
from workflow_helpers import copy_dataset, edit_config, snakemake

pytestmark = pytest.mark.slow
MINI = Path("tests/fixtures/mini")


@pytest.mark.parametrize("encoder, secret, expected", [
    ({"api_key_env": "sk-proj-LEAKED0123456789"}, "LEAKED0123456789",
     "encoders.api.api_key_env: is not the name of an environment variable"),
    ({"api_key_env": "AbCdEf0123456789GhIjKl"}, "AbCdEf0123456789GhIjKl",
     "encoders.api.api_key_env: names a variable (its name is not shown: it may be a key), which is not set"),
    ({"base_url": "http://me:hunter2-pass@127.0.0.1:9/v1"}, "hunter2-pass",
     "encoders.api.base_url: holds a user name or password (http://***@127.0.0.1:9/v1)"),
])
def test_a_secret_in_the_config_is_refused_at_start_and_never_printed(tmp_path: Path, encoder: dict, secret: str,
                                                                      expected: str) -> None:
    workdir = copy_dataset(MINI / "config.yaml", [MINI], tmp_path)

    def edit(config: dict) -> None:
        config["encoders"] = {"api": {"kind": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m", **encoder}}
        config["methods"] = {"bm25": {"type": "bm25"}, "dense-api": {"type": "dense", "encoder": "api"}}

    result = snakemake(workdir, "--cores", "1", configfile=edit_config(workdir, edit, "leaky.yaml"))
    assert result.returncode != 0 and expected in result.stderr, result.stderr[-2000:]
    logs = "".join(path.read_text() for path in (workdir / ".snakemake/log").glob("*"))
    assert expected in logs
    assert secret not in result.stderr + result.stdout + logs
    assert not (workdir / "results").exists()
