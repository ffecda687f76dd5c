"""Runs our executables for the Python suites (this folder is on their import path: its conftest.py
puts it there)."""
import contextlib
import json
import pathlib
import socket
import subprocess
import tempfile
import time

import pytest
import requests


@contextlib.contextmanager
def running_emulator(executable: pathlib.Path, *arguments: str):
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


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def wait_until_healthy(base: str, process: subprocess.Popen, log, timeout: float = 30) -> None:
    """Waits for `base`/health to answer 200; fails the test (with the process's log) if the
    process exits first or `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if requests.get(base + "/health", timeout=1).status_code == 200:
                return
        except requests.ConnectionError:
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            log.seek(0)
            pytest.fail(f"{base} did not come up: {log.read()}")
        time.sleep(0.05)
