"""Runs `threaddesk sandbox` exactly as the README's first command does, on a free port."""
import socket
import subprocess
import tempfile
import time

import pytest
import requests


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="session")
def sandbox(swift_bin, tmp_path_factory):
    """The running sandbox: its base URL and the keys it generated."""
    port = _free_port()
    data = tmp_path_factory.mktemp("sandbox")
    # Its output goes to a file: a pipe nobody drains would block it.
    with tempfile.TemporaryFile(mode="w+") as log:
        process = subprocess.Popen(
            [str(swift_bin / "threaddesk"), "sandbox", "--port", str(port), "--data-directory", str(data)],
            stdout=log, stderr=subprocess.STDOUT, text=True)
        base = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + 30
            while True:
                try:
                    if requests.get(base + "/health", timeout=1).status_code == 200:
                        break
                except requests.ConnectionError:
                    pass
                if process.poll() is not None or time.monotonic() > deadline:
                    log.seek(0)
                    pytest.fail(f"the sandbox did not come up: {log.read()}")
                time.sleep(0.1)
            config = requests.get(base + "/sandbox/api/config", timeout=5).json()
            yield {"url": base, "app_key": config["appKey"], "legacy_key": config["legacyKey"]}
        finally:
            process.terminate()
            process.wait(timeout=15)
