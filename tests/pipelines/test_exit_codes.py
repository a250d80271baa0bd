"""A command a scheduler can trust (issue 24), replayed as real processes.

Every exit code of ``pitwatch.cli.exits`` and a mistyped option of every
command: the code, the one ``Error:`` line, and the lake's bytes untouched
by a refused run.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pitwatch.cli import COMMANDS, exits
from tests.conftest import run_pitwatch_process as pitwatch  # a real process: the exit codes as a scheduler sees them

ROOT = Path(__file__).resolve().parents[2]


def lake_bytes(lake: Path) -> dict[str, bytes]:
    return {str(p.relative_to(lake)): p.read_bytes() for p in sorted(lake.rglob("*")) if p.is_file()} \
        if lake.exists() else {}


def run_records(lake: Path) -> list[dict]:
    """The latest record of every run of the lake (a run appends one when it starts, one when it ends)."""
    from tests import lake_rows

    if not (lake / "runs").is_dir():
        return []
    return [{"run_id": r["run_id"], "command": r["command"], "status": r["status"], "options": json.loads(r["options"])}
            for r in lake_rows.run_records(lake)]


@pytest.fixture(scope="module")
def inbox(tmp_path_factory) -> Path:
    """A simulated gaming day 2026-11-28 with critical faults (a shoe's card mismatch), in an inbox."""
    from pitwatch.simulator import simulate

    base = tmp_path_factory.mktemp("inbox")
    simulate(base / "inbox", tables={"baccarat": 1, "stud": 1}, hours=0.5, seed=3,
             faults={"SHOE_CARD_MISMATCH": 1.0, "BURN_SKIPPED": 0.2}, workers=1)
    return base / "inbox"


# --- 2: an option nobody knows, on every command ------------------------------------------------

TYPOS = {
    "run": (["in.jsonl", "--lake", "{lake}"], "--fial-on", "--fail-on"),
    "watch": (["in.jsonl", "--lake", "{lake}"], "--stop-after-idel", "--stop-after-idle"),
    "simulate": (["--out", "{lake}"], "--huors", "--hours"),
    "demo": (["--out", "{lake}"], "--seeed", "--seed"),
    "rules": ([], "--sevrity", "--severity"),
    "sql": (["SELECT 1", "--lake", "{lake}"], "--fromat", "--format"),
    "query": (["findings_by_rule", "--lake", "{lake}"], "--parm", "--param"),
    "export-duckdb": (["--lake", "{lake}", "--out", "{lake}/x.duckdb"], "--froce", "--force"),
    "config": (["show"], "--timezon", "--timezone"),
    "migrate": (["--lake", "{lake}"], "--confg", "--config"),
    "verify": (["--lake", "{lake}"], "--anchr", "--anchor"),
    "vacuum": (["--lake", "{lake}"], "--dry-rnu", "--dry-run"),
    "dealers": (["import", "dealers.csv", "--lake", "{lake}"], "--lock-timeuot", "--lock-timeout"),
    "review": (["abc", "--lake", "{lake}"], "--dispostion", "--disposition"),
    "incidents": (["--day", "2026-11-28", "--lake", "{lake}"], "--fromat", "--format"),
    "serve": (["--lake", "{lake}"], "--prot", "--port"),
    "users": (["add", "ana", "--role", "viewer", "--lake", "{lake}"], "--password-stidn", "--password-stdin"),
    "report": (["--day", "2026-11-28", "--lake", "{lake}", "--out", "{lake}/r.html"], "--froce", "--force"),
}


def test_every_command_has_a_typo_case():
    assert sorted(TYPOS) == sorted(COMMANDS)


@pytest.mark.parametrize("name", sorted(TYPOS))
def test_a_mistyped_option_is_exit_2_with_a_suggestion_on_every_command(name, tmp_path):
    args, typo, meant = TYPOS[name]
    lake = tmp_path / "lake"
    argv = [a.format(lake=lake) for a in args]
    result = pitwatch(name, *argv, typo, "critical", cwd=tmp_path)
    assert result.returncode == exits.USAGE, result.stderr
    assert result.stderr == f"Error: no such option {typo} (did you mean {meant}?)\n"
    assert result.stdout == ""
    assert not lake.exists()          # nothing written, not even an empty lake


@pytest.mark.parametrize("typo, meant", [("--time-zone", "--timezone"), ("--days", "--day"),
                                         ("--fail_on", "--fail-on"), ("--direct-num-workers", "--direct_num_workers")])
def test_run_typos_of_the_issue_never_reach_beam(typo, meant, inbox, tmp_path):
    lake = tmp_path / "lake"
    result = pitwatch("run", "--day", "2026-11-28", "--inbox", inbox, "--lake", lake, typo, "x")
    assert result.returncode == exits.USAGE
    assert result.stderr == f"Error: no such option {typo} (did you mean {meant}?)\n"
    assert not lake.exists()


def test_a_bad_value_of_a_beam_option_is_exit_2(inbox, tmp_path):
    result = pitwatch("run", inbox / "2026-11-28", "--lake", tmp_path / "lake", "--direct_num_workers=two")
    assert result.returncode == exits.USAGE
    assert result.stderr == "Error: Beam pipeline option --direct_num_workers: invalid int value: 'two'\n"


def test_a_mistyped_option_of_pitwatch_itself():
    result = pitwatch("--vresion")
    assert result.returncode == exits.USAGE and result.stderr == "Error: no such option --vresion (did you mean --version?)\n"


# --- every --help ends with the exit codes ----------------------------------------------------------

@pytest.mark.parametrize("name", sorted(COMMANDS) + ["config show", "dealers import", "dealers show", "users add",
                                                     "users list", "users remove"])
def test_every_help_lists_every_exit_code(name):
    result = pitwatch(*name.split(), "--help")
    assert result.returncode == 0
    table = result.stdout.split("Exit codes:")[1]
    for code, meaning in exits.TABLE:
        assert f"{code}  {meaning}" in table
    assert "--config FILE" in result.stdout or name in ("config", "dealers", "users")     # the groups: their commands take it


# --- 0 and 1 -----------------------------------------------------------------------------------------

def test_exit_0_done():
    result = pitwatch("rules", "--severity", "critical", "--format", "csv")
    assert result.returncode == exits.DONE and result.stdout.startswith("rule_id,")


@pytest.mark.slow
def test_exit_1_findings_at_or_above_fail_on_and_0_below(inbox, tmp_path):
    lake = tmp_path / "lake"
    found = pitwatch("run", "--day", "2026-11-28", "--inbox", inbox, "--lake", lake, "--fail-on", "critical")
    assert found.returncode == exits.FINDINGS, found.stderr
    assert " of severity critical or higher\n" in found.stderr
    clean = pitwatch("run", "--day", "2026-11-28", "--inbox", inbox, "--lake", lake)   # no --fail-on
    assert clean.returncode == exits.DONE, clean.stderr


# --- 2: a nightly day with nothing to read --------------------------------------------------------

def test_a_missing_day_folder_is_exit_2_and_names_it(inbox, tmp_path):
    lake = tmp_path / "lake"
    result = pitwatch("run", "--day", "2026-11-30", "--inbox", inbox, "--lake", lake)
    assert result.returncode == exits.USAGE
    assert result.stderr == (f"Error: no inbox folder for gaming day 2026-11-30: {inbox / '2026-11-30'} does not "
                             "exist; for a day the casino was closed, run with --allow-empty-day\n")
    assert not lake.exists()


def test_a_folder_of_files_pitwatch_does_not_read_is_exit_2_naming_them(tmp_path):
    day = tmp_path / "inbox" / "2026-11-28"
    day.mkdir(parents=True)
    (day / "DT-BAC01.json").write_text("{}\n")
    (day / "SHOE-5022.JSONL").write_text("{}\n")
    lake = tmp_path / "lake"
    result = pitwatch("run", "--day", "2026-11-28", "--inbox", tmp_path / "inbox", "--lake", lake)
    assert result.returncode == exits.USAGE
    assert result.stderr.startswith(f"Error: inbox folder {day} holds no file pitwatch reads")
    assert "2026-11-28/DT-BAC01.json (not .jsonl, .jsonl.gz or .parquet)" in result.stderr
    assert "2026-11-28/SHOE-5022.JSONL (suffix not in lower case" in result.stderr
    assert not lake.exists()


@pytest.mark.slow
def test_allow_empty_day_runs_a_closed_day(tmp_path):
    (tmp_path / "inbox").mkdir()
    lake = tmp_path / "lake"
    result = pitwatch("run", "--day", "2026-11-30", "--inbox", tmp_path / "inbox", "--lake", lake,
                      "--allow-empty-day")
    assert result.returncode == exits.DONE, result.stderr
    assert "inputs      0 files, 0 bytes" in result.stdout
    assert [r["status"] for r in run_records(lake)] == ["succeeded"]


@pytest.mark.slow
def test_skipped_files_are_named_on_stderr_and_in_the_run_record(inbox, tmp_path):
    import shutil

    box = tmp_path / "inbox"
    shutil.copytree(inbox / "2026-11-28", box / "2026-11-28")
    (box / "2026-11-28" / "SHA256SUMS").write_text("x\n")
    (box / "2026-11-28" / "DT-BAC09.jsonl.partial").write_text("{\n")
    (box / "2026-11-28" / ".DT-BAC09.jsonl.swp").write_text("x")
    lake = tmp_path / "lake"
    strict = pitwatch("run", "--day", "2026-11-28", "--inbox", box, "--lake", lake, "--strict-inbox")
    assert strict.returncode == exits.USAGE
    assert strict.stderr.startswith("Error: --strict-inbox: the inbox holds 3 files pitwatch does not read: ")
    assert not lake.exists()
    result = pitwatch("run", "--day", "2026-11-28", "--inbox", box, "--lake", lake)
    assert result.returncode == exits.DONE, result.stderr
    warned = [line for line in result.stderr.splitlines() if "skipped 3 files" in line][0]
    assert "2026-11-28/DT-BAC09.jsonl.partial (upload not finished)" in warned
    assert "2026-11-28/SHA256SUMS (checksum file)" in warned and "(hidden file)" in warned
    assert run_records(lake)[0]["options"]["inbox_skipped"] == [
        {"path": "2026-11-28/.DT-BAC09.jsonl.swp", "reason": "hidden file"},
        {"path": "2026-11-28/DT-BAC09.jsonl.partial", "reason": "upload not finished"},
        {"path": "2026-11-28/SHA256SUMS", "reason": "checksum file"},
    ]


# --- 2: the gaming-day settings belong to the lake -------------------------------------------------

@pytest.mark.slow
def test_other_gaming_day_settings_stop_before_writing_and_say_how_to_change(inbox, tmp_path):
    import shutil

    box = tmp_path / "inbox"
    shutil.copytree(inbox / "2026-11-28", box / "2026-11-28")
    shutil.copytree(inbox / "2026-11-28", box / "2026-11-29")
    lake = tmp_path / "lake"
    assert pitwatch("run", "--day", "2026-11-28", "--inbox", box, "--lake", lake).returncode == exits.DONE
    assert json.loads((lake / "settings.json").read_text())["timezone"] == "UTC"
    before = lake_bytes(lake)
    other = pitwatch("run", "--day", "2026-11-29", "--inbox", box, "--lake", lake, "--timezone", "America/Puerto_Rico")
    assert other.returncode == exits.USAGE
    assert other.stderr.startswith(f"Error: the lake {lake} files gaming days in time zone UTC with cutoff 06:00")
    assert "Run with --timezone UTC --cutoff 06:00" in other.stderr
    assert "--rebuild-from 2026-11-28 --timezone America/Puerto_Rico" in other.stderr
    assert lake_bytes(lake) == before                      # not a byte written, not even a run record
    cutoff = pitwatch("run", "--day", "2026-11-29", "--inbox", box, "--lake", lake, "--cutoff", "07:00")
    assert cutoff.returncode == exits.USAGE and "with cutoff 07:00" in cutoff.stderr
    assert lake_bytes(lake) == before
    # the way out: replay the whole lake from its first day with the new settings
    rebuilt = pitwatch("run", "--day", "2026-11-29", "--inbox", box, "--lake", lake, "--timezone",
                       "America/Puerto_Rico", "--rebuild-from", "2026-11-28")
    assert rebuilt.returncode == exits.DONE, rebuilt.stderr
    assert json.loads((lake / "settings.json").read_text())["timezone"] == "America/Puerto_Rico"
    assert pitwatch("run", "--day", "2026-11-29", "--inbox", box, "--lake", lake).returncode == exits.USAGE


@pytest.mark.slow
def test_a_lake_from_before_settings_json_takes_its_first_runs_settings(inbox, tmp_path):
    lake = tmp_path / "lake"
    assert pitwatch("run", inbox / "2026-11-28", "--lake", lake, "--cutoff", "05:00").returncode == exits.DONE
    (lake / "settings.json").unlink()                       # as a lake written by an older pitwatch
    refused = pitwatch("run", inbox / "2026-11-28", "--lake", lake)
    assert refused.returncode == exits.USAGE and "with cutoff 05:00 (recorded by run " in refused.stderr
    assert not (lake / "settings.json").exists()


@pytest.mark.slow
def test_settings_json_edited_outside_pitwatch_is_caught_by_every_command_and_verify(inbox, tmp_path):
    """Issue 37 as written: the cutoff in settings.json edited from 06:00 to 09:00. verify said
    intact; the next nightly run refused, saying 09:00 was "recorded by run …" (that run's chained
    record says 06:00); following its advice filed every finding under the wrong day."""
    import shutil

    box = tmp_path / "inbox"
    shutil.copytree(inbox / "2026-11-28", box / "2026-11-28")
    shutil.copytree(inbox / "2026-11-28", box / "2026-11-29")
    lake = tmp_path / "lake"
    first = pitwatch("run", "--day", "2026-11-28", "--inbox", box, "--lake", lake)
    assert first.returncode == exits.DONE, first.stderr
    run_id = run_records(lake)[-1]["run_id"]
    settings = json.loads((lake / "settings.json").read_text())
    (lake / "settings.json").write_text(json.dumps({**settings, "cutoff": "09:00"}))
    before = lake_bytes(lake)
    checked = pitwatch("verify", "--lake", lake, "--format", "json")
    assert checked.returncode == exits.NOT_INTACT
    problems = json.loads(checked.stdout)["problems"]
    assert [(p["kind"], p["what"]) for p in problems] == [("changed", "settings.json")]
    assert f"but run {run_id}, the newest succeeded run in the chain, ran with time zone UTC and cutoff 06:00" \
        in problems[0]["detail"]
    for args in (("--cutoff", "09:00"), ("--cutoff", "06:00"), ()):   # the forged value, the true one, none
        night = pitwatch("run", "--day", "2026-11-29", "--inbox", box, "--lake", lake, *args)
        assert night.returncode == exits.NOT_INTACT, night.stderr
        assert night.stderr.startswith(f"Error: {lake}/settings.json says time zone UTC with cutoff 09:00, but run "
                                       f"{run_id}, the newest succeeded run in the chain, ran with time zone UTC and "
                                       "cutoff 06:00: the file was changed outside pitwatch")
        assert lake_bytes(lake) == before                      # nothing written, not even a run record
    watch = pitwatch("sql", "select count(*) from findings", "--lake", lake)
    assert watch.returncode == exits.DONE                      # reading the lake needs no settings
    (lake / "settings.json").write_text(json.dumps(settings))  # restored as the message says
    assert pitwatch("verify", "--lake", lake).returncode == exits.DONE
    assert pitwatch("run", "--day", "2026-11-29", "--inbox", box, "--lake", lake).returncode == exits.DONE


@pytest.mark.slow
def test_a_rebuild_killed_before_it_wrote_settings_json_is_not_tampering(inbox, tmp_path):
    """A rebuild with new settings records them in its chained record, then in settings.json: a kill
    between the two leaves the file one rebuild behind; verify notes it and the next run rewrites it."""
    import shutil

    box = tmp_path / "inbox"
    shutil.copytree(inbox / "2026-11-28", box / "2026-11-28")
    lake = tmp_path / "lake"
    assert pitwatch("run", "--day", "2026-11-28", "--inbox", box, "--lake", lake).returncode == exits.DONE
    old = (lake / "settings.json").read_bytes()
    rebuilt = pitwatch("run", "--day", "2026-11-28", "--inbox", box, "--lake", lake, "--cutoff", "07:00",
                       "--rebuild-from", "2026-11-28")
    assert rebuilt.returncode == exits.DONE, rebuilt.stderr
    (lake / "settings.json").write_bytes(old)                  # as if killed before the file was written
    checked = pitwatch("verify", "--lake", lake, "--format", "json")
    assert checked.returncode == exits.DONE, checked.stdout
    assert any(n.startswith("settings.json: still the settings before the rebuild run ")
               for n in json.loads(checked.stdout)["notes"])
    again = pitwatch("run", "--day", "2026-11-28", "--inbox", box, "--lake", lake, "--cutoff", "07:00")
    assert again.returncode == exits.DONE, again.stderr
    assert json.loads((lake / "settings.json").read_text())["cutoff"] == "07:00"


# --- 3: interrupted, and the next run proceeds ------------------------------------------------------

@pytest.fixture(scope="module")
def long_day(tmp_path_factory) -> Path:
    """A day long enough that a run is still replaying a few seconds after it started."""
    from pitwatch.simulator import simulate

    base = tmp_path_factory.mktemp("long")
    simulate(base / "feeds", tables={"baccarat": 6, "stud": 2}, hours=6, seed=5, faults={}, workers=2)
    return base / "feeds" / "2026-11-28"


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_during_a_run_is_exit_3_recorded_interrupted_and_the_next_run_proceeds(sig, long_day, tmp_path):
    lake = tmp_path / "lake"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PITWATCH_")}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.Popen([sys.executable, "-m", "pitwatch.cli", "run", str(long_day), "--lake", str(lake)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    deadline = time.monotonic() + 60
    while not list((lake / "runs").glob("*.parquet")) and time.monotonic() < deadline:
        time.sleep(0.05)              # the run record "running" is written: the pipeline is starting
    time.sleep(1.5)
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == exits.INCOMPLETE, err
    assert err.splitlines()[-1] == (f"Error: interrupted by {sig.name}: the run record says interrupted; "
                                    "run the same command again to complete it")
    assert "Traceback" not in err
    assert [r["status"] for r in run_records(lake)] == [f"interrupted: {sig.name}"]
    again = pitwatch("run", long_day, "--lake", lake)
    assert again.returncode == exits.DONE, again.stderr
    assert [r["status"] for r in run_records(lake)] == [f"interrupted: {sig.name}", "succeeded"]
    assert not [p for p in lake.rglob(".tmp-*")]


# a command a signal interrupted, in a process a library's thread would keep alive: it still ends
_STUCK_COMMAND = """
import os, signal, sys, threading, time
import click
from pitwatch.cli import common

common.ENDS_WITHIN_AFTER_INTERRUPT = float(sys.argv[1])

@click.group(cls=common.StrictGroup)
def group():
    pass

@group.command(cls=common.StrictCommand)
@click.option("--leave-a-thread", is_flag=True)
def stuck(leave_a_thread):
    if leave_a_thread:      # not a daemon, waits for ever: the interpreter's exit would wait for it
        threading.Thread(target=threading.Event().wait, name="left-waiting").start()
    os.kill(os.getpid(), signal.SIGINT)
    time.sleep(30)

group(["stuck", *sys.argv[2:]])
"""


@pytest.mark.parametrize("leave_a_thread", [True, False])
def test_an_interrupted_command_ends_even_when_a_thread_would_hold_the_process(leave_a_thread, tmp_path):
    """CI once saw ``pitwatch run`` print its ``Error: interrupted by SIGINT`` line and not end in
    120 s: the process ends ENDS_WITHIN_AFTER_INTERRUPT after the command, printing what held it."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PITWATCH_")}
    env["PYTHONPATH"] = str(ROOT)
    started = time.monotonic()
    done = subprocess.run([sys.executable, "-c", _STUCK_COMMAND, "2"] + (["--leave-a-thread"] if leave_a_thread else []),
                          capture_output=True, text=True, env=env, timeout=60, cwd=tmp_path)
    took = time.monotonic() - started
    assert done.returncode == exits.INCOMPLETE, done.stderr
    lines = done.stderr.splitlines()
    assert lines[0] == "Error: interrupted by SIGINT: the command did not complete"
    if leave_a_thread:
        assert lines[1] == ("pitwatch: the process had not ended 2 s after the interrupted command; "
                            "ending it (exit 3). What held it:")
        assert any(line.strip().startswith('File "') and line.strip().endswith("in wait") for line in lines[2:])
        assert 2 <= took < 30
    else:
        assert lines == ["Error: interrupted by SIGINT: the command did not complete"]
        assert took < 30


def _lock_waiters() -> list[str]:
    """Every command (a group's subcommand as 'group sub') that waits for the lake's lock: has --lock-timeout
    (but ``config show``, which takes every setting to show it as a command would see it)."""
    import click

    from pitwatch.cli import main

    ctx = click.Context(main)

    def walk(cmd, prefix):
        if isinstance(cmd, click.Group):      # the lazy group too: its commands by name
            for name in cmd.list_commands(ctx):
                yield from walk(cmd.get_command(ctx, name), [*prefix, name])
        elif any("--lock-timeout" in p.opts for p in cmd.params) and prefix != ["config", "show"]:
            yield " ".join(prefix)
    return list(walk(main, []))


def test_exit_4_names_every_command_that_waits_for_the_lake_s_lock():
    waiters = _lock_waiters()
    assert {"run", "vacuum", "review", "dealers import"} <= set(waiters)
    code_4 = " ".join(exits.__doc__.split("\n4")[1].split("\n5")[0].split())
    operations = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    row_4 = next(line for line in operations.splitlines() if line.startswith("| 4 |"))
    assert [w for w in waiters if f"``{w}``" not in code_4] == []
    assert [w for w in waiters if f"`{w}`" not in row_4] == []
