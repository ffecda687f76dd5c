"""Starts the `discord-emulator` executable for the fidelity checks and loads Discord's OpenAPI document."""
import contextlib
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


@pytest.fixture(scope="session")
def openapi() -> dict:
    path = pathlib.Path(os.environ.get("DISCORD_OPENAPI", OPENAPI))
    return json.loads(path.read_text())


@contextlib.contextmanager
def _running(executable: pathlib.Path, *arguments: str):
    """Runs one of our emulator executables; yields the JSON line it prints when it is ready."""
    # Emulators log to stderr: a file, never a pipe nobody drains (a full pipe would block them).
    with tempfile.TemporaryFile(mode="w+") as log:
        process = subprocess.Popen([str(executable), "--port", "0", *arguments], stdout=subprocess.PIPE, stderr=log, text=True)
        try:
            line = process.stdout.readline()
            if not line:
                log.seek(0)
                pytest.fail(f"{executable.name} printed nothing: {log.read()}")
            yield json.loads(line)
        finally:
            process.terminate()
            process.wait(timeout=10)


@pytest.fixture()
def emulator(swift_bin):
    """A fresh Discord emulator per test: its endpoints, as the executable prints them."""
    with _running(swift_bin / "discord-emulator", "--heartbeat-interval", "2000") as endpoints:
        yield endpoints


@pytest.fixture()
def apns_emulator(swift_bin, tmp_path):
    """A fresh APNs emulator per test, its key and CA written under tmp_path."""
    with _running(swift_bin / "apns-emulator", "--directory", str(tmp_path)) as credentials:
        yield credentials
