"""``pitwatch config show``: the effective settings and where each came from."""
from __future__ import annotations

import os
import textwrap

import click

from pitwatch import config as cfg
from pitwatch.cli.common import CONFIG_META, SETTINGS_META, StrictCommand, StrictGroup, setting_option


def _keys_help() -> str:
    """The keys of :data:`pitwatch.config.SETTINGS`, each with the flag and environment variable that
    override it, its default and what it is: the help lists the one table, so a new key is listed."""
    width = max(map(len, cfg.SETTINGS)) + 2
    lines = ["\b", "Keys (the flag and environment variable that override each, its default):"]
    for key, s in cfg.SETTINGS.items():
        if s.kind in cfg.FILE_ONLY:
            overrides = "the file only"
        else:
            overrides = f"{s.option}, {s.envvar}" + (f"; default {s.default}" if s.default is not None else "")
        lines.append(f"  {key:<{width}}{overrides}")
        what = s.help + (f" One of {', '.join(s.choices)}." if s.choices else "")
        lines += textwrap.wrap(what, 72, initial_indent=" " * 6, subsequent_indent=" " * 6)
    return "\n".join(lines)


@click.group(cls=StrictGroup, help=f"""The settings file, pitwatch.toml: flat, snake_case keys; relative paths
are taken from the file's folder.  A flag overrides the setting's environment
variable, which overrides the file, which overrides the default.

{_keys_help()}
""", epilog="""\b
Examples:
  pitwatch config show --config /etc/pitwatch/pitwatch.toml
  PITWATCH_CONFIG=/etc/pitwatch/pitwatch.toml pitwatch config show --lake /tmp/lake
""")
def config():
    pass


def _show_options(fn):
    for key in reversed(list(cfg.SETTINGS)):
        s = cfg.SETTINGS[key]
        if s.kind in cfg.FILE_ONLY:   # legal_holds, display, store: the file only (no flag, no PITWATCH_ variable)
            continue
        fn = setting_option(key, default=None, show_default=False,
                            help=f"As a command given {s.option} would see it.")(fn)
    return fn


@config.command(cls=StrictCommand, epilog="""\b
Examples:
  pitwatch config show --config /etc/pitwatch/pitwatch.toml
  pitwatch config show --config pitwatch.toml --timezone America/Puerto_Rico
""")
@_show_options
@click.pass_context
def show(ctx, **_values):
    """Print every setting's effective value and its origin: flag, environment
    variable, the config file (its path and SHA-256) or the default.
    """
    settings = ctx.meta[SETTINGS_META]
    loaded = ctx.meta[CONFIG_META]
    if loaded is None:
        click.echo(f"config file: none (give --config FILE or set {cfg.CONFIG_ENV})")
    else:
        click.echo(f"config file: {loaded.path} (sha256 {loaded.sha256}, from {settings['config']['origin']})")
    width = max(len(k) for k in cfg.SETTINGS)
    for key, s in cfg.SETTINGS.items():
        got = settings.get(key, {"value": None, "origin": "default"})
        if s.kind in cfg.FILE_ONLY and loaded is not None and key in loaded.values:
            got = {"value": loaded.values[key], "origin": "file"}
        if s.kind == "store":
            shown = _store_shown(loaded.values.get(key, {}) if loaded is not None else {})
            click.echo(f"{key:<{width}}  {shown}")
            continue
        value = got["value"] if got["value"] is not None else s.default
        origin = got["origin"]
        if origin.startswith("file "):
            origin = "file"
        if s.kind == "zones" and isinstance(value, dict):
            value = ", ".join(f"{table} {zone}" for table, zone in value.items()) or "(none: every table in the lake's zone)"
        shown = "(not set)" if value is None else value
        click.echo(f"{key:<{width}}  {shown}  [{origin}]")


def _store_shown(store: dict) -> str:
    """The object store's settings as the command sees them (the environment's variables win over the
    file's ``[store]``), each with its origin; a secret is never shown, only whether it is set."""
    parts = []
    for key, name in cfg.STORE_KEYS.items():
        here = os.environ.get(name)
        if here is None:
            continue
        mine = store.get(key)
        mine = None if mine is None else ("true" if mine is True else "false" if mine is False else mine)
        origin = "file" if mine is not None and mine == here else f"environment {name}"
        parts.append(f"{key}={'(set, not shown)' if key in cfg.STORE_SECRETS else here} [{origin}]")
    return ", ".join(parts) or "(not set)  [default]"
