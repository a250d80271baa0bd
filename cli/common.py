"""What every command shares: strict options, ``--config``, exit codes, signals, errors, logging.

Every command is a :class:`StrictCommand` (``@click.command(cls=StrictCommand)``):

* an option the command does not know is ``Error: no such option --fial-on
  (did you mean --fail-on?)``, exit 2 — never passed on, never ignored;
* it takes ``--config FILE`` (or ``PITWATCH_CONFIG``): the keys of
  :data:`pitwatch.config.SETTINGS` that the command has an option for are
  its defaults, a flag or the setting's environment variable overriding
  them; the effective values and where each came from are in
  ``ctx.meta[SETTINGS_META]``, the whole command line in ``ctx.meta[COMMAND_META]``;
* its ``--help`` ends with the exit-code table of :mod:`pitwatch.cli.exits`;
* SIGTERM is handled like Ctrl-C (SIGINT): the command stops, says so, exit 3; once it has
  said so the process ends within :data:`ENDS_WITHIN_AFTER_INTERRUPT` seconds, whatever thread
  of a library the interrupt left waiting (:func:`end_after_interrupt`).
"""
from __future__ import annotations

import contextlib
import faulthandler
import functools
import logging
import os
import shlex
import signal
import sys
import threading
import time

import click

from pitwatch import config as cfg
from pitwatch.cli import exits

COMMAND_META = "pitwatch.command"          # the whole command line, as typed
SETTINGS_META = "pitwatch.settings"        # {key: {"value": …, "origin": …}}
AFTER_DASHES_META = "pitwatch.after_dashes"  # the tokens after "--" (passthrough commands only)
CONFIG_META = "pitwatch.config"            # the ConfigFile read, or None


def unreachable_store(ctx: click.Context, exc: Exception) -> None:
    """An ``OSError`` of a command on a lake on an object store the store cannot be asked about
    (its endpoint, region or credentials wrong, the store down): one ``Error:`` line, exit 2,
    not a traceback.  Asked only after a failure, so a command that works pays nothing."""
    from pitwatch.lake import Lake
    from pitwatch.lake.parquet import LakeError

    location = ctx.params.get("lake")
    if not isinstance(exc, OSError) or not isinstance(location, (str, Lake)) or "://" not in str(location):
        return
    try:
        Lake.at(str(location) if isinstance(location, str) else location.address).reach()
    except LakeError as unreachable:
        raise UserError(str(unreachable)) from None


class CommandError(click.ClickException):
    """pitwatch's ``Error: …`` line: a message that may quote the input (a file name, an id, a
    line) shows its control characters escaped (``\x1b``, ``\x0a``), so it stays one line and
    cannot drive the terminal (:func:`pitwatch.cli.render.visible`)."""

    def format_message(self) -> str:
        from pitwatch.cli.render import visible

        return visible(self.message)


class UserError(CommandError):
    """A user's mistake (bad option, file, statement or parameter): ``Error: …``, exit 2."""

    exit_code = exits.USAGE


class Incomplete(CommandError):
    """The command did not complete (failed, interrupted, timed out): ``Error: …``, exit 3."""

    exit_code = exits.INCOMPLETE


class NotIntact(CommandError):
    """The lake's evidence does not read as pitwatch wrote it (a chained checkpoint changed, a
    commit gone): ``Error: …``, exit 5, as ``pitwatch verify`` would."""

    exit_code = exits.NOT_INTACT


def raise_not_intact(exc: Exception) -> None:
    """:class:`NotIntact` for an error of the lake's log (:class:`pitwatch.lake.delta_log.LogError`;
    its module is loaded whenever one can have been raised)."""
    log_error = getattr(sys.modules.get("pitwatch.lake.delta_log"), "LogError", None)
    if log_error is not None and isinstance(exc, log_error):
        raise NotIntact(str(exc)) from None


class Interrupted(KeyboardInterrupt):
    """SIGINT or SIGTERM arrived: the command stops where it is (a ``KeyboardInterrupt``, so that
    every ``finally`` runs and Beam tears its runner down as for Ctrl-C)."""

    def __init__(self, signal_name: str):
        super().__init__(signal_name)
        self.signal_name = signal_name


def signal_name(exc: BaseException) -> str:
    """SIGINT or SIGTERM (Beam re-raises an exception from a step with its label added to the text)."""
    name = str(getattr(exc, "signal_name", "") or "SIGINT").split()[0]
    return name if name in ("SIGINT", "SIGTERM") else "SIGINT"


ENDS_WITHIN_AFTER_INTERRUPT = 20.0     # seconds
_interrupted = threading.Event()        # a signal interrupted the command this process ran


def end_after_interrupt(seconds: float | None = None) -> None:
    """After a command a signal interrupted (its ``Error: …`` line printed, its run record
    written, its lock released): the process ends within ``seconds``.

    The interpreter's exit waits for every non-daemon thread and ``atexit`` handler.  An
    interrupt can leave a library's thread waiting for work that will never come (seen once in
    CI: ``pitwatch run`` printed its ``Error: interrupted`` line and did not end in 120 s; Beam's
    multi-process runner has the same known fault, apache/beam#19674).  A daemon timer
    gives the normal exit ``seconds``; then it prints every thread's stack to stderr (what
    held the process, for a bug report) and ends it with exit 3, as the command said.
    Nothing is left to write by then: whatever the command does on an interrupt is done
    before its error is printed.  A command not interrupted arms nothing.
    """
    if not _interrupted.is_set():
        return
    if seconds is None:
        seconds = ENDS_WITHIN_AFTER_INTERRUPT

    def end() -> None:
        sys.stderr.write(f"pitwatch: the process had not ended {seconds:g} s after the interrupted command; "
                         "ending it (exit 3). What held it:\n")
        sys.stderr.flush()
        faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
        os._exit(exits.INCOMPLETE)

    timer = threading.Timer(seconds, end)
    timer.daemon = True
    timer.start()


@contextlib.contextmanager
def signals_interrupt():
    """While the command runs, SIGTERM and SIGINT raise :class:`Interrupted` in the main thread."""
    def handler(signum, _frame):
        _interrupted.set()
        raise Interrupted(signal.Signals(signum).name)

    try:
        before = {s: signal.signal(s, handler) for s in (signal.SIGTERM, signal.SIGINT)}
    except ValueError:      # not the main thread (an embedding application): leave its handlers alone
        yield
        return
    try:
        yield
    finally:
        for s, h in before.items():
            signal.signal(s, h)


def no_such_option(name: str, known) -> str:
    return f"no such option {name}{cfg.suggestion(name, known)}"


def option_names(command: click.Command) -> list[str]:
    return [o for p in command.params if isinstance(p, click.Option) for o in p.opts + p.secondary_opts
            if o.startswith("--")]


def _config_option() -> click.Option:
    return click.Option(
        ["--config"], metavar="FILE", envvar=cfg.CONFIG_ENV, expose_value=False,
        help=f"Settings file (pitwatch.toml; or ${cfg.CONFIG_ENV}); flags override it. "
             "See: pitwatch config show.")


class StrictCommand(click.Command):
    """A pitwatch command: strict options, ``--config``, the exit codes in ``--help``, signals."""

    passthrough_after_dashes = False   # `run`: keep what follows "--" for Beam

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.params.append(_config_option())
        for p in self.params:
            setting = cfg.BY_PARAM.get(p.name)
            if isinstance(p, click.Option) and setting is not None and p.envvar is None:
                p.envvar = setting.envvar

    def parse_args(self, ctx, args):
        args = list(args)
        ctx.meta[COMMAND_META] = shlex.join(["pitwatch", *_names(ctx), *cfg.redacted_args(args)])
        after: list[str] = []
        if self.passthrough_after_dashes and "--" in args:
            cut = args.index("--")
            args, after = args[:cut], args[cut + 1:]
        ctx.meta[AFTER_DASHES_META] = after
        ctx.meta[CONFIG_META] = None
        if not ctx.resilient_parsing and not ({"-h", "--help"} & set(args)):
            self._apply_config(ctx, args)
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as exc:
            raise UserError(no_such_option(exc.option_name, option_names(self))) from None

    def _apply_config(self, ctx, args: list[str]) -> None:
        path, _origin = cfg.config_path(_flag_value(args, "--config"))
        if path is None:
            return
        try:
            loaded = cfg.load(path)
        except cfg.ConfigError as exc:
            raise UserError(str(exc)) from None
        ctx.meta[CONFIG_META] = loaded
        cfg.apply_store(loaded)      # [store] as the AWS variables, before any library reads them
        mine = {p.name for p in self.params}
        defaults = {cfg.SETTINGS[k].param: v for k, v in loaded.values.items() if cfg.SETTINGS[k].param in mine}
        ctx.default_map = {**(ctx.default_map or {}), **defaults}

    def invoke(self, ctx):
        ctx.meta[SETTINGS_META] = effective_settings(ctx)
        with signals_interrupt():
            try:
                return super().invoke(ctx)
            except KeyboardInterrupt as exc:
                raise Incomplete(f"interrupted by {signal_name(exc)}: the command did not complete") from None
            except (click.ClickException, click.exceptions.Exit, click.Abort):
                raise
            except Exception as exc:   # a fault of pitwatch or of the machine, not of the user: not 1 (findings)
                raise_not_intact(exc)
                unreachable_store(ctx, exc)
                import traceback

                traceback.print_exc(file=sys.stderr)
                raise Incomplete(f"{type(exc).__name__}: {exc} (the command did not complete; "
                                 "the traceback above is for a bug report)") from None

    def format_epilog(self, ctx, formatter):
        super().format_epilog(ctx, formatter)
        format_exit_codes(formatter)


class StrictGroup(click.Group):
    """A group of pitwatch commands: a mistyped option of the group itself is exit 2 with a suggestion;
    a process whose command a signal interrupted ends within a bound (:func:`end_after_interrupt`)."""

    def main(self, *args, **kwargs):
        try:
            return super().main(*args, **kwargs)
        finally:
            end_after_interrupt()

    def parse_args(self, ctx, args):
        try:
            return super().parse_args(ctx, args)
        except click.NoSuchOption as exc:
            raise UserError(no_such_option(exc.option_name, option_names(self))) from None

    def format_epilog(self, ctx, formatter):
        super().format_epilog(ctx, formatter)
        format_exit_codes(formatter)


def format_exit_codes(formatter) -> None:
    """The exit-code table, one shared snippet at the end of every ``--help``."""
    with formatter.section("Exit codes"):
        formatter.write_dl([(str(code), meaning) for code, meaning in exits.TABLE])


def _names(ctx) -> list[str]:
    names = []
    while ctx.parent is not None:
        names.append(ctx.info_name)
        ctx = ctx.parent
    return names[::-1]


def _flag_value(args: list[str], flag: str) -> str | None:
    value = None
    for i, tok in enumerate(args):
        if tok == flag and i + 1 < len(args):
            value = args[i + 1]
        elif tok.startswith(flag + "="):
            value = tok.split("=", 1)[1]
    return value


def effective_settings(ctx) -> dict:
    """``{key: {"value": v, "origin": "flag" | "environment X" | "file P (sha256 H)" | "default"}}``
    for every setting of :data:`pitwatch.config.SETTINGS` this command has, and the config file."""
    from click.core import ParameterSource

    loaded = ctx.meta.get(CONFIG_META)
    out = {}
    for p in ctx.command.params:
        setting = cfg.BY_PARAM.get(p.name)
        if setting is None or p.name not in ctx.params:
            continue
        source = ctx.get_parameter_source(p.name)
        origin = {
            ParameterSource.COMMANDLINE: "flag",
            ParameterSource.ENVIRONMENT: f"environment {setting.envvar}",
            ParameterSource.DEFAULT_MAP: loaded.origin if loaded else "file",
        }.get(source, "default")
        out[setting.key] = {"value": cfg.plain(ctx.params[p.name]), "origin": origin}
    if loaded is not None:
        out["config"] = {"value": loaded.path, "origin": _config_origin(ctx), "sha256": loaded.sha256}
    return out


def _config_origin(ctx) -> str:
    from click.core import ParameterSource

    source = ctx.get_parameter_source("config")
    return "flag" if source == ParameterSource.COMMANDLINE else f"environment {cfg.CONFIG_ENV}"


def setting_option(key: str, **kwargs):
    """The click option of a setting of :data:`pitwatch.config.SETTINGS` (name, help, default, choices)."""
    s = cfg.SETTINGS[key]
    kwargs.setdefault("help", s.help)
    kwargs.setdefault("envvar", s.envvar)
    if s.default is not None:
        kwargs.setdefault("default", s.default)
        kwargs.setdefault("show_default", True)
    if s.choices:
        kwargs.setdefault("type", click.Choice(s.choices))
    kwargs.setdefault("metavar", {"path": "DIR", "time": "HH:MM", "text": "ZONE"}.get(s.kind) if not s.choices else None)
    return click.option(s.option, s.param, **kwargs)


lake_option = click.option(
    "--lake", required=True, metavar="DIR", envvar=cfg.SETTINGS["lake"].envvar,
    help=cfg.SETTINGS["lake"].help,
)


def user_errors(fn):
    """Turn the library's user-error exceptions into one ``Error: …`` line, exit 2."""
    from pitwatch.inputs.files import InputError
    from pitwatch.lake.parquet import LakeError

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except (InputError, LakeError, cfg.ConfigError, ValueError) as exc:
            raise_not_intact(exc)
            raise UserError(str(exc)) from None
        except PermissionError as exc:
            raise UserError(f"permission denied: {exc.filename or exc}") from None
        except FileNotFoundError as exc:
            raise UserError(f"no such file: {exc.filename or exc}") from None

    return wrapper


class _UtcFormatter(logging.Formatter):
    """``2026-11-29T06:15:02.123Z pitwatch: …``: UTC, to the millisecond, sortable; one line per
    record, whatever it quotes: the message's control characters are escaped (a file name holding
    a newline cannot forge a line, an escape sequence cannot drive the terminal). A traceback (the
    log file's) follows its line as Python writes it."""

    def formatTime(self, record, datefmt=None):
        return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created)) + f".{int(record.msecs):03d}Z"

    def formatMessage(self, record) -> str:
        from pitwatch.cli.render import visible

        record.message = visible(record.message)
        return super().formatMessage(record)


STDERR_FORMAT = "%(asctime)s pitwatch: %(message)s"
FILE_FORMAT = "%(asctime)s %(levelname)s pitwatch[%(process)d]: %(message)s"


def setup_logging(quiet: bool, log_file: str | None = None, verbose: bool = False) -> None:
    """pitwatch's progress goes to stderr (unless ``quiet``; one line per phase, and the steps' line
    per file, table and partition too when ``verbose``) and to ``log_file`` (appended, every line,
    with the level, the process id and the tracebacks of failures); Beam's own chatter is kept to
    errors."""
    logging.getLogger().setLevel(logging.ERROR)
    log = logging.getLogger("pitwatch")
    for h in log.handlers[:]:
        log.removeHandler(h)
        if isinstance(h, logging.FileHandler):
            h.close()
    log.setLevel(logging.DEBUG if verbose and not quiet else logging.INFO)
    if not quiet:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(_UtcFormatter(STDERR_FORMAT))
        handler.setLevel(logging.DEBUG if verbose else logging.INFO)
        log.addHandler(handler)
    if log_file:
        try:
            folder = os.path.dirname(os.path.abspath(log_file))
            os.makedirs(folder, exist_ok=True)
            to_file = logging.FileHandler(log_file, encoding="utf-8")
        except OSError as exc:
            raise UserError(f"cannot write log file {log_file}: {exc.strerror or exc}") from None
        to_file.setFormatter(_UtcFormatter(FILE_FORMAT))
        to_file.setLevel(logging.DEBUG)
        log.addHandler(to_file)
        log.setLevel(logging.DEBUG)
    log.propagate = False
    _library_errors_to(log.handlers[-1] if log_file else None)


def _library_errors_to(handler: logging.Handler | None) -> None:
    """The libraries' own log records (Beam logs a failing step's traceback at ERROR) reach the
    root logger: the operator gets pitwatch's one ``Error:`` line on stderr, the log file (if any)
    gets the libraries' account of it.  Handled at the root, so no library logger is touched."""
    root = logging.getLogger()
    for h in root.handlers[:]:
        if getattr(h, "_pitwatch", False):
            root.removeHandler(h)
    root.addHandler(_Relay(handler))


class _Relay(logging.Handler):
    """pitwatch's handler at the root (:func:`_library_errors_to`): the ERROR records it gets go to ``to``
    (the same file and format), or nowhere when ``to`` is None (a handler, so no "last resort" print)."""

    _pitwatch = True        # found by this mark, not by class: a relay of an earlier load of this module too

    def __init__(self, to: logging.Handler | None) -> None:
        super().__init__(logging.ERROR)
        self.to = to

    def emit(self, record: logging.LogRecord) -> None:
        if self.to is not None:
            self.to.emit(record)
