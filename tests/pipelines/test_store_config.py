"""The object store's settings (issue 44): the standard AWS variables, or ``[store]`` in ``pitwatch.toml``,
the environment winning; a secret in a file others can read is refused; an unknown key is exit 2.

Whether a setting reached the store is shown by the store itself (moto's server, ``s3_server``): a lease
planted in the bucket keeps a real ``pitwatch run`` out (exit 4, naming the planted holder) only if the
command reached that bucket; a closed port in its place is exit 2.  Commands that must see the settings
as a real process would (its whole environment) run as real processes."""
from __future__ import annotations

import json
import os

import pytest

from pitwatch import config as cfg
from pitwatch.cli import exits
from pitwatch.lake import lock as lake_lock
from tests.conftest import run_pitwatch, run_pitwatch_process
from tests.object_store import ACCESS_KEY, REGION, SECRET_KEY, free_port


@pytest.fixture
def bare_environment(monkeypatch):
    """No AWS variable in this process's environment (each one put back after the test, those a command
    run in this process sets included), no profile or credentials file to fall back on."""
    for name in {*[n for n in os.environ if n.startswith("AWS_")], *cfg.STORE_KEYS.values(), "AWS_DEFAULT_REGION"}:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")


def store_toml(tmp_path, endpoint: str, mode: int = 0o600, extra: str = "") -> str:
    path = tmp_path / "pitwatch.toml"
    path.write_text(f'lock_timeout = "0"\n\n[store]\nendpoint = "{endpoint}"\nregion = "{REGION}"\n'
                    f'access_key_id = "{ACCESS_KEY}"\nsecret_access_key = "{SECRET_KEY}"\nallow_http = true\n{extra}')
    path.chmod(mode)
    return str(path)


def planted_lake(s3_server) -> str:
    """An S3 lake whose lease another writer holds now (planted with boto3)."""
    bucket = s3_server.bucket()
    s3_server.client().put_object(Bucket=bucket, Key=f"lake/{lake_lock.LEASE_OBJECT}", Body=json.dumps({
        "holder": {"run_id": "R-planted", "pid": 7, "host": "pit-09", "since": "2026-11-29T06:15:02Z"},
        "lease_id": "p", "renewal": 1, "lease_seconds": 3600, "written": "2099-01-01T00:00:00.000Z",
        "expires": "2099-01-01T01:00:00.000Z"}).encode())
    return f"s3://{bucket}/lake"


def test_the_store_of_pitwatch_toml_reaches_the_object_store(s3_server, bare_environment, tmp_path):
    lake = planted_lake(s3_server)
    config = store_toml(tmp_path, s3_server.endpoint)
    result = run_pitwatch_process("run", tmp_path / "nothing-here.jsonl", "--lake", lake, "--config", config)
    assert result.returncode == exits.LOCKED, result.stderr
    assert "is locked by run R-planted, pid 7, on pit-09" in result.stderr


def test_without_a_store_table_the_file_sends_nowhere(s3_server, bare_environment, tmp_path):
    """The same command with the file's endpoint at a closed port: it did not reach moto (exit 2, not 4)."""
    lake = planted_lake(s3_server)
    config = store_toml(tmp_path, f"http://127.0.0.1:{free_port()}")
    result = run_pitwatch_process("run", tmp_path / "nothing-here.jsonl", "--lake", lake, "--config", config)
    assert result.returncode == exits.USAGE, result.stderr
    assert result.stderr.startswith(f"Error: cannot take the lake's lease {lake}/{lake_lock.LEASE_OBJECT}: ")


def test_the_environment_wins_over_the_file(s3_server, bare_environment, tmp_path):
    lake = planted_lake(s3_server)
    config = store_toml(tmp_path, f"http://127.0.0.1:{free_port()}")       # the file: a closed port …
    result = run_pitwatch_process("run", tmp_path / "nothing-here.jsonl", "--lake", lake, "--config", config,
                                  env={"AWS_ENDPOINT_URL": s3_server.endpoint})   # … the environment: moto
    assert result.returncode == exits.LOCKED, result.stderr
    assert "is locked by run R-planted" in result.stderr


def test_credentials_are_taken_whole_from_the_environment_or_the_file():
    file = cfg.ConfigFile("/etc/pitwatch.toml", "0", {"store": {
        "endpoint": "https://minio:9000", "region": "eu-west-1", "access_key_id": "FILE-KEY",
        "secret_access_key": "FILE-SECRET", "allow_http": False}})
    environ = {"AWS_ACCESS_KEY_ID": "ENV-KEY"}      # the environment's key id, its secret from elsewhere
    assert cfg.apply_store(file, environ) == ["AWS_ENDPOINT_URL", "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ALLOW_HTTP"]
    assert environ == {"AWS_ACCESS_KEY_ID": "ENV-KEY", "AWS_ENDPOINT_URL": "https://minio:9000",
                       "AWS_REGION": "eu-west-1", "AWS_DEFAULT_REGION": "eu-west-1", "AWS_ALLOW_HTTP": "false"}
    environ = {"AWS_REGION": "us-east-2"}
    cfg.apply_store(file, environ)
    assert environ["AWS_ACCESS_KEY_ID"] == "FILE-KEY" and environ["AWS_SECRET_ACCESS_KEY"] == "FILE-SECRET"
    assert environ["AWS_REGION"] == "us-east-2" and "AWS_DEFAULT_REGION" not in environ
    assert cfg.apply_store(None, environ) == []


@pytest.mark.parametrize("mode, refused", [(0o600, None), (0o400, None), (0o640, "its group"), (0o604, "others"),
                                           (0o644, "group and others")])
def test_a_secret_in_a_file_others_can_read_is_refused(tmp_path, bare_environment, mode, refused):
    config = store_toml(tmp_path, "https://minio.casino.local:9000", mode)
    result = run_pitwatch("config", "show", "--config", config)
    if refused is None:
        assert result.returncode == exits.DONE, result.stderr
        return
    assert result.returncode == exits.USAGE
    assert result.stderr == (f"Error: config file {config} holds store.secret_access_key and is readable by {refused} "
                             f"(mode {mode:04o}): chmod 600 it, or give the secret in AWS_SECRET_ACCESS_KEY instead\n")


def test_a_store_without_secrets_may_be_read_by_all(tmp_path, bare_environment):
    path = tmp_path / "pitwatch.toml"
    path.write_text('[store]\nendpoint = "https://minio.casino.local:9000"\nregion = "us-east-1"\n')
    path.chmod(0o644)
    assert run_pitwatch("config", "show", "--config", path).returncode == exits.DONE


@pytest.mark.parametrize("table, message", [
    ('endpiont = "https://x"\n', "store: unknown key 'endpiont' (did you mean endpoint?)"),
    ('allow_http = "yes"\n', "store.allow_http must be true or false, without quotes, got str 'yes'"),
    ('endpoint = "ftp://x"\n', "store.endpoint must be a URL https://HOST[:PORT]"),
    ('endpoint = "http://minio:9000"\n', "store.endpoint is plain http:// (http://minio:9000): say allow_http = true"),
    ('access_key_id = "k"\n', "store: access_key_id and secret_access_key go together"),
    ('region = 5\n', "store.region must be text in quotes, one line, not empty, got int 5"),
    ('secret_access_key = "s\\nforged"\naccess_key_id = "k"\n', "store.secret_access_key must be text in quotes, one "
                                                                 "line, not empty"),
])
def test_a_bad_store_table_is_one_error_line_exit_2(tmp_path, bare_environment, table, message):
    path = tmp_path / "pitwatch.toml"
    path.write_text("[store]\n" + table)
    path.chmod(0o600)
    result = run_pitwatch("config", "show", "--config", path)
    assert result.returncode == exits.USAGE
    assert result.stderr.startswith(f"Error: config file {path}: {message}") and result.stderr.count("\n") == 1
    assert "forged" not in result.stderr


def test_config_show_shows_the_store_and_never_a_secret(tmp_path, bare_environment, monkeypatch):
    config = store_toml(tmp_path, "https://minio.casino.local:9000")
    monkeypatch.setenv("AWS_REGION", "eu-west-3")
    result = run_pitwatch("config", "show", "--config", config)
    assert result.returncode == exits.DONE, result.stderr
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("store ")]
    assert line.split(None, 1)[1] == (
        "endpoint=https://minio.casino.local:9000 [file], region=eu-west-3 [environment AWS_REGION], "
        f"access_key_id={ACCESS_KEY} [file], secret_access_key=(set, not shown) [file], allow_http=true [file]")
    assert SECRET_KEY not in result.stdout + result.stderr


@pytest.mark.parametrize("args, kept", [
    (["--s3_secret_access_key=hunter2", "--runner=FnApiRunner"], ["--s3_secret_access_key=(redacted)", "--runner=FnApiRunner"]),
    (["--s3_access_key_id", "AKIA1", "--s3_session_token", "tok"],
     ["--s3_access_key_id", "(redacted)", "--s3_session_token", "(redacted)"]),
    (["--password=pw", "feeds/", "--lake", "s3://b/lake"], ["--password=(redacted)", "feeds/", "--lake", "s3://b/lake"]),
    (["--s3_endpoint_url=http://minio:9000", "--token-file-x"], ["--s3_endpoint_url=http://minio:9000", "--token-file-x"]),
])
def test_a_credential_given_as_an_option_is_redacted_from_what_is_recorded(args, kept):
    from pitwatch.config import redacted_args

    assert redacted_args(args) == kept


@pytest.mark.slow
def test_a_run_given_beams_s3_credentials_as_options_records_none_of_them(tmp_path):
    """A chained ``runs`` record cannot be erased and ``pitwatch sql`` reads it: Beam's
    ``--s3_secret_access_key=…`` given to ``pitwatch run`` used to be kept there whole (issue 44 review)."""
    from tests import lake_rows
    from tests.conftest import ROOT, run_pitwatch_process

    lake = tmp_path / "lake"
    out = run_pitwatch_process("run", ROOT / "tests" / "data" / "clean-floor-2h.jsonl.gz", "--lake", lake, "--quiet",
                               "--s3_secret_access_key=hunter2-secret", "--s3_access_key_id", "AKIAHUNTER2")
    assert out.returncode == 0, out.stderr[-2000:]
    record = lake_rows.last_run(str(lake))
    assert "--s3_secret_access_key=(redacted)" in record["command"] and "(redacted)" in record["options"]
    leaked = [p for p in lake.rglob("*") if p.is_file() and (b"hunter2" in p.read_bytes() or b"AKIAHUNTER2" in p.read_bytes())]
    assert leaked == []
