"""Starts our emulator executables for the fidelity checks and loads Discord's OpenAPI document."""
import json
import os
import pathlib

import pytest

from executables import running_emulator

ROOT = pathlib.Path(__file__).resolve().parents[2]
# Discord's OpenAPI document (MIT, see reference/discord-openapi.LICENSE). The team's shared copy
# wins when it is beside the checkout; the copy kept here makes a lone clone self-sufficient.
SHARED_OPENAPI = ROOT.parent / "shared" / "reference" / "discord-openapi.json"
OPENAPI = SHARED_OPENAPI if SHARED_OPENAPI.exists() else pathlib.Path(__file__).parent / "reference" / "discord-openapi.json"


@pytest.fixture(scope="session")
def openapi() -> dict:
    path = pathlib.Path(os.environ.get("DISCORD_OPENAPI", OPENAPI))
    return json.loads(path.read_text())


@pytest.fixture()
def emulator(swift_bin):
    """A fresh Discord emulator per test: its endpoints, as the executable prints them."""
    with running_emulator(swift_bin / "discord-emulator", "--heartbeat-interval", "2000") as endpoints:
        yield endpoints


@pytest.fixture()
def apns_emulator(swift_bin, tmp_path):
    """A fresh APNs emulator per test, its key and CA written under tmp_path."""
    with running_emulator(swift_bin / "apns-emulator", "--directory", str(tmp_path)) as credentials:
        yield credentials


@pytest.fixture()
def assist_emulator(swift_bin):
    """A fresh assist (chat-completions) emulator per test, requiring a key and serving two models."""
    with running_emulator(swift_bin / "assist-emulator", "--api-key", "sk-fidelity-test-key",
                          "--model", "test-model", "--model", "other-model") as endpoints:
        yield endpoints
