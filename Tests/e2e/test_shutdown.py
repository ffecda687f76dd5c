"""SIGTERM while a send is in flight: `threaddesk serve` drains within its stated grace and exits."""
import os
import signal
import sqlite3
import subprocess
import tempfile
import threading
import time

import pytest
import requests

from executables import free_port, running_emulator, wait_until_healthy

GRACE_SECONDS = 2
# After the grace, in-flight work is cancelled; the process must be gone this long after that
# (`ShutdownDeadline`, armed by `buildServiceGroup`, ends the process 5 s after the grace).
CANCEL_SECONDS = 5


def _messages_posted(control: str) -> int:
    counters = requests.get(control + "/counters", timeout=5).json()
    return counters["requestsByRoute"].get("POST /channels/{channel_id}/messages", 0)


def test_sigterm_during_an_inflight_send_finishes_within_the_drain_deadline(swift_bin, tmp_path):
    with running_emulator(swift_bin / "discord-emulator") as discord, tempfile.TemporaryFile(mode="w+") as log:
        port = free_port()
        environment = {
            **os.environ,
            "DISCORD_TOKEN": discord["botToken"], "DISCORD_API_URL": discord["restURL"],
            "DISCORD_GUILD_ID": discord["guildID"], "DISCORD_FORUM_CHANNEL_ID": discord["forumChannelID"],
            "APP_KEY": "shutdown-test", "STORE_URL": f"sqlite://{tmp_path}/threaddesk.sqlite",
            "PORT": str(port), "SHUTDOWN_GRACE_SECONDS": str(GRACE_SECONDS), "REQUEST_TIMEOUT_SECONDS": "60",
        }
        server = subprocess.Popen([str(swift_bin / "threaddesk"), "serve", "--env-file", "/nonexistent"],
                                  env=environment, stdout=log, stderr=subprocess.STDOUT, cwd=tmp_path)
        base = f"http://127.0.0.1:{port}"
        try:
            wait_until_healthy(base, server, log)
            session = requests.post(base + "/v1/session", json={}, headers={"X-App-Key": "shutdown-test"}, timeout=10).json()
            auth = {"Authorization": f"Bearer {session['token']}"}
            first = requests.post(base + "/v1/messages", json={"content": "hello"}, headers={**auth, "Idempotency-Key": "1"}, timeout=10)
            assert first.status_code == 201, first.text
            control = discord["controlURL"]
            # The outbox delivers it (and makes the thread) after the answer: sent once the
            # delivery is done with it, the store included.
            deadline = time.monotonic() + 20
            while requests.get(base + "/v1/messages", headers=auth, timeout=10).json()["messages"][0]["delivery"] != "sent":
                assert time.monotonic() < deadline, "the first message never reached Discord"
                time.sleep(0.02)

            # Discord stops answering; a send is accepted and its delivery waits on Discord.
            assert requests.post(control + "/faults/latency", json={"milliseconds": 60_000}, timeout=5).status_code == 204
            before = _messages_posted(control)
            answer = {}

            def send():
                try:
                    answer["response"] = requests.post(base + "/v1/messages", json={"content": "in flight"},
                                                       headers={**auth, "Idempotency-Key": "2"}, timeout=30)
                except requests.RequestException as error:
                    answer["error"] = error

            sender = threading.Thread(target=send)
            sender.start()
            deadline = time.monotonic() + 10
            while _messages_posted(control) == before:
                assert time.monotonic() < deadline, "the delivery never reached Discord"
                time.sleep(0.02)

            started = time.monotonic()
            server.send_signal(signal.SIGTERM)
            code = server.wait(timeout=GRACE_SECONDS + CANCEL_SECONDS + 5)
            took = time.monotonic() - started
            sender.join(timeout=10)
            log.seek(0)
            output = log.read()
            assert code == 0, output
            assert took < GRACE_SECONDS + CANCEL_SECONDS, f"shutdown took {took:.1f} s"
            # The send was answered at once (kept); the delivery in flight was cancelled by the
            # shutdown and the message waits in the store for the next start.
            assert "response" in answer, answer
            assert answer["response"].status_code == 201, answer["response"].text
            assert answer["response"].json()["delivery"] == "queued"
            with sqlite3.connect(tmp_path / "threaddesk.sqlite", timeout=10) as db:
                assert db.execute("SELECT content FROM outbox_items").fetchall() == [("in flight",)]
        finally:
            if server.poll() is None:
                server.kill()
                server.wait(timeout=10)
            requests.post(discord["controlURL"] + "/faults/latency", json={"milliseconds": 0}, timeout=5)


def test_the_sandbox_drains_before_its_emulators_stop(swift_bin, tmp_path):
    """SIGTERM while sends are in flight: the sandbox's server drains first, then the emulators it
    talks to stop, and the process exits 0. (The emulator used to catch SIGTERM itself and stop at
    once; the drain then outlived the cancellation limit and the process crashed.)"""
    port = free_port()
    with tempfile.TemporaryFile(mode="w+") as log:
        sandbox = subprocess.Popen([str(swift_bin / "threaddesk"), "sandbox", "--port", str(port), "--data-directory", str(tmp_path)],
                                   stdout=log, stderr=subprocess.STDOUT)
        base = f"http://127.0.0.1:{port}"
        try:
            wait_until_healthy(base, sandbox, log)
            app_key = requests.get(base + "/sandbox/api/config", timeout=5).json()["appKey"]
            token = requests.post(base + "/v1/session", json={}, headers={"X-App-Key": app_key}, timeout=10).json()["token"]
            sent = []
            stop = threading.Event()

            def send():
                index = 0
                while not stop.is_set():
                    index += 1
                    try:
                        answer = requests.post(base + "/v1/messages", json={"content": f"message {index}"}, timeout=10,
                                               headers={"Authorization": f"Bearer {token}", "Idempotency-Key": f"k{index}"})
                        sent.append(answer.status_code)
                    except requests.RequestException:
                        return

            sender = threading.Thread(target=send)
            sender.start()
            deadline = time.monotonic() + 20
            while len(sent) < 3:
                assert time.monotonic() < deadline, "no send got through"
                time.sleep(0.02)
            started = time.monotonic()
            sandbox.send_signal(signal.SIGTERM)
            code = sandbox.wait(timeout=15 + CANCEL_SECONDS + 5)
            took = time.monotonic() - started
            stop.set()
            sender.join(timeout=15)
            log.seek(0)
            output = log.read()
            assert code == 0 and "Fatal error" not in output, output[-4000:]
            assert took < 15, f"shutdown took {took:.1f} s"
        finally:
            if sandbox.poll() is None:
                sandbox.kill()
