"""``pitwatch``: the command line.  One module per command; this file only registers them.

Commands are imported lazily, so ``pitwatch rules`` or ``pitwatch --help`` do
not pay for importing Apache Beam.
"""
from __future__ import annotations

import importlib

import click

from pitwatch import __version__
from pitwatch.cli.common import StrictGroup

# command name -> "module:attribute" (a click.Command)
COMMANDS = {
    "run": "pitwatch.cli.run:run",
    "watch": "pitwatch.cli.watch:watch",
    "simulate": "pitwatch.cli.simulate:simulate",
    "demo": "pitwatch.cli.demo:demo",
    "rules": "pitwatch.cli.rules:rules",
    "sql": "pitwatch.cli.sql:sql",
    "query": "pitwatch.cli.query:query",
    "export-duckdb": "pitwatch.cli.export:export_duckdb",
    "config": "pitwatch.cli.config:config",
    "migrate": "pitwatch.cli.migrate:migrate",
    "verify": "pitwatch.cli.verify:verify",
    "vacuum": "pitwatch.cli.vacuum:vacuum",
    "dealers": "pitwatch.cli.dealers:dealers",
    "review": "pitwatch.cli.review:review",
    "incidents": "pitwatch.cli.incidents:incidents",
    "serve": "pitwatch.cli.serve:serve",
    "users": "pitwatch.cli.users:users",
}

_SHORT_HELP = {
    "run": "The nightly batch: ingest, validate, replay, write the lake.",
    "watch": "Live alerts: follow growing inputs, replay live, alert at once.",
    "simulate": "Write a realistic simulated gaming day with injected faults.",
    "demo": "Simulate a small day, run the batch, print the findings.",
    "rules": "List the rule catalogue with severity and source.",
    "sql": "Ad-hoc SQL in DuckDB over the lake's tables.",
    "query": "Run a named investigation from queries/.",
    "export-duckdb": "Write a DuckDB database file with the lake's views.",
    "config": "The effective settings (pitwatch.toml, environment, flags) and their origin.",
    "migrate": "Convert a lake of the previous layout (plain Parquet) to Delta tables.",
    "verify": "Check the lake's hash chain and files (and the anchor): exit 5 when not intact.",
    "vacuum": "Remove files runs replaced, past the retention; legal holds kept.",
    "dealers": "The dealers' roster kept in the lake: import a dealers.csv, show it.",
    "review": "Record a finding's review: confirmed, dismissed or escalated, by whom, why.",
    "incidents": "A day's confirmed and escalated findings as incident records (CSV, JSON).",
    "serve": "The surveillance console: a web application over the lake.",
    "users": "The console's users and their roles (viewer, reviewer, admin).",
}


class LazyGroup(StrictGroup):
    def list_commands(self, ctx):
        return sorted(name for name in COMMANDS if _available(name))

    def get_command(self, ctx, name):
        target = COMMANDS.get(name)
        if target is None or not _available(name):
            return None
        module, attr = target.split(":")
        return getattr(importlib.import_module(module), attr)

    def format_commands(self, ctx, formatter):
        rows = [(name, _SHORT_HELP.get(name, "")) for name in self.list_commands(ctx)]
        if rows:
            with formatter.section("Commands"):
                formatter.write_dl(rows)


def _available(name: str) -> bool:
    module = COMMANDS[name].split(":")[0]
    return importlib.util.find_spec(module) is not None


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="pitwatch")
def main():
    """pitwatch: replays every round of every casino table against its written
    dealing procedure and reports where the procedure was broken.

    \b
    Start here:
      pitwatch demo                       simulate a day, replay it, show the findings
      pitwatch run events/ --lake lake/   the nightly batch over a folder of event files
      pitwatch rules                      what is checked, with severity and source

    Every command takes --config FILE (pitwatch.toml) and exits with the
    codes below; see docs/operations.md for scheduling a nightly run.
    """


import importlib.util  # noqa: E402  (used by _available)
