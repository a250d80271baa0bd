"""``pitwatch.toml`` (issue 24): found with --config or PITWATCH_CONFIG, flags over environment over file,
``pitwatch config show``, an unknown key is exit 2 with a suggestion; the run record keeps the whole
command line and every effective setting with its origin.  The runs and a missing file are real processes,
the rest runs the command in this process."""
from __future__ import annotations

import hashlib
import os

import pytest

from pitwatch.cli import exits
from pitwatch.config import SETTINGS, ConfigError, load
from tests.conftest import run_pitwatch  # in this process; the runs and a missing file: real processes
from tests.pipelines.test_exit_codes import inbox, pitwatch, run_records  # noqa: F401  (fixture)

CONFIG = """\
lake = "lake"
inbox = "{inbox}"
timezone = "UTC"
cutoff = 06:00:00
fail_on = "critical"
log_file = "logs/nightly.log"
"""


def _config(tmp_path, text: str):
    path = tmp_path / "etc" / "pitwatch.toml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    return path


def test_config_show_names_the_origin_of_every_setting(tmp_path, monkeypatch):
    for name in [n for n in os.environ if n.startswith("AWS_")]:      # store: the AWS variables would show
        monkeypatch.delenv(name)
    path = _config(tmp_path, 'lake = "../data/lake"\ntimezone = "America/Puerto_Rico"\ncutoff = "05:30"\n')
    sha = hashlib.sha256(path.read_bytes()).hexdigest()
    result = run_pitwatch("config", "show", "--cutoff", "07:00", env={"PITWATCH_CONFIG": str(path),
                                                                   "PITWATCH_FAIL_ON": "major"})
    assert result.returncode == exits.DONE, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == f"config file: {path} (sha256 {sha}, from environment PITWATCH_CONFIG)"
    w = max(map(len, SETTINGS))                                   # the keys' column
    assert lines[1:] == [f"{key:<{w}}  {shown}" for key, shown in (
        ("lake", f"{tmp_path / 'data' / 'lake'}  [file]"),         # relative to the file's folder
        ("inbox", "(not set)  [default]"),
        ("timezone", "America/Puerto_Rico  [file]"),
        ("cutoff", "07:00  [flag]"),                               # a flag overrides the file
        ("fail_on", "major  [environment PITWATCH_FAIL_ON]"),
        ("log_file", "(not set)  [default]"),
        ("devices", "(not set)  [default]"),                       # issue 28: run and watch read it
        ("anchor", "(not set)  [default]"),                        # issue 27: run and verify
        ("anchor_key", "(not set)  [default]"),
        ("lock_timeout", "1h  [default]"),                         # issue 26: run and vacuum
        ("retention_days", "2555  [default]"),                     # issue 26: vacuum
        ("max_rejects_in_a_row", "10000  [default]"),              # issue 37: run
        ("legal_holds", "(not set)  [default]"),                   # issue 26: vacuum, the file only
        ("display", "(not set)  [default]"),                       # issue 43: run, the file only
        ("store", "(not set)  [default]"),                         # issue 44: an s3:// lake, the file only
    )]


def test_config_show_without_a_file():
    result = run_pitwatch("config", "show")
    assert result.returncode == exits.DONE
    assert result.stdout.splitlines()[0] == "config file: none (give --config FILE or set PITWATCH_CONFIG)"
    assert f"{'timezone':<{max(map(len, SETTINGS))}}  UTC  [default]" in result.stdout


@pytest.mark.parametrize("text, message", [
    ('fail-on = "critical"\n', "unknown key 'fail-on' (did you mean fail_on?)"),
    ('time_zone = "UTC"\n', "unknown key 'time_zone' (did you mean timezone?)"),
    ('lake = 5\n', "lake must be text in quotes, got int 5"),
    ('fail_on = "critcal"\n', "fail_on must be one of info, minor, major, critical, got 'critcal' "
                              "(did you mean critical?)"),
    ('cutoff = 06:00:30\n', "cutoff must be a time HH:MM, got 06:00:30"),
    ('lake = [\n', "is not valid TOML"),
    ('lake = ""\n', "lake is empty"),
])
@pytest.mark.parametrize("command", [["run", "--day", "2026-11-28"], ["sql", "SELECT 1"], ["config", "show"],
                                     ["rules"]])
def test_a_bad_config_file_is_exit_2_on_every_command(tmp_path, text, message, command):
    path = _config(tmp_path, text)
    result = run_pitwatch(*command, "--config", path)
    assert result.returncode == exits.USAGE
    assert result.stderr.startswith(f"Error: config file {path}") and message in result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr


def test_a_missing_config_file_is_exit_2(tmp_path):
    result = pitwatch("rules", env={"PITWATCH_CONFIG": str(tmp_path / "nope.toml")})
    assert result.returncode == exits.USAGE and result.stderr == f"Error: config file {tmp_path / 'nope.toml'} does not exist\n"


def test_the_key_table_is_the_one_place_for_keys(tmp_path):
    sample = {"time": '"06:00"', "count": "7", "lines": "10000", "duration": '"1h"', "days": '["2026-11-28"]',
              "zones": '{tables = {"CMB-01" = "UTC"}}', "store": '{region = "us-east-1"}'}
    text = "".join(f"{k} = {sample.get(s.kind) or repr(s.choices[-1] if s.choices else 'x')}\n" for k, s in SETTINGS.items())
    path = _config(tmp_path, text.replace("'", '"'))
    assert sorted(load(str(path)).values) == sorted(SETTINGS)
    with pytest.raises(ConfigError):
        load(str(_config(tmp_path, 'retention_days = "7"\n')))
    with pytest.raises(ConfigError, match="max_rejects_in_a_row must be a whole number of lines"):
        load(str(_config(tmp_path, 'max_rejects_in_a_row = "10000"\n')))


@pytest.mark.slow
def test_pitwatch_toml_drives_a_nightly_run_with_no_flag_but_day(inbox, tmp_path):  # noqa: F811
    path = _config(tmp_path, CONFIG.format(inbox=inbox))
    result = pitwatch("run", "--day", "2026-11-28", env={"PITWATCH_CONFIG": str(path)})
    assert result.returncode == exits.FINDINGS, result.stderr          # fail_on = "critical" from the file
    lake = tmp_path / "etc" / "lake"
    assert lake.is_dir()
    log = (tmp_path / "etc" / "logs" / "nightly.log").read_text()
    assert " INFO pitwatch[" in log and "inbox folder 2026-11-28: the night's day" in log
    (rec,) = run_records(lake)
    assert rec["command"] == "pitwatch run --day 2026-11-28"
    origin = f"file {path} (sha256 {hashlib.sha256(path.read_bytes()).hexdigest()})"
    settings = rec["options"]["settings"]
    assert settings["lake"] == {"value": str(lake), "origin": origin}
    assert settings["inbox"] == {"value": str(inbox), "origin": origin}
    assert settings["fail_on"] == {"value": "critical", "origin": origin}
    assert settings["config"] == {"value": str(path), "origin": "environment PITWATCH_CONFIG",
                                  "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
    # the same with --config, and a flag over the file
    again = pitwatch("run", "--day", "2026-11-28", "--config", path, "--fail-on", "info", "--quiet")
    assert again.returncode == exits.FINDINGS
    rec = run_records(lake)[-1]
    assert rec["command"] == f"pitwatch run --day 2026-11-28 --config {path} --fail-on info --quiet"
    assert rec["options"]["settings"]["fail_on"] == {"value": "info", "origin": "flag"}
    assert rec["options"]["settings"]["config"]["origin"] == "flag"


@pytest.mark.slow
def test_the_run_record_keeps_the_whole_command_line_and_each_origin(inbox, tmp_path):  # noqa: F811
    lake = tmp_path / "lake"
    result = pitwatch("run", "--day", "2026-11-28", "--inbox", inbox, "--lake", lake, "--direct_num_workers=1",
                      "--", "--direct_running_mode=in_memory", env={"PITWATCH_CUTOFF": "06:00"})
    assert result.returncode == exits.DONE, result.stderr
    (rec,) = run_records(lake)
    assert rec["command"] == (f"pitwatch run --day 2026-11-28 --inbox {inbox} --lake {lake} --direct_num_workers=1 "
                              "-- --direct_running_mode=in_memory")
    settings = rec["options"]["settings"]
    assert settings["lake"] == {"value": str(lake), "origin": "flag"}
    assert settings["cutoff"] == {"value": "06:00", "origin": "environment PITWATCH_CUTOFF"}
    assert settings["timezone"] == {"value": "UTC", "origin": "default"}
    assert rec["options"]["beam_args"] == ["--direct_num_workers=1", "--direct_running_mode=in_memory"]


@pytest.mark.slow
def test_log_lines_are_timestamped_and_the_summary_has_no_slips(inbox, tmp_path):  # noqa: F811
    import re

    result = pitwatch("run", "--day", "2026-11-28", "--inbox", inbox, "--lake", tmp_path / "lake", "--verbose")
    assert result.returncode == exits.DONE, result.stderr
    stamp = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z pitwatch: ")
    assert [line for line in result.stderr.splitlines() if not stamp.match(line)] == []
    assert "gaming_day=None" not in result.stderr and "wrote rules: " in result.stderr
    assert not re.search(r"\b1 (lines|files|rows|findings|events|decks)\b", result.stderr + result.stdout)


@pytest.mark.parametrize("make, message", [
    (lambda tmp: "/dev/zero", "is not a regular file"),
    (lambda tmp: tmp, "is a folder"),
    (lambda tmp: (tmp / "big.toml").write_bytes(b"#" * 70_000) and tmp / "big.toml", "is larger than 64 KB"),
    (lambda tmp: (tmp / "bin.toml").write_bytes(b'lake = "\xff"\n') and tmp / "bin.toml", "is not UTF-8 text"),
])
def test_a_hostile_config_file_is_one_error_line(tmp_path, make, message):
    path = make(tmp_path)
    result = run_pitwatch("rules", "--config", path, timeout=60)
    assert result.returncode == exits.USAGE
    assert result.stderr == f"Error: config file {path} {message}" + (": not a pitwatch.toml\n" if "64 KB" in message
                                                                        else "\n")


def test_config_help_lists_every_key_with_its_flag_variable_and_default():
    """``pitwatch config --help`` names every key of :data:`SETTINGS`, in its order (issue 38: it named 6)."""
    import re

    from click.testing import CliRunner

    from pitwatch.cli import main

    result = CliRunner().invoke(main, ["config", "--help"], terminal_width=100)
    assert result.exit_code == exits.DONE, result.output
    rows = {m["key"]: m["rest"] for m in re.finditer(r"^ {4}(?P<key>[a-z_]+) {2,}(?P<rest>\S.*)$", result.output, re.M)}
    assert list(rows) == list(SETTINGS)
    for key, s in SETTINGS.items():
        if s.kind in ("days", "zones", "store"):
            assert rows[key] == "the file only"                   # no flag, no variable lifts a hold
            continue
        assert rows[key].startswith(f"{s.option}, {s.envvar}")
        assert (f"default {s.default}" in rows[key]) == (s.default is not None)
