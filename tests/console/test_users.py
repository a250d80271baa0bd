"""``pitwatch users``: the console's users file (argon2id hashes, 0600), and the failed-login limit."""
from __future__ import annotations

import json
import os
import stat
import time

import pytest

from pitwatch.console import auth


def test_users_add_keeps_an_argon2_hash_in_a_file_only_its_owner_reads(tmp_path, pitwatch):
    lake = tmp_path / "lake"
    lake.mkdir()
    r = pitwatch("users", "add", "ana", "--role", "reviewer", "--lake", lake, "--password-stdin",
                 input="correct horse\n")
    assert r.returncode == 0, r.stderr
    path = tmp_path / "lake.users.json"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    (row,) = json.loads(path.read_text())["users"]
    assert row["name"] == "ana" and row["role"] == "reviewer"
    assert row["password_hash"].startswith("$argon2id$") and "correct horse" not in path.read_text()
    user = auth.read_users(str(path))["ana"]
    assert auth.password_matches(user, "correct horse")
    assert not auth.password_matches(user, "correct horsf")


def test_users_add_prompts_twice_for_the_password(tmp_path, pitwatch):
    r = pitwatch("users", "add", "bo", "--role", "viewer", "--users", tmp_path / "u.json",
                 input="password-1\npassword-1\n")
    assert r.returncode == 0, r.stderr
    assert auth.password_matches(auth.read_users(str(tmp_path / "u.json"))["bo"], "password-1")


@pytest.mark.parametrize("stdin", ["", "password-1\n"], ids=["nothing", "once"])
def test_users_add_with_no_password_to_ask_for_is_one_error_line_naming_password_stdin(tmp_path, pitwatch, stdin):
    """Run from a script without a terminal (stdin empty or ending before the confirmation), the
    prompt used to end in click's bare ``Aborted!``, exit 1 (the exit code of findings)."""
    path = tmp_path / "u.json"
    r = pitwatch("users", "add", "bo", "--role", "viewer", "--users", path, input=stdin)
    assert r.returncode == 2, r.stderr
    assert r.stderr.splitlines()[-1].startswith("Error: no password given") and "--password-stdin" in r.stderr
    assert not path.exists()


@pytest.mark.parametrize("args, stdin, said", [
    (["ana", "--role", "boss"], "long enough\n", "role 'boss': one of viewer, reviewer, admin"),
    (["ana", "--role", "viewer"], "short\n", "at least 8"),
    (["../ana", "--role", "viewer"], "long enough\n", "user name '../ana'"),
    (["ana", "--role", "viewer"], "", "at least 8"),
])
def test_users_add_refuses_a_bad_role_name_or_password_with_one_error_line(tmp_path, pitwatch, args, stdin, said):
    path = tmp_path / "u.json"
    r = pitwatch("users", "add", *args, "--users", path, "--password-stdin", input=stdin)
    assert r.returncode == 2
    assert r.stderr.startswith("Error: ") and said in r.stderr and r.stderr.count("\n") == 1
    assert not path.exists()


def test_users_add_of_an_existing_user_needs_replace(tmp_path, pitwatch):
    path = tmp_path / "u.json"
    assert pitwatch("users", "add", "ana", "--role", "viewer", "--users", path, "--password-stdin",
                    input="first-password\n").returncode == 0
    before = path.read_bytes()
    r = pitwatch("users", "add", "ana", "--role", "admin", "--users", path, "--password-stdin", input="second-password\n")
    assert r.returncode == 2 and "--replace" in r.stderr
    assert path.read_bytes() == before
    r = pitwatch("users", "add", "ana", "--role", "admin", "--users", path, "--password-stdin", "--replace",
                 input="second-password\n")
    assert r.returncode == 0, r.stderr
    user = auth.read_users(str(path))["ana"]
    assert user.role == "admin" and auth.password_matches(user, "second-password")


def test_a_users_file_that_is_not_one_is_refused_whole(tmp_path, pitwatch):
    path = tmp_path / "u.json"
    path.write_text('{"users": [{"name": "ana", "role": "god", "password_hash": "x"}]}')
    r = pitwatch("users", "list", "--users", path)
    assert r.returncode == 2 and "damaged" in r.stderr and "role 'god'" in r.stderr
    path.write_bytes(b"\xff\xfe not json")
    r = pitwatch("users", "list", "--users", path)
    assert r.returncode == 2 and "not a pitwatch users file" in r.stderr


def test_users_list_shows_names_and_roles_never_hashes(tmp_path, pitwatch):
    path = tmp_path / "u.json"
    auth.add_user(str(path), "ana", "reviewer", "password-a")
    auth.add_user(str(path), "bo", "viewer", "password-b")
    r = pitwatch("users", "list", "--users", path)
    assert r.returncode == 0 and r.stdout == "ana\treviewer\nbo\tviewer\n"
    r = pitwatch("users", "remove", "bo", "--users", path)
    assert r.returncode == 0 and list(auth.read_users(str(path))) == ["ana"]


def test_the_secret_is_made_once_0600_and_refused_when_others_can_read_it(tmp_path):
    users = str(tmp_path / "lake.users.json")
    first = auth.load_secret(users)
    assert len(first) == 32 and auth.load_secret(users) == first
    secret = tmp_path / "lake.users.secret"
    assert stat.S_IMODE(os.stat(secret).st_mode) == 0o600
    os.chmod(secret, 0o644)
    with pytest.raises(auth.UsersError, match="can be read by others"):
        auth.load_secret(users)


def test_failed_logins_are_limited_per_name_and_address_pair():
    now = [0.0]
    limiter = auth.LoginLimiter(limit=3, window=60, clock=lambda: now[0])
    for _ in range(3):
        assert not limiter.refused("ana", "10.0.0.1")
        limiter.failed("ana", "10.0.0.1")
    assert limiter.refused("ana", "10.0.0.1")           # the pair: refused
    now[0] = 61.0                                      # the window has passed
    assert not limiter.refused("ana", "10.0.0.1")


def test_failures_of_one_pair_never_refuse_another_user_or_the_same_user_from_another_address():
    limiter = auth.LoginLimiter(limit=3, window=60, clock=lambda: 0.0)
    for _ in range(10):
        limiter.failed("ana", "10.0.0.1")
    assert not limiter.refused("bo", "10.0.0.1")        # behind one proxy: the floor is not locked out
    assert not limiter.refused("ana", "10.0.0.2")       # the named user, from their own desk


def test_the_limiter_forgets_pairs_past_the_window_when_many_were_tried(monkeypatch):
    monkeypatch.setattr(auth, "MAX_COUNTED", 2)
    now = [0.0]
    limiter = auth.LoginLimiter(limit=1, window=60, clock=lambda: now[0])
    limiter.failed("ana", "10.0.0.1")
    now[0] = 61.0
    limiter.failed("bo", "10.0.0.2")
    limiter.failed("cy", "10.0.0.3")                    # ana's pair is past the window: forgotten
    assert len(limiter._failures) == 2
    assert limiter.refused("bo", "10.0.0.2") and limiter.refused("cy", "10.0.0.3")


def test_the_limiter_keeps_at_most_max_counted_pairs_even_within_the_window(monkeypatch):
    monkeypatch.setattr(auth, "MAX_COUNTED", 3)
    limiter = auth.LoginLimiter(limit=1, window=60, clock=lambda: 0.0)
    for i in range(10):
        limiter.failed(f"name{i}", "10.0.0.1")
        limiter.refused(f"other{i}", "10.0.0.1")       # asking never adds an entry
    assert len(limiter._failures) == 3
    assert limiter.refused("name9", "10.0.0.1")         # the newest still count


@pytest.mark.parametrize("asked, went", [("/health", "/health"), ("/findings/abc?day=2026-11-28", "/findings/abc?day=2026-11-28"),
                                         ("//evil.example/x", "/live"), ("https://evil.example/", "/live"),
                                         ("/\\evil.example", "/live"), ("", "/live"), (None, "/live")])
def test_after_logging_in_only_a_path_of_the_console_is_followed(asked, went):
    assert auth.safe_next(asked) == went


def test_a_login_of_an_unknown_name_costs_an_argon2_verification_as_a_known_one_does(tmp_path):
    path = str(tmp_path / "u.json")
    auth.add_user(path, "ana", "viewer", "password-a")
    users = auth.UsersFile(path)

    def seconds(name: str) -> float:
        start = time.perf_counter()
        for _ in range(3):
            assert auth.check_login(users, name, "not-the-password") is None
        return time.perf_counter() - start

    seconds("ana")                                      # warm
    known, unknown = seconds("ana"), seconds("nobody")
    assert unknown > known / 3, (known, unknown)        # skipping argon2 is ~1000x faster
    assert auth.check_login(users, "ana", "password-a") == users.get("ana")


def test_the_dummy_hash_has_the_hashers_own_cost_and_matches_no_password():
    assert not auth._hasher.check_needs_rehash(auth.dummy_hash())
    assert not auth.password_matches(auth.User("x", "viewer", auth.dummy_hash()), "")


def test_open_sessions_end_at_logout_at_their_time_and_the_oldest_first_when_full():
    from pitwatch.console.auth import OpenSessions

    now = [1000.0]
    sessions = OpenSessions(seconds=60, clock=lambda: now[0], limit=2)
    vera = sessions.open("vera")
    assert sessions.alive(vera, "vera") and not sessions.alive(vera, "rita") and not sessions.alive(None, "vera")
    sessions.end(vera)
    assert not sessions.alive(vera, "vera")                       # logged out: every copy of the cookie
    first, second = sessions.open("vera"), sessions.open("rita")
    third = sessions.open("alex")                                 # full: the oldest ends
    assert not sessions.alive(first, "vera") and sessions.alive(second, "rita") and sessions.alive(third, "alex")
    now[0] += 61
    assert not sessions.alive(third, "alex")                      # past its end
