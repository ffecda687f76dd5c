"""Runs `threaddesk sandbox` exactly as the README's first command does, on a free port."""
import subprocess
import tempfile

import pytest
import requests

from executables import free_port, wait_until_healthy


@pytest.fixture(scope="session")
def sandbox(swift_bin, tmp_path_factory):
    """The running sandbox: its base URL and the keys it generated."""
    port = free_port()
    data = tmp_path_factory.mktemp("sandbox")
    # Its output goes to a file: a pipe nobody drains would block it.
    with tempfile.TemporaryFile(mode="w+") as log:
        process = subprocess.Popen(
            # Short event streams: schemathesis reads each response to its end, and the pages must
            # resume across reconnections anyway.
            [str(swift_bin / "threaddesk"), "sandbox", "--port", str(port), "--data-directory", str(data),
             "--max-stream-seconds", "2"],
            stdout=log, stderr=subprocess.STDOUT, text=True)
        base = f"http://127.0.0.1:{port}"
        try:
            wait_until_healthy(base, process, log)
            config = requests.get(base + "/sandbox/api/config", timeout=5).json()
            yield {"url": base, "app_key": config["appKey"], "legacy_key": config["legacyKey"]}
        finally:
            process.terminate()
            process.wait(timeout=15)
