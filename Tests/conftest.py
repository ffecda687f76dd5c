"""What the Python test suites share: where the Swift build puts our executables."""
import pathlib
import subprocess

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def swift_bin() -> pathlib.Path:
    """The folder of the debug build's executables (`swift build` has already made them)."""
    out = subprocess.run(["swift", "build", "--show-bin-path"], cwd=ROOT, check=True, capture_output=True, text=True)
    return pathlib.Path(out.stdout.strip())

