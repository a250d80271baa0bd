"""``pitwatch users``: the people who may use the console, and their roles (:mod:`pitwatch.console.auth`)."""
from __future__ import annotations

import sys

import click

from pitwatch.cli.common import StrictCommand, StrictGroup, UserError, user_errors

users_option = click.option("--users", "users_file", metavar="FILE",
                            help="The users file (default: LAKE.users.json beside the --lake folder).")
lake_for_users = click.option("--lake", metavar="DIR", help="The lake whose console the users are of.")


def users_path(lake: str | None, users_file: str | None) -> str:
    """``--users FILE``, else the file beside the ``--lake`` folder; one of them is required."""
    from pitwatch.console.auth import default_users_path

    if users_file:
        return users_file
    if not lake:
        raise UserError("give --lake DIR (the users file is kept beside it) or --users FILE")
    if "://" in lake:
        raise UserError(f"the lake {lake} is on an object store: give the users file with --users FILE")
    return default_users_path(lake)


@click.group(cls=StrictGroup, epilog="""\b
Examples:
  pitwatch users add ana --role reviewer --lake lake
  pitwatch users list --lake lake
""")
def users():
    """The console's users (pitwatch serve): each a name, a role and a password
    kept as its argon2id hash, in a file beside the lake (LAKE.users.json) or
    --users FILE.  Roles: viewer (reads every page), reviewer (also records
    reviews), admin (also runs verify from the console)."""


@users.command("add", cls=StrictCommand, epilog="""\b
Examples:
  pitwatch users add ana --role reviewer --lake /data/lake
  printf '%s\\n' "$PASSWORD" | pitwatch users add ops --role viewer --lake /data/lake --password-stdin
""")
@click.argument("name")
@click.option("--role", required=True, metavar="viewer|reviewer|admin", help="What the user may do.")
@click.option("--password-stdin", is_flag=True, help="Read the password from the first line of stdin (scripts) "
              "instead of asking for it twice.")
@click.option("--replace", is_flag=True, help="Give an existing user this role and a new password.")
@lake_for_users
@users_option
@user_errors
def add(name, role, password_stdin, replace, lake, users_file):
    """Add the user NAME with ROLE to the console's users file (created,
    readable by its owner alone, when there is none).  Asks for the password
    twice (at least 8 characters).  A name, role or password that is refused,
    or a user that exists (without --replace), is exit 2 and the file is not
    changed.  A running console sees the change at its next request: a user
    given a new password is logged out."""
    from pitwatch.console import auth

    path = users_path(lake, users_file)
    auth.check_name(name)
    auth.check_role(role)
    if password_stdin:
        line = sys.stdin.readline(auth.MAX_PASSWORD + 2)
        password = line[:-1] if line.endswith("\n") else line
        if password.endswith("\r"):
            password = password[:-1]
    else:
        try:
            password = click.prompt(f"Password for {name}", hide_input=True, confirmation_prompt=True)
        except click.Abort:         # stdin ended (a script, no terminal) or Ctrl-C: nothing written
            raise UserError("no password given: type it twice at a terminal, or give --password-stdin "
                            "with the password on stdin's first line") from None
    user = auth.add_user(path, name, role, password, replace=replace)
    click.echo(f"{user.name}: {user.role} ({'replaced' if replace else 'added'} in {path})")


@users.command("list", cls=StrictCommand, epilog="""\b
Examples:
  pitwatch users list --lake /data/lake
""")
@lake_for_users
@users_option
@user_errors
def list_(lake, users_file):
    """Print every user of the console and their role (never a password or its hash)."""
    from pitwatch.console import auth

    path = users_path(lake, users_file)
    found = auth.read_users(path)
    if not found:
        raise UserError(f"no users in {path}: pitwatch users add NAME --role admin --users {path}")
    for user in sorted(found.values(), key=lambda u: u.name):
        click.echo(f"{user.name}\t{user.role}")


@users.command("remove", cls=StrictCommand, epilog="""\b
Examples:
  pitwatch users remove ana --lake /data/lake
""")
@click.argument("name")
@lake_for_users
@users_option
@user_errors
def remove(name, lake, users_file):
    """Remove the user NAME: their sessions end at their next request."""
    from pitwatch.console import auth

    path = users_path(lake, users_file)
    auth.remove_user(path, name)
    click.echo(f"{name}: removed from {path}")
