"""A real S3 API on this machine for the object-store lake's tests (issue 44): moto's server mode
(``moto[server]``, a test extra), started as its own process on a free port of 127.0.0.1, one per
test session (each xdist worker its own), and a fresh bucket per test.

pitwatch reaches it exactly as it would reach AWS or MinIO: through the standard AWS variables
(:data:`S3_VARIABLES`), which pyarrow, delta-rs and obstore all read; nothing in pitwatch knows
it is talking to moto."""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import uuid

ACCESS_KEY = "pitwatch-test"
SECRET_KEY = "pitwatch-test-secret"
REGION = "us-east-1"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class S3Server:
    """A moto S3 server process on ``127.0.0.1:port``: :meth:`start`, :meth:`stop`, :meth:`bucket`."""

    def __init__(self, log_path: str) -> None:
        self.port = free_port()
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self._log = open(log_path, "wb")
        self.process: subprocess.Popen | None = None

    def start(self, timeout: float = 60.0) -> "S3Server":
        self.process = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                                        stdout=self._log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while True:
            try:
                with urllib.request.urlopen(self.endpoint + "/moto-api/", timeout=2):
                    return self
            except (urllib.error.URLError, ConnectionError, OSError):
                if self.process.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise RuntimeError(f"moto's S3 server did not start on {self.endpoint}") from None
                time.sleep(0.1)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        self._log.close()

    @property
    def variables(self) -> dict[str, str]:
        """The standard AWS variables that point pyarrow, delta-rs and obstore at this server
        (``AWS_ALLOW_HTTP``: it speaks plain HTTP on the loopback, as a MinIO on a closed network may)."""
        return {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": ACCESS_KEY,
                "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_REGION": REGION, "AWS_DEFAULT_REGION": REGION,
                "AWS_ALLOW_HTTP": "true", "AWS_EC2_METADATA_DISABLED": "true"}

    def client(self):
        import boto3

        return boto3.client("s3", endpoint_url=self.endpoint, aws_access_key_id=ACCESS_KEY,
                            aws_secret_access_key=SECRET_KEY, region_name=REGION)

    def bucket(self) -> str:
        """A new, empty bucket's name."""
        name = f"lake-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=name)
        return name

    def keys(self, bucket: str) -> dict[str, bytes]:
        """Every object of ``bucket``: key -> bytes (what a test compares before and after)."""
        client, out = self.client(), {}
        for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket):
            for item in page.get("Contents", []):
                out[item["Key"]] = client.get_object(Bucket=bucket, Key=item["Key"])["Body"].read()
        return out


def set_variables(server: S3Server, monkeypatch) -> None:
    """This process's environment pointed at ``server`` (for the test only), with no other AWS
    profile or credentials file in the way."""
    for name in [n for n in os.environ if n.startswith("AWS_")]:
        monkeypatch.delenv(name)
    for name, value in server.variables.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)


def copy_lake(folder, lake: str) -> None:
    """A local lake's files (``folder``) copied to ``lake`` (``s3://BUCKET/PATH``; this process's AWS
    variables pointing at the server): the layout is the same on both, so a command's test needs no
    batch run on the object store."""
    from pathlib import Path

    from pitwatch.lake import Lake

    at = Lake.at(lake)
    for path in sorted(Path(folder).rglob("*")):       # files only: no "folder/" marker objects
        if path.is_file():
            with at.fs.open_output_stream(at.path(*path.relative_to(folder).parts)) as f:
                f.write(path.read_bytes())


def same_but_the_lake(text: str, lake, *others) -> str:
    """``text`` with the lake's name (and ``others``: run ids, …) replaced by fixed words, so that a
    command's output on a disk lake and on its copy on the object store compare whole."""
    for name, word in ((lake, "LAKE"), *((o, f"OTHER{i}") for i, o in enumerate(others))):
        text = text.replace(str(name), word)
    return text
