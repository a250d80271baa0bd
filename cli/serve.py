"""``pitwatch serve``: the surveillance console, a web application over the lake (:mod:`pitwatch.console`)."""
from __future__ import annotations

import errno
import ipaddress
import logging
import os
import socket

import click

from pitwatch.cli.common import StrictCommand, UserError, lake_option, user_errors
from pitwatch.cli.users import users_option, users_path

log = logging.getLogger("pitwatch")


def _bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound before the server starts: a port in use is one Error line, exit 2."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as exc:
        raise UserError(f"--host {host}: {exc.strerror}") from None
    family, kind, proto, _name, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
    except OSError as exc:
        sock.close()
        why = "is in use" if exc.errno == errno.EADDRINUSE else f"cannot be used ({exc.strerror})"
        raise UserError(f"{host}:{port} {why}: give another --port") from None
    sock.listen(128)
    sock.set_inheritable(True)
    return sock


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


@click.command(cls=StrictCommand, epilog="""\b
Examples:
  pitwatch users add ana --role reviewer --lake lake
  pitwatch serve --lake lake
  (then open http://127.0.0.1:8470/ and log in as ana)
  pitwatch serve --lake /data/lake --alerts-file /var/log/pitwatch/alerts.jsonl --port 8080
  pitwatch serve --lake s3://casino-lake/floor --users /etc/pitwatch/console-users.json
""")
@lake_option
@click.option("--host", default="127.0.0.1", show_default=True, metavar="ADDRESS",
              help="The address to listen on (the loopback by default: put a TLS proxy in front for others).")
@click.option("--port", default=8470, show_default=True, type=click.IntRange(1, 65535), help="The port to listen on.")
@users_option
@click.option("--alerts-file", "alerts_files", multiple=True, metavar="PATH",
              help="Also follow this alerts file of pitwatch watch (--alerts-file) on the Live page (repeatable).")
@click.option("--no-sound", is_flag=True, help="No sound option for critical alerts on the Live page.")
@user_errors
def serve(lake, host, port, users_file, alerts_files, no_sound):
    """Serve the surveillance console over the lake: the live alerts, the
    findings and their rounds, packs, dealers and tables, runs and health.

    Log in as a user of the users file (pitwatch users add); a viewer reads,
    a reviewer also records reviews, an admin also runs verify.  The session
    secret is kept beside the users file (created 0600 on first use).  The
    console reads the lake as pitwatch sql does (the last successful run's
    tables, no file access) and loads nothing from another host.  Stops on
    Ctrl-C or SIGTERM.
    """
    import uvicorn

    from pitwatch.console import auth
    from pitwatch.console.app import create_app
    from pitwatch.lake import Lake
    from pitwatch.lake import settings as lake_settings
    from pitwatch.queries.lake_views import require_lake

    at = Lake.at(lake)
    require_lake(at)            # a folder, or a key prefix on an object store: LakeQueryError, exit 2
    if not lake_settings.is_lake(at):
        raise UserError(f"{lake} is not a pitwatch lake: pitwatch run writes one first")
    path = users_path(lake, users_file)
    if not auth.read_users(path):
        raise UserError(f"no users in {path}: add one first (pitwatch users add NAME --role admin --users {path})")
    for f in alerts_files:
        if not os.path.isfile(f):
            raise UserError(f"--alerts-file {f}: no such file (pitwatch watch --alerts-file {f} writes it)")
    secret = auth.load_secret(path)
    app = create_app(at, path, secret, alerts_files=tuple(alerts_files), sound=not no_sound)
    sock = _bind(host, port)
    if not _loopback(host):
        log.warning("pitwatch serve: listening on %s, not the loopback: the console speaks plain HTTP; "
                    "put a TLS proxy in front of it", host)
    shown = f"[{host}]" if ":" in host else host
    click.echo(f"pitwatch console: http://{shown}:{port}/ (lake {lake}, users {path}); Ctrl-C stops it", err=True)
    config = uvicorn.Config(app, log_level="warning", access_log=False, timeout_graceful_shutdown=2,
                            lifespan="off", proxy_headers=False)
    server = uvicorn.Server(config)
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:    # uvicorn stops on SIGINT/SIGTERM and raises the signal again: the normal stop
        pass
    click.echo("pitwatch console: stopped", err=True)
