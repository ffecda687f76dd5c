"""SIGKILL in the middle of the outbox's delivery: what was accepted reaches Discord after the next
start, each message once and in the order it was accepted (the nonce answers a post Discord took
before the process died)."""
import os
import signal
import subprocess
import tempfile
import time

import requests

from executables import free_port, running_emulator, wait_until_healthy

APP_KEY = "outbox-kill-test"


def _posted(control: str) -> int:
    counters = requests.get(control + "/counters", timeout=5).json()
    return counters["requestsByRoute"].get("POST /channels/{channel_id}/messages", 0)


def _start(swift_bin, discord, store: str, port: int, log):
    environment = {
        **os.environ,
        "DISCORD_TOKEN": discord["botToken"], "DISCORD_API_URL": discord["restURL"],
        "DISCORD_GUILD_ID": discord["guildID"], "DISCORD_FORUM_CHANNEL_ID": discord["forumChannelID"],
        "APP_KEY": APP_KEY, "STORE_URL": store, "PORT": str(port), "REQUEST_TIMEOUT_SECONDS": "60",
    }
    server = subprocess.Popen([str(swift_bin / "threaddesk"), "serve", "--env-file", "/nonexistent"],
                              env=environment, stdout=log, stderr=subprocess.STDOUT)
    wait_until_healthy(f"http://127.0.0.1:{port}", server, log)
    return server


def test_sigkill_mid_delivery_loses_and_doubles_nothing(swift_bin, tmp_path):
    store = f"sqlite://{tmp_path}/threaddesk.sqlite"
    with running_emulator(swift_bin / "discord-emulator") as discord, tempfile.TemporaryFile(mode="w+") as log:
        control = discord["controlURL"]
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        server = _start(swift_bin, discord, store, port, log)
        try:
            session = requests.post(base + "/v1/session", json={}, headers={"X-App-Key": APP_KEY}, timeout=10).json()
            auth = {"Authorization": f"Bearer {session['token']}"}

            def send(text: str, key: str) -> requests.Response:
                return requests.post(base + "/v1/messages", json={"content": text}, headers={**auth, "Idempotency-Key": key}, timeout=10)

            assert send("m0", "k0").status_code == 201
            # Sent once the delivery is done with it (thread made, kept in the store).
            deadline = time.monotonic() + 30
            while requests.get(base + "/v1/messages", headers=auth, timeout=10).json()["messages"][0]["delivery"] != "sent":
                assert time.monotonic() < deadline, "the first message never made the thread"
                time.sleep(0.05)
            thread = requests.get(control + "/threads", timeout=5).json()[0]["id"]

            # Discord answers slowly: the next messages are accepted at once and wait in the
            # outbox; the process dies while a post of theirs is on its way (Discord takes it
            # after the process is gone).
            assert requests.post(control + "/faults/latency", json={"milliseconds": 1500}, timeout=5).status_code == 204
            before = _posted(control)
            accepted = []
            for index in range(1, 6):
                answer = send(f"m{index}", f"k{index}")
                assert answer.status_code == 201, answer.text
                assert answer.json()["delivery"] == "queued"
                accepted.append(answer.json()["id"])
            deadline = time.monotonic() + 20
            while _posted(control) == before:
                assert time.monotonic() < deadline, "no delivery reached Discord"
                time.sleep(0.02)
            server.send_signal(signal.SIGKILL)
            server.wait(timeout=10)
            # The post in flight lands after the latency, with no one left to hear the answer.
            time.sleep(2)
            assert requests.post(control + "/faults/latency", json={"milliseconds": 0}, timeout=5).status_code == 204

            server = _start(swift_bin, discord, store, port, log)
            expected = [f"m{index}" for index in range(6)]
            deadline = time.monotonic() + 60
            while True:
                contents = [m["content"] for m in requests.get(f"{control}/threads/{thread}/messages", timeout=5).json()]
                if len(contents) >= len(expected) or time.monotonic() > deadline:
                    break
                time.sleep(0.1)
            assert contents == expected, contents
            # The app sees each message sent, under the id it was given when it was accepted.
            listed = requests.get(base + "/v1/messages", headers=auth, timeout=10).json()["messages"]
            assert [m["content"] for m in listed] == expected
            assert [m["id"] for m in listed][1:] == accepted
            assert all(m["delivery"] == "sent" for m in listed), listed
        finally:
            if server.poll() is None:
                server.kill()
                server.wait(timeout=10)
            log.seek(0)
            output = log.read()
            assert "Fatal error" not in output, output[-4000:]
