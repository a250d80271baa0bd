"""``pitwatch.toml``: the settings an operator writes once, and where each effective value came from.

Also the base of two things defined once for every layer: :data:`SEVERITIES` (most severe first;
``fail_on`` offers them least severe first) and :func:`read_small`, the one reader of the small files
an operator names (this file, the anchor's key, the device registry: regular files only, size-limited).

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
    devices = "/data/inbox/devices.csv"  # run, watch: the device registry
    anchor = "/worm/pitwatch/anchor.jsonl"
    anchor_key = "/etc/pitwatch/anchor.key"
    lock_timeout = "1h"                  # run, vacuum: wait this long for another writer, then exit 4
    retention_days = 2555                # vacuum: keep files a run replaced for 7 years
    max_rejects_in_a_row = 10000         # run: a file of nothing but rejected lines is read no further
    legal_holds = ["2026-11-28", "2026-11-01..2026-11-07"]   # vacuum: these days' files are kept

    [display.tables]                     # run: shown in another zone than the lake's (not the gaming day)
    "CMB-01" = "America/New_York"

    [store]                              # an s3:// lake: the standard AWS variables win over it
    endpoint = "https://minio.casino.local:9000"
    region = "us-east-1"

Decisions (the spec is silent):

* keys are flat, ``snake_case`` (``fail_on``); a key pitwatch does not know
  is an error with the nearest known key suggested, exactly as a mistyped
  option is: a typo must never silently fall back to a default;
* a relative path in the file (``lake``, ``inbox``, ``log_file``, ``anchor``, ``anchor_key``) is taken
  from the file's own folder, not from wherever the scheduler starts;
* ``cutoff`` may be written as text (``"06:00"``) or as a TOML local time
  (``06:00:00``);
* a key that does not apply to a command (``inbox`` for ``pitwatch sql``) is
  ignored by that command, so one file serves every command;
* ``lock_timeout`` is seconds (a TOML number) or text with a unit (``"90s"``,
  ``"5m"``, ``"1h"``, ``"2d"``); ``retention_days`` is a TOML integer (text
  such as ``"7"`` is refused: a number in quotes is too often a typo for
  something else); ``legal_holds`` is a TOML list of days ``"YYYY-MM-DD"`` and
  inclusive ranges ``"YYYY-MM-DD..YYYY-MM-DD"``; a held day's files are never
  removed by ``pitwatch vacuum``.  Legal holds have no environment variable
  and no flag that replaces them (``vacuum --hold`` only adds to them): a
  forgotten variable must never lift a hold.
* ``[display.tables]`` (the one key that is a TOML table, written last in the file: a key after it
  would belong to it) maps table ids to IANA zones: how those tables' times are shown to people,
  never how their gaming days are filed.  ``pitwatch run`` records it in the lake
  (:mod:`pitwatch.lake.settings`), so every reader shows the same; a run whose file has no
  ``[display.tables]`` keeps the lake's, an empty one clears them.  File only, like ``legal_holds``.
* ``[store]`` (:data:`STORE_KEYS`) stands for the standard AWS variables every library reads
  (pyarrow, delta-rs, obstore, Beam's workers): :func:`apply_store` puts the file's values into the
  command's environment where it has none of its own (a variable set wins; the credentials are taken
  whole from one place, never a key id from one and a secret from the other).  A file holding a
  secret (``secret_access_key``, ``session_token``) that its group or others can read is refused
  (ssh's rule for a private key: a secret in a file others read is no secret); without a secret it
  may be readable by all.  File only, like ``legal_holds``: the variables are already its override.
"""
from __future__ import annotations

import dataclasses
import datetime as _dt
import difflib
import errno
import hashlib
import os
import re
import stat
import tomllib
import zoneinfo

CONFIG_ENV = "PITWATCH_CONFIG"
SEVERITIES = ("critical", "major", "minor", "info")   # most severe first; the one list, derived everywhere
MAX_BYTES = 64 * 1024          # a settings file is a few lines; anything larger is the wrong file
MAX_DAYS = 36_500              # retention_days: a century is the longest that means anything
MAX_LINES = 1_000_000_000      # max_rejects_in_a_row


def at_or_above(severity: str) -> tuple[str, ...]:
    """The severities as severe as ``severity`` or more: ``at_or_above("major")`` is critical, major."""
    return SEVERITIES[:SEVERITIES.index(severity) + 1]


# --- times shown to people: one zone per table ------------------------------------------------------
def check_zone(name) -> str:
    """``name`` when it is an IANA time zone this machine knows (``America/Puerto_Rico``, ``UTC``);
    ValueError with one line naming it otherwise (a typo must never fall back to UTC)."""
    if not isinstance(name, str) or not name.strip() or len(name) > 64:
        raise ValueError(f"a time zone must be an IANA name such as America/Puerto_Rico, got {str(name)[:40]!r}")
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        raise ValueError(f"unknown time zone {name[:40]!r}: give an IANA name such as America/Puerto_Rico "
                         "or UTC") from None
    return name


def display_time(ts: _dt.datetime, zone: str) -> str:
    """``ts`` as people read it at a table: ``2026-11-28 17:47:21 AST`` -- the wall clock of the IANA
    ``zone`` (:func:`check_zone`), to the second (the fraction dropped, never rounded up into the next
    second), and the zone named by its abbreviation, or by its offset where the zone has none
    (``-03``).  A naive ``ts`` is UTC, as every time the lake keeps is."""
    if ts.tzinfo is None:
        ts = ts.replace(tzinfo=_dt.timezone.utc)
    local = ts.astimezone(zoneinfo.ZoneInfo(check_zone(zone)))
    return f"{local:%Y-%m-%d %H:%M:%S} {local.tzname()}"


# --- small files an operator names: this settings file, the anchor's key, the device registry ---------
class NotRegularFile(OSError):
    """A path that is not a regular file (FIFO, device, socket, folder), found when opening it."""


def kind_of(mode: int) -> str | None:
    """What a file of ``st_mode`` is when it is not a regular file (None: it is one)."""
    if stat.S_ISREG(mode):
        return None
    for test, what in ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder")):
        if test(mode):
            return what
    return "not a regular file"


def open_regular(path: str):
    """A local regular file opened for reading its bytes, never blocking on the open (the inputs'
    ``open_stored``, :mod:`pitwatch.inputs.stored`).

    The path is looked at first (``stat``: a device is never opened), then opened with
    ``O_NONBLOCK`` (a FIFO would block an open without it until a writer comes) and its
    descriptor checked with ``fstat``: a file swapped for a FIFO or a device after the check is
    refused too.  Raises :class:`NotRegularFile` (an ``OSError``) naming what it is.
    """
    try:
        what = kind_of(os.stat(path).st_mode)
    except OSError:
        what = None             # os.open says what is wrong
    if what is not None:
        raise NotRegularFile(errno.EINVAL, f"not a regular file: {what}", path)
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    try:
        what = kind_of(os.fstat(fd).st_mode)
        if what is not None:
            raise NotRegularFile(errno.EINVAL, f"not a regular file: {what}", path)
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_small(path: str, limit: int) -> bytes:
    """At most ``limit + 1`` bytes of a small local file an operator names (this settings file, the
    anchor's key, the device registry): more than ``limit`` says the file is larger than it should be.

    The one reader of them: only a regular file is read (:func:`open_regular`: a FIFO or a device is
    refused, never waited on nor read without end).  Raises :class:`FileNotFoundError`,
    :class:`IsADirectoryError` (a folder), :class:`PermissionError` and :class:`NotRegularFile` (its
    ``strerror`` says what it is: ``not a regular file: a FIFO (named pipe)``); each caller words them.
    """
    if os.path.isdir(path):
        raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), path)
    with open_regular(path) as f:
        return f.read(limit + 1)


class ConfigError(ValueError):
    """The config file cannot be used (missing, not TOML, an unknown key, a wrong value)."""


@dataclasses.dataclass(frozen=True)
class Setting:
    key: str                 # in pitwatch.toml
    param: str               # the click parameter name of the commands that take it
    kind: str                # "path", "text", "time", "choice", "duration", "count", "lines" or "days"
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
            choices=tuple(reversed(SEVERITIES))),   # least severe first
    Setting("log_file", "log_file", "path", "Also append the timestamped log lines to this file."),
    Setting("devices", "devices", "path", "The device registry (devices.csv: device_id,source,table_id,from_day,"
            "to_day) for SHOE_SILENT and UNKNOWN_DEVICE."),
    Setting("anchor", "anchor", "path", "Append the lake's chain head to this file after the command (outside the "
            "lake: WORM storage; docs/verify.md); verify checks the lake against it."),
    Setting("anchor_key", "anchor_key", "path", "Sign the anchor's entries with HMAC-SHA-256 with the key in this file "
            "(outside the lake); verify checks the signatures with it.", flag="--key"),
    Setting("lock_timeout", "lock_timeout", "duration", "How long to wait for another writer's lock on the lake "
            "(seconds, or 90s, 5m, 1h), then exit 4.", default="1h"),
    Setting("retention_days", "retention_days", "count", "vacuum: files a later run replaced are removed once they "
            "have been out of the tables this many days (2555 = 7 years).", default="2555"),
    Setting("max_rejects_in_a_row", "max_rejects_in_a_row", "lines", "run: an input file whose last this many "
            "lines in a row were all rejected is read no further (an INPUT_DAMAGED finding says so); 0: no limit.",
            default="10000"),
    Setting("legal_holds", "legal_holds", "days", "vacuum: gaming days (YYYY-MM-DD or FIRST..LAST) whose files are "
            "never removed; config file only (vacuum --hold adds days)."),
    Setting("display", "display_tables", "zones", "run: the tables whose times are shown in another zone than the "
            "lake's ([display.tables] \"CMB-01\" = \"America/Puerto_Rico\"), recorded in the lake; config file only; "
            "gaming days keep the lake's timezone and cutoff."),
    Setting("store", "store", "store", "The object store of an s3:// lake: [store] endpoint, region, access_key_id, "
            "secret_access_key, session_token, allow_http; config file only: the standard AWS variables "
            "(AWS_ENDPOINT_URL, AWS_REGION, AWS_ACCESS_KEY_ID, …) win over it."),
)}
FILE_ONLY = ("days", "zones", "store")    # the kinds with no flag and no PITWATCH_ variable

# [store]: each key and the standard variable it stands for (pyarrow, delta-rs, obstore and Beam's workers
# all read these); the command puts the file's values there before any library reads them (apply_store)
STORE_KEYS = {
    "endpoint": "AWS_ENDPOINT_URL",
    "region": "AWS_REGION",
    "access_key_id": "AWS_ACCESS_KEY_ID",
    "secret_access_key": "AWS_SECRET_ACCESS_KEY",
    "session_token": "AWS_SESSION_TOKEN",
    "allow_http": "AWS_ALLOW_HTTP",
}
STORE_CREDENTIALS = ("access_key_id", "secret_access_key", "session_token")
STORE_SECRETS = ("secret_access_key", "session_token")
# the environment's own credentials (any one of these): the file's are not used, not even in part
ENVIRONMENT_CREDENTIALS = ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE",
                           "AWS_WEB_IDENTITY_TOKEN_FILE")
ENVIRONMENT_ENDPOINTS = ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ENDPOINT")
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
        body = read_small(path, MAX_BYTES)
    except NotRegularFile:
        raise ConfigError(f"config file {path} is not a regular file") from None
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
    secrets = [k for k in STORE_SECRETS if k in values.get("store", {})]
    if secrets:
        mode = os.stat(path).st_mode
        if mode & 0o044:
            raise ConfigError(f"config file {path} holds store.{secrets[0]} and is readable by "
                              f"{'group and others' if mode & 0o004 and mode & 0o040 else 'others' if mode & 0o004 else 'its group'} "
                              f"(mode {stat.S_IMODE(mode):04o}): chmod 600 it, or give the secret in "
                              f"{STORE_KEYS[secrets[0]]} instead")
    return ConfigFile(os.path.abspath(path), hashlib.sha256(body).hexdigest(), values)


def parse_duration(value) -> float:
    """Seconds from ``3600``, ``"90"``, ``"90s"``, ``"5m"``, ``"1h"``, ``"1.5h"``, ``"2d"`` (0 to 366 days).

    Raises ValueError with one line naming the value."""
    import re

    if isinstance(value, bool):
        raise ValueError(f"a duration must be seconds or a number with s, m, h or d, got {value!r}")
    if isinstance(value, (int, float)):
        seconds = float(value)
    else:
        m = re.fullmatch(r"\s*(\d{1,9}(?:\.\d{1,6})?)\s*([smhd]?)\s*", str(value))
        if not m:
            raise ValueError(f"a duration must be seconds or a number with s, m, h or d (90s, 5m, 1h), "
                             f"got {str(value)[:40]!r}")
        seconds = float(m.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[m.group(2)]
    if not (0 <= seconds <= 366 * 86400):
        raise ValueError(f"a duration must be between 0 and 366 days, got {str(value)[:40]!r}")
    return seconds


def parse_day_range(text) -> tuple[_dt.date, _dt.date]:
    """``"2026-11-28"`` or ``"2026-11-01..2026-11-07"`` (inclusive) as (first, last).  ValueError if not."""
    if not isinstance(text, str):
        raise ValueError(f"a held day must be text YYYY-MM-DD or FIRST..LAST, got {type(text).__name__} {text!r}")
    first, sep, last = text.strip().partition("..")
    try:
        a = _dt.date.fromisoformat(first.strip())
        b = _dt.date.fromisoformat(last.strip()) if sep else a
        if len(first.strip()) != 10 or (sep and len(last.strip()) != 10):
            raise ValueError
    except ValueError:
        raise ValueError(f"a held day must be YYYY-MM-DD or FIRST..LAST, got {text[:40]!r}") from None
    if b < a:
        raise ValueError(f"a held range must not end before it starts, got {text[:40]!r}")
    return a, b


def _checked(path: str, folder: str, setting: Setting, value):
    where = f"config file {path}: {setting.key}"
    if setting.kind == "zones":
        return display_tables(where, value)
    if setting.kind == "store":
        return store_settings(where, value)
    if setting.kind == "duration":
        try:
            parse_duration(value)
        except ValueError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        return value
    if setting.kind == "lines":
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_LINES:
            raise ConfigError(f"{where} must be a whole number of lines from 0 to {MAX_LINES:,}, without quotes, got "
                              f"{type(value).__name__} {value!r}")
        return value
    if setting.kind == "count":
        if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= MAX_DAYS:
            raise ConfigError(f"{where} must be a whole number of days from 0 to {MAX_DAYS}, without quotes, got "
                              f"{type(value).__name__} {value!r}")
        return value
    if setting.kind == "days":
        if not isinstance(value, list):
            raise ConfigError(f"{where} must be a list of days, e.g. [\"2026-11-28\", \"2026-11-01..2026-11-07\"], "
                              f"got {type(value).__name__} {value!r}")
        try:
            for item in value:
                parse_day_range(item)
        except ValueError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        return [item.strip() for item in value]
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


def display_tables(where: str, value) -> dict[str, str]:
    """``[display.tables]`` checked: ``{table_id: IANA zone}`` (an empty table clears the lake's overrides)."""
    if not isinstance(value, dict) or set(value) != {"tables"} or not isinstance(value["tables"], dict):
        raise ConfigError(f"{where} must hold one table, [display.tables], of table ids and time zones, e.g. "
                          f"[display.tables] \"CMB-01\" = \"America/Puerto_Rico\"; got {str(value)[:60]}")
    tables = {}
    for table_id, zone in value["tables"].items():
        if not table_id.strip() or len(table_id) > 64 or not table_id.isprintable():
            raise ConfigError(f"{where}.tables: {table_id[:40]!r} is not a table id")
        try:
            tables[table_id] = check_zone(zone)
        except ValueError as exc:
            raise ConfigError(f"{where}.tables.{table_id}: {exc}") from None
    return tables


def store_settings(where: str, value) -> dict:
    """``[store]`` checked: known keys only (a typo is an error, with the nearest key), text values but
    ``allow_http`` (a TOML boolean), an ``http(s)://`` endpoint, the access key id and secret together."""
    if not isinstance(value, dict):
        raise ConfigError(f"{where} must be a table, [store], of {', '.join(STORE_KEYS)}; got {str(value)[:60]}")
    out: dict = {}
    for key, item in value.items():
        if key not in STORE_KEYS:
            raise ConfigError(f"{where}: unknown key {key!r}{suggestion(key, STORE_KEYS)}; keys: {', '.join(STORE_KEYS)}")
        if key == "allow_http":
            if not isinstance(item, bool):
                raise ConfigError(f"{where}.allow_http must be true or false, without quotes, got "
                                  f"{type(item).__name__} {str(item)[:40]!r}")
            out[key] = item
            continue
        if not isinstance(item, str) or not item.strip() or not item.isprintable():
            raise ConfigError(f"{where}.{key} must be text in quotes, one line, not empty"
                              + ("" if key in STORE_SECRETS else f", got {type(item).__name__} {repr(item)[:40]}"))
        if key == "endpoint" and not item.startswith(("https://", "http://")):
            raise ConfigError(f"{where}.endpoint must be a URL https://HOST[:PORT] (or http:// with allow_http = true), "
                              f"got {item[:60]!r}")
        out[key] = item.strip()
    if ("access_key_id" in out) != ("secret_access_key" in out):
        raise ConfigError(f"{where}: access_key_id and secret_access_key go together (give both, or neither "
                          "and let the environment or the machine's role give them)")
    if "session_token" in out and "access_key_id" not in out:
        raise ConfigError(f"{where}: session_token goes with access_key_id and secret_access_key")
    if out.get("endpoint", "").startswith("http://") and out.get("allow_http") is not True:
        raise ConfigError(f"{where}.endpoint is plain http:// ({out['endpoint'][:60]}): say allow_http = true "
                          "if the store is meant to be reached without TLS")
    return out


# An option whose value is a credential (Beam's --s3_secret_access_key, --s3_session_token,
# --s3_access_key_id, a runner's --password=…): its value never reaches a record, a lease or a log.
_SECRET_OPTION = re.compile(r"^--?[\w.-]*(secret|password|passwd|token|access_key|credential)[\w.-]*$", re.I)
REDACTED = "(redacted)"


def redacted_args(args) -> list[str]:
    """``args`` with the value of every option that carries a credential replaced by
    :data:`REDACTED` (``--opt=value`` and ``--opt value`` alike): what the run records keep
    (``command``, ``options``) and the lock's holder names — a chained record cannot be erased, and
    ``pitwatch sql`` reads it.  Credentials belong in the AWS variables or ``[store]``."""
    out: list[str] = []
    hide_next = False
    for a in map(str, args):
        if hide_next:
            out.append(REDACTED)
            hide_next = False
            continue
        name, eq, _value = a.partition("=")
        if _SECRET_OPTION.match(name):
            if eq:
                out.append(f"{name}={REDACTED}")
            else:
                out.append(a)
                hide_next = True
            continue
        out.append(a)
    return out


def apply_store(loaded: ConfigFile | None, environ=os.environ) -> list[str]:
    """Put the ``[store]`` of ``loaded`` into ``environ`` as the standard AWS variables, where the
    environment has none of its own: a variable already set wins (each one; the credentials as a
    whole: one credential variable in the environment and none of the file's is used, so a key id
    is never paired with another's secret).  Called by every command as it reads its config file,
    before any library reads the variables; the names it set."""
    store = (loaded.values.get("store") if loaded is not None else None) or {}
    own_credentials = any(environ.get(n) for n in ENVIRONMENT_CREDENTIALS)
    set_here = []
    for key, item in store.items():
        name = STORE_KEYS[key]
        if key in STORE_CREDENTIALS and own_credentials:
            continue
        if key == "endpoint" and any(environ.get(n) for n in ENVIRONMENT_ENDPOINTS):
            continue
        if environ.get(name):
            continue
        environ[name] = ("true" if item else "false") if isinstance(item, bool) else item
        set_here.append(name)
        if key == "region" and not environ.get("AWS_DEFAULT_REGION"):    # what older SDKs (pyarrow's) read
            environ["AWS_DEFAULT_REGION"] = item
            set_here.append("AWS_DEFAULT_REGION")
    return set_here


def plain(value):
    """A setting's value as it is recorded (JSON-ready)."""
    if isinstance(value, (str, int, float, bool)) or value is None:
        return value
    return str(value)
