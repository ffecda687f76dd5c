"""Starts the `discord-emulator` executable for the fidelity checks and loads Discord's OpenAPI document."""
import json
import os
import pathlib
import subprocess
import tempfile

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
# Discord's OpenAPI document (MIT, see reference/discord-openapi.LICENSE). The team's shared copy
# wins when it is beside the checkout; the copy kept here makes a lone clone self-sufficient.
SHARED_OPENAPI = ROOT.parent / "shared" / "reference" / "discord-openapi.json"
OPENAPI = SHARED_OPENAPI if SHARED_OPENAPI.exists() else pathlib.Path(__file__).parent / "reference" / "discord-openapi.json"


def _binary(name: str = "discord-emulator") -> pathlib.Path:
    out = subprocess.run(["swift", "build", "--show-bin-path"], cwd=ROOT, check=True, capture_output=True, text=True)
    return pathlib.Path(out.stdout.strip()) / name


@pytest.fixture(scope="session")
def openapi() -> dict:
    path = pathlib.Path(os.environ.get("DISCORD_OPENAPI", OPENAPI))
    return json.loads(path.read_text())


@pytest.fixture()
def emulator():
    """A fresh emulator per test: its endpoints, as the executable prints them."""
    # The emulator logs to stderr: a file, never a pipe nobody drains (a full pipe would block it).
    log = tempfile.TemporaryFile(mode="w+")
    process = subprocess.Popen(
        [str(_binary()), "--port", "0", "--heartbeat-interval", "2000"],
        stdout=subprocess.PIPE, stderr=log, text=True,
    )
    try:
        line = process.stdout.readline()
        if not line:
            log.seek(0)
            pytest.fail(f"discord-emulator printed nothing: {log.read()}")
        yield json.loads(line)
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()


@pytest.fixture()
def apns_emulator(tmp_path):
    """A fresh APNs emulator per test, its key and CA written under tmp_path."""
    log = tempfile.TemporaryFile(mode="w+")
    process = subprocess.Popen(
        [str(_binary("apns-emulator")), "--port", "0", "--directory", str(tmp_path)],
        stdout=subprocess.PIPE, stderr=log, text=True)
    try:
        line = process.stdout.readline()
        if not line:
            log.seek(0)
            pytest.fail(f"apns-emulator printed nothing: {log.read()}")
        yield json.loads(line)
    finally:
        process.terminate()
        process.wait(timeout=10)
        log.close()
