"""Runs our executables for the Python suites (this folder is on their import path: its conftest.py
puts it there)."""
import contextlib
import json
import pathlib
import subprocess
import tempfile

import pytest


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
