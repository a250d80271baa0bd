"""``pitwatch.toml``: the settings an operator writes once, and where each effective value came from.

One table, :data:`SETTINGS`, names every key a config file may hold, the
command-line option it stands for and the environment variable that sets it
(a later issue adds its keys there and nowhere else).  A command reads the
file named by ``--config FILE`` or, failing that, ``PITWATCH_CONFIG``; there
is no search of the working folder, so a scheduled run reads exactly the file
its unit names.  The order of precedence is click's: a flag, then the
environment variable, then the file, then the default.

Example::

    # /etc/pitwatch/pitwatch.toml
    lake = "/data/lake"
    inbox = "/data/inbox"
    timezone = "America/Puerto_Rico"
    cutoff = "06:00"
    fail_on = "critical"
    log_file = "/var/log/pitwatch/pitwatch.log"
    anchor = "/worm/pitwatch/anchor.jsonl"
    anchor_key = "/etc/pitwatch/anchor.key"

Decisions (the spec is silent):

* keys are flat, ``snake_case`` (``fail_on``); a key pitwatch does not know
  is an error with the nearest known key suggested, exactly as a mistyped
  option is: a typo must never silently fall back to a default;
* a relative path in the file (``lake``, ``inbox``, ``log_file``, ``anchor``, ``anchor_key``) is taken
  from the file's own folder, not from wherever the scheduler starts;
* ``cutoff`` may be written as text (``"06:00"``) or as a TOML local time
  (``06:00:00``);
* a key that does not apply to a command (``inbox`` for ``pitwatch sql``) is
  ignored by that command, so one file serves every command.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import difflib
import hashlib
import os
import tomllib

CONFIG_ENV = "PITWATCH_CONFIG"
MAX_BYTES = 64 * 1024          # a settings file is a few lines; anything larger is the wrong file
SEVERITIES = ("info", "minor", "major", "critical")


class ConfigError(ValueError):
    """The config file cannot be used (missing, not TOML, an unknown key, a wrong value)."""


@dataclasses.dataclass(frozen=True)
class Setting:
    key: str                 # in pitwatch.toml
    param: str               # the click parameter name of the commands that take it
    kind: str                # "path", "text", "time" or "choice"
    help: str
    default: str | None = None
    choices: tuple[str, ...] = ()
    flag: str | None = None  # the option, when it is not the key's name (anchor_key is --key)

    @property
    def option(self) -> str:
        return self.flag or "--" + self.key.replace("_", "-")

    @property
    def envvar(self) -> str:
        return "PITWATCH_" + self.key.upper()


SETTINGS: dict[str, Setting] = {s.key: s for s in (
    Setting("lake", "lake", "path", "The lake folder (local path, or gs:// / s3:// URI)."),
    Setting("inbox", "inbox", "path", "With --day: folder with one sub-folder of files per gaming day."),
    Setting("timezone", "timezone", "text", "Time zone of the gaming day (IANA name, e.g. America/Puerto_Rico).",
            default="UTC"),
    Setting("cutoff", "cutoff", "time", "Local time at which a gaming day ends.", default="06:00"),
    Setting("fail_on", "fail_on", "choice", "Exit with code 1 when findings of this severity or higher were written.",
            choices=SEVERITIES),
    Setting("log_file", "log_file", "path", "Also append the timestamped log lines to this file."),
    Setting("devices", "devices", "path", "The device registry (devices.csv: device_id,source,table_id,from_day,"
            "to_day) for SHOE_SILENT and UNKNOWN_DEVICE."),
    Setting("anchor", "anchor", "path", "Append the lake's chain head to this file after the command (outside the "
            "lake: WORM storage; docs/verify.md); verify checks the lake against it."),
    Setting("anchor_key", "anchor_key", "path", "Sign the anchor's entries with HMAC-SHA-256 with the key in this file "
            "(outside the lake); verify checks the signatures with it.", flag="--key"),
)}
BY_PARAM = {s.param: s for s in SETTINGS.values()}


@dataclasses.dataclass(frozen=True)
class ConfigFile:
    path: str                # absolute
    sha256: str
    values: dict             # key -> value, checked and normalised

    @property
    def origin(self) -> str:
        return f"file {self.path} (sha256 {self.sha256})"


def suggestion(word: str, known) -> str:
    """`` (did you mean X?)`` for the nearest of ``known``, or ``""``."""
    close = difflib.get_close_matches(word, sorted(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]}?)" if close else ""


def config_path(flag: str | None, environ=os.environ) -> tuple[str | None, str | None]:
    """The config file to read and where its name came from (``--config`` or the environment)."""
    if flag:
        return flag, "flag"
    if environ.get(CONFIG_ENV):
        return environ[CONFIG_ENV], f"environment {CONFIG_ENV}"
    return None, None


def load(path: str) -> ConfigFile:
    """Read and check a ``pitwatch.toml``. Raises ConfigError with one line that names the problem."""
    try:
        if not os.path.isfile(path) and os.path.exists(path) and not os.path.isdir(path):
            raise ConfigError(f"config file {path} is not a regular file")
        with open(path, "rb") as f:
            body = f.read(MAX_BYTES + 1)
    except FileNotFoundError:
        raise ConfigError(f"config file {path} does not exist") from None
    except IsADirectoryError:
        raise ConfigError(f"config file {path} is a folder") from None
    except PermissionError:
        raise ConfigError(f"config file {path}: permission denied") from None
    if len(body) > MAX_BYTES:
        raise ConfigError(f"config file {path} is larger than {MAX_BYTES // 1024} KB: not a pitwatch.toml")
    try:
        data = tomllib.loads(body.decode("utf-8"))
    except UnicodeDecodeError:
        raise ConfigError(f"config file {path} is not UTF-8 text") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"config file {path} is not valid TOML: {exc}") from None
    folder = os.path.dirname(os.path.abspath(path))
    values = {}
    for key, value in data.items():
        setting = SETTINGS.get(key)
        if setting is None:
            raise ConfigError(f"config file {path}: unknown key {key!r}{suggestion(key, SETTINGS)}; "
                              f"keys: {', '.join(SETTINGS)}")
        values[key] = _checked(path, folder, setting, value)
    return ConfigFile(os.path.abspath(path), hashlib.sha256(body).hexdigest(), values)


def _checked(path: str, folder: str, setting: Setting, value):
    where = f"config file {path}: {setting.key}"
    if setting.kind == "time" and isinstance(value, _dt.time):
        if value.second or value.microsecond:
            raise ConfigError(f"{where} must be a time HH:MM, got {value.isoformat()}")
        return value.strftime("%H:%M")
    if not isinstance(value, str):
        raise ConfigError(f"{where} must be text in quotes, got {type(value).__name__} {value!r}")
    if not value.strip():
        raise ConfigError(f"{where} is empty")
    if setting.kind == "choice" and value not in setting.choices:
        raise ConfigError(f"{where} must be one of {', '.join(setting.choices)}, got {value!r}"
                          f"{suggestion(value, setting.choices)}")
    if setting.kind == "path" and "://" not in value:
        return os.path.normpath(os.path.join(folder, os.path.expanduser(value)))
    return value


def plain(value):
    """A setting's value as it is recorded (JSON-ready)."""
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)
