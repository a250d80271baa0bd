"""deploy/dataflow.sh, deploy/flink.sh and deploy/spark.sh: argument handling and the commands they run.

No cluster here, so nothing is submitted: ``--dry-run`` must print the
commands and run none of them, and the real mode is run with stand-ins for
``python3``, ``docker`` and ``pitwatch`` (first on PATH) that only record
their arguments, on a copy of the scripts outside the repository.
"""
from __future__ import annotations

import os
import pathlib
import shutil
import stat
import subprocess
import tomllib

import pytest

REPO = pathlib.Path(__file__).resolve().parents[1]
DEPLOY = REPO / "deploy"
VERSION = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["version"]
WHEEL = f"dist/pitwatch-{VERSION}-py3-none-any.whl"

DATAFLOW_ARGS = ["gs://casino-feeds/2026-11-28/", "gs://casino-lake", "--project", "casino-audit",
                 "--region", "europe-west1", "--temp", "gs://casino-tmp/beam/",
                 "--", "--max_num_workers=8", "--fail-on", "critical"]
IMAGE = f"registry.example.com/pitwatch:{VERSION}"
FLINK_ARGS = ["/mnt/feeds/2026-11-28/", "/mnt/lake", "--flink-master", "flink-jobmanager:8081",
              "--image", IMAGE, "--parallelism", "8",
              "--", "--fail-on", "critical"]
SPARK_ARGS = ["s3://casino-feeds/2026-11-28/", "s3://casino-lake/lake", "--spark-master", "spark://spark-master:7077",
              "--image", IMAGE, "--", "--fail-on", "critical"]
MINIO = ["--store-endpoint", "https://minio.casino.internal:9000"]
SCRIPTS = ["dataflow.sh", "flink.sh", "spark.sh"]

STUB = """#!/usr/bin/env bash
printf '%s\\n' "${0##*/} $*" >> "$STUB_LOG"
for ((i = 1; i < $#; i++)); do
    if [[ ${!i} == -w ]]; then j=$((i + 1)); mkdir -p "${!j}"; touch "${!j}/pitwatch-$STUB_VERSION-py3-none-any.whl"; fi
done
"""


@pytest.fixture
def stubs(tmp_path):
    """PATH with recording stand-ins for python3, docker and pitwatch; returns (env, log path)."""
    bin_ = tmp_path / "stub-bin"
    bin_.mkdir()
    for name in ("python3", "python", "docker", "pitwatch"):
        (bin_ / name).write_text(STUB)
        (bin_ / name).chmod(0o755)
    log = tmp_path / "calls.log"
    env = {k: v for k, v in os.environ.items() if k != "PYTHON"}
    env.update(PATH=f"{bin_}{os.pathsep}{env.get('PATH', '/usr/bin:/bin')}", STUB_LOG=str(log),
               STUB_VERSION=VERSION)
    return env, log


def _strip_job(command: str) -> str:
    """The command without its --job_name (a time stamp, different on every run)."""
    return " ".join(w for w in command.split() if not w.startswith("--job_name="))


def _run(script: pathlib.Path, args: list[str], env=None) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(script), *args], check=False, capture_output=True, text=True, env=env,
                          timeout=30)


@pytest.mark.parametrize("name", SCRIPTS)
def test_scripts_parse_and_are_executable(name):
    script = DEPLOY / name
    subprocess.run(["bash", "-n", str(script)], check=True)
    assert script.stat().st_mode & stat.S_IXUSR, f"{name} is not executable"


def test_dataflow_dry_run_prints_the_commands_and_runs_nothing(stubs):
    env, log = stubs
    p = _run(DEPLOY / "dataflow.sh", ["--dry-run", *DATAFLOW_ARGS], env)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert len(lines) == 2 and all(line.startswith("+ ") for line in lines), p.stdout
    build, run = lines
    assert " -m pip wheel " in build and "--no-deps" in build and f"-w {REPO}/dist" in build
    assert build.startswith("+ python3 -m pip wheel ")    # pure Python: the wheel any worker's Python installs
    words = run.split()
    assert words[1:6] == ["pitwatch", "run", "gs://casino-feeds/2026-11-28/", "--lake", "gs://casino-lake"]
    for opt in ("--runner=DataflowRunner", "--project=casino-audit", "--region=europe-west1",
                "--temp_location=gs://casino-tmp/beam", "--staging_location=gs://casino-tmp/beam/staging",
                f"--extra_package={REPO}/{WHEEL}"):
        assert opt in words, f"{opt} missing from {run}"
    job = [w for w in words if w.startswith("--job_name=")]
    assert len(job) == 1 and job[0].removeprefix("--job_name=").replace("-", "").isalnum()
    assert job[0] == job[0].lower() and job[0].startswith("--job_name=pitwatch-")
    assert words[-3:] == ["--max_num_workers=8", "--fail-on", "critical"]  # extras last: they win
    assert not log.exists(), "--dry-run ran a command"


def test_flink_dry_run_prints_the_commands_and_runs_nothing(stubs):
    env, log = stubs
    p = _run(DEPLOY / "flink.sh", ["--dry-run", *FLINK_ARGS], env)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    assert len(lines) == 3 and all(line.startswith("+ ") for line in lines), p.stdout
    build, docker, run = lines
    assert " -m pip wheel " in build and f"-w {REPO}/dist" in build
    assert build.startswith("+ python3 -m pip wheel ")
    assert docker == (f"+ docker build -f {DEPLOY}/Dockerfile --target pitwatch --build-arg PITWATCH_VERSION={VERSION}"
                      f" -t registry.example.com/pitwatch:{VERSION} {REPO}")
    assert "docker push" in p.stderr  # the reminder
    words = run.split()
    assert words[1:6] == ["pitwatch", "run", "/mnt/feeds/2026-11-28/", "--lake", "/mnt/lake"]
    for opt in ("--runner=FlinkRunner", "--flink_master=flink-jobmanager:8081", "--environment_type=DOCKER",
                # the option Beam's portable runners read for the DOCKER image (not --sdk_container_image)
                f"--environment_options=docker_container_image=registry.example.com/pitwatch:{VERSION}",
                f"--sdk_container_image=registry.example.com/pitwatch:{VERSION}", "--parallelism=8"):
        assert opt in words, f"{opt} missing from {run}"
    assert words[-2:] == ["--fail-on", "critical"]
    assert not log.exists(), "--dry-run ran a command"


def test_spark_dry_run_prints_the_commands_for_an_object_store_lake(stubs):
    env, log = stubs
    p = _run(DEPLOY / "spark.sh", ["--dry-run", *SPARK_ARGS], env)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines() == [
        f"+ python3 -m pip wheel {REPO} --no-deps -w {REPO}/dist",
        f"+ docker build -f {DEPLOY}/Dockerfile --target pitwatch --build-arg PITWATCH_VERSION={VERSION} -t {IMAGE} {REPO}",
        "+ pitwatch run s3://casino-feeds/2026-11-28/ --lake s3://casino-lake/lake --runner=SparkRunner"
        " --spark_master_url=spark://spark-master:7077 --environment_type=DOCKER"
        f" --environment_options=docker_container_image={IMAGE} --sdk_container_image={IMAGE} --fail-on critical"]
    assert "docker push" in p.stderr  # the reminder
    assert not log.exists(), "--dry-run ran a command"


@pytest.mark.parametrize("name, args", [("flink.sh", FLINK_ARGS), ("spark.sh", SPARK_ARGS)])
def test_an_s3_compatible_stores_endpoint_reaches_the_image_and_the_run(stubs, name, args):
    """Beam's Docker environment gives the SDK containers no variables: the endpoint and region are built
    into the image (target pitwatch-store), and the run here is started with the same ones."""
    env, log = stubs
    args = [a.replace("/mnt/lake", "s3://casino-lake/lake") for a in args]
    p = _run(DEPLOY / name, ["--dry-run", *args], env)
    plain = p.stdout.splitlines()
    assert p.returncode == 0 and "AWS_" not in p.stdout and "--target pitwatch " in plain[1]  # none unless asked
    p = _run(DEPLOY / name, ["--dry-run", *MINIO, "--store-region", "eu-casino-1", *args], env)
    assert p.returncode == 0, p.stderr
    build, docker, run = p.stdout.splitlines()
    assert build == plain[0]
    assert docker == plain[1].replace("--target pitwatch ", "--target pitwatch-store"
                                      " --build-arg AWS_ENDPOINT_URL=https://minio.casino.internal:9000"
                                      " --build-arg AWS_REGION=eu-casino-1 --build-arg AWS_ALLOW_HTTP=false ")
    assert run == plain[2].replace("+ pitwatch run ", "+ env AWS_ENDPOINT_URL=https://minio.casino.internal:9000"
                                   " AWS_REGION=eu-casino-1 AWS_ALLOW_HTTP=false pitwatch run ")
    http = _run(DEPLOY / name, ["--dry-run", "--store-endpoint=http://10.0.0.5:9000", *args], env)
    assert "AWS_REGION=us-east-1 AWS_ALLOW_HTTP=true pitwatch run " in http.stdout   # plain HTTP allowed, said
    assert not log.exists()


def test_the_dockerfile_installs_the_wheel_on_the_beam_image():
    text = "\n".join(line for line in (DEPLOY / "Dockerfile").read_text().splitlines()
                     if not line.lstrip().startswith("#"))
    assert "FROM apache/beam_python3.11_sdk:2.77.0 AS pitwatch\n" in text
    assert "COPY dist/pitwatch-${PITWATCH_VERSION}-py3-none-any.whl" in text
    assert "pip install" in text and "--no-deps" not in text
    assert "ENTRYPOINT" not in text  # the SDK image's boot entrypoint stays
    # the store's target: its endpoint and region required (delta-rs fails on an empty endpoint), no credentials
    store = text.split("FROM pitwatch AS pitwatch-store\n")[1]
    assert 'test -n "$AWS_ENDPOINT_URL" && test -n "$AWS_REGION"' in store
    assert "ENV AWS_ENDPOINT_URL=${AWS_ENDPOINT_URL} AWS_REGION=${AWS_REGION}" in store
    assert "SECRET" not in text and "ACCESS_KEY" not in text


@pytest.mark.parametrize("name, args, missing", [
    ("dataflow.sh", [a for a in DATAFLOW_ARGS if a not in ("--project", "casino-audit")], "--project"),
    ("dataflow.sh", DATAFLOW_ARGS[1:], "LAKE"),
    ("flink.sh", [a for a in FLINK_ARGS if a not in ("--image", f"registry.example.com/pitwatch:{VERSION}")],
     "--image"),
    ("flink.sh", [], "INPUT"),
    ("spark.sh", [a for a in SPARK_ARGS if a not in ("--spark-master", "spark://spark-master:7077")],
     "--spark-master"),
    ("spark.sh", [a for a in SPARK_ARGS if a not in ("--image", IMAGE)], "--image"),
])
def test_missing_argument_is_a_usage_error(stubs, name, args, missing):
    env, log = stubs
    p = _run(DEPLOY / name, ["--dry-run", *args], env)
    assert p.returncode == 2
    err = p.stderr.splitlines()
    assert err[0].startswith("Error:") and missing in err[0], p.stderr
    assert any(line.startswith("usage:") for line in err)
    assert p.stdout == "" and not log.exists()


@pytest.mark.parametrize("name, args", [
    ("dataflow.sh", ["--bogus", *DATAFLOW_ARGS]),
    ("dataflow.sh", [*DATAFLOW_ARGS[:6], "--temp", "/tmp/local"]),
    ("flink.sh", [*FLINK_ARGS[:6], "--parallelism", "many"]),
    ("flink.sh", [*FLINK_ARGS[:6], "--image"]),
    ("spark.sh", [*SPARK_ARGS[:2], "--spark-master", "spark-master:7077", *SPARK_ARGS[4:6]]),
])
def test_bad_argument_is_a_usage_error(stubs, name, args):
    env, log = stubs
    p = _run(DEPLOY / name, ["--dry-run", *args], env)
    assert p.returncode == 2 and p.stderr.startswith("Error:"), p.stderr
    assert not log.exists()


@pytest.mark.parametrize("name, args, lake, said", [
    ("dataflow.sh", DATAFLOW_ARGS, "/mnt/lake", "LAKE must be a gs:// path"),       # workers mount nothing
    ("dataflow.sh", DATAFLOW_ARGS, "s3://casino-lake/lake", "LAKE must be a gs:// path"),
    ("flink.sh", FLINK_ARGS, "lake", "a relative path is another folder on every machine"),
    ("flink.sh", FLINK_ARGS, "az://casino/lake", "LAKE must be on s3://, gs:// or a shared mount"),
    ("spark.sh", SPARK_ARGS, "./lake", "a relative path is another folder on every machine"),
])
def test_a_lake_the_workers_cannot_write_is_a_usage_error(stubs, name, args, lake, said):
    env, log = stubs
    given = [lake if i == 1 else a for i, a in enumerate(args)]
    p = _run(DEPLOY / name, ["--dry-run", *given], env)
    assert p.returncode == 2 and p.stderr.startswith("Error:") and said in p.stderr.splitlines()[0], p.stderr
    assert p.stdout == "" and not log.exists()


@pytest.mark.parametrize("name, lake", [("dataflow.sh", "gs://casino-lake/lake"), ("flink.sh", "gs://casino-lake"),
                                        ("flink.sh", "s3://casino-lake/lake"), ("spark.sh", "/mnt/lake")])
def test_a_lake_on_an_object_store_or_a_shared_mount_is_taken(stubs, name, lake):
    env, _ = stubs
    args = {"dataflow.sh": DATAFLOW_ARGS, "flink.sh": FLINK_ARGS, "spark.sh": SPARK_ARGS}[name]
    p = _run(DEPLOY / name, ["--dry-run", *[lake if i == 1 else a for i, a in enumerate(args)]], env)
    assert p.returncode == 0, p.stderr
    assert f" --lake {lake} " in p.stdout.splitlines()[-1]


@pytest.mark.parametrize("extra, said", [
    (["--store-endpoint", "minio:9000"], "--store-endpoint must be http(s)://HOST[:PORT]"),
    (["--store-endpoint", "https://minio:9000/bucket"], "--store-endpoint must be http(s)://HOST[:PORT]"),
    (["--store-region", "eu-1"], "--store-region goes with --store-endpoint"),
    ([*MINIO, "--store-region", "eu 1"], "--store-region must be a region name"),
    (["--store-endpoint"], "--store-endpoint needs a value"),
])
def test_a_bad_store_option_is_a_usage_error(stubs, extra, said):
    env, log = stubs
    p = _run(DEPLOY / "spark.sh", ["--dry-run", *SPARK_ARGS[:6], *extra], env)
    assert p.returncode == 2 and said in p.stderr.splitlines()[0], p.stderr
    assert any(line.startswith("usage:") for line in p.stderr.splitlines()) and not log.exists()


def test_a_store_endpoint_without_an_s3_lake_or_input_is_a_usage_error(stubs):
    env, log = stubs
    p = _run(DEPLOY / "flink.sh", ["--dry-run", *FLINK_ARGS[:6], *MINIO], env)    # /mnt feeds, /mnt lake
    assert p.returncode == 2 and "--store-endpoint is for an s3:// LAKE or INPUT" in p.stderr, p.stderr
    assert not log.exists()


@pytest.mark.parametrize("name", SCRIPTS)
def test_help(name):
    p = _run(DEPLOY / name, ["--help"])
    assert p.returncode == 0 and p.stdout.startswith("usage:") and "Example" in p.stdout
    assert _run(DEPLOY / name, ["-h"]).stdout == p.stdout


@pytest.mark.parametrize("name, args, programs", [
    ("dataflow.sh", DATAFLOW_ARGS, ["python3", "pitwatch"]),
    ("flink.sh", FLINK_ARGS, ["python3", "docker", "pitwatch"]),
    ("spark.sh", SPARK_ARGS, ["python3", "docker", "pitwatch"]),
])
def test_real_mode_runs_the_printed_commands_in_order(tmp_path, stubs, name, args, programs):
    env, log = stubs
    repo = tmp_path / "repo"  # a copy, so the stand-in build writes its wheel there, not in the repository
    (repo / "deploy").mkdir(parents=True)
    shutil.copy(REPO / "pyproject.toml", repo)
    shutil.copy(DEPLOY / name, repo / "deploy")
    shutil.copy(DEPLOY / "lib.sh", repo / "deploy")
    dry = _run(repo / "deploy" / name, ["--dry-run", *args], env)
    p = _run(repo / "deploy" / name, args, env)
    assert p.returncode == 0, p.stderr
    calls = log.read_text().splitlines()
    assert [c.split()[0] for c in calls] == programs
    assert (repo / WHEEL).exists()
    # the real mode echoes on stderr what --dry-run prints, then runs exactly that
    echoed = [line for line in p.stderr.splitlines() if line.startswith("+ ")]
    assert [_strip_job(e) for e in echoed] == [_strip_job(d) for d in dry.stdout.splitlines()]
    assert [_strip_job(c) for c in calls] == [_strip_job(e.removeprefix("+ ")) for e in echoed]
