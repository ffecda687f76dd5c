"""Signed webhooks from a `threaddesk serve --gateway` process, received by a receiver that checks
every delivery with the verification the README's "Signed webhooks" section shows (the function is
taken from the README as written): signed, in order, never a note, and sent again with the same id
after the process was killed (SIGKILL) while a receiver held a delivery."""
import json
import os
import pathlib
import re
import signal
import subprocess
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jsonschema
import requests
import yaml

from executables import free_port, running_emulator, wait_until_healthy

ROOT = pathlib.Path(__file__).resolve().parents[2]

APP_KEY = "webhooks-test-app-key"
SECRET = "e2e-webhook-secret-0123456789abcdef0123"


def readme_verifier():
    """The README's verification function, exactly as the README writes it."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("### Verifying a delivery", 1)[1].split("\n## ", 1)[0]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    namespace: dict = {}
    exec(code, namespace)
    return namespace["verify_threaddesk_signature"]


def webhook_schema() -> jsonschema.Draft202012Validator:
    """The body of a delivery as openapi.yaml documents it (components/schemas/WebhookEvent)."""
    document = yaml.safe_load((ROOT / "openapi.yaml").read_text())
    root = {"$ref": "#/components/schemas/WebhookEvent", "components": document["components"]}
    return jsonschema.Draft202012Validator(root)


class Receiver:
    """Keeps every delivery (verified with the README's function); holds the ones `hold` names
    until released, then answers 200."""

    def __init__(self):
        verify = readme_verifier()
        self.deliveries = []
        self.lock = threading.Lock()
        self.hold = None
        self.release = threading.Event()
        self.status = 200
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                event = json.loads(body)
                entry = {"verified": verify(SECRET.encode(), self.headers.get("ThreadDesk-Signature", ""), body),
                         "event": event, "body": body, "header": self.headers.get("ThreadDesk-Delivery")}
                with receiver.lock:
                    receiver.deliveries.append(entry)
                held = receiver.hold is not None and receiver.hold(event)
                if held:
                    # Bounded: a test that never releases it ends all the same.
                    receiver.release.wait(timeout=60)
                    return
                self.send_response(receiver.status)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *arguments):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def contents(self):
        with self.lock:
            return [(d["event"]["id"], d["event"]["type"], d["event"]["data"].get("content")) for d in self.deliveries]

    def wait_for(self, what, condition, timeout=60):
        deadline = time.monotonic() + timeout
        while not condition(self.contents()):
            assert time.monotonic() < deadline, f"timed out waiting for {what}: {self.contents()}"
            time.sleep(0.05)


def _start(swift_bin, discord, store, port, secret_file, receiver, log):
    environment = {
        **os.environ,
        "DISCORD_TOKEN": discord["botToken"], "DISCORD_API_URL": discord["restURL"],
        "DISCORD_GUILD_ID": discord["guildID"], "DISCORD_FORUM_CHANNEL_ID": discord["forumChannelID"],
        "APP_KEY": APP_KEY, "STORE_URL": store, "PORT": str(port),
        "WEBHOOK_URL": receiver.url, "WEBHOOK_SECRET_FILE": str(secret_file), "WEBHOOK_TIMEOUT_SECONDS": "60",
    }
    server = subprocess.Popen([str(swift_bin / "threaddesk"), "serve", "--gateway", "--env-file", "/nonexistent"],
                              env=environment, stdout=log, stderr=subprocess.STDOUT)
    wait_until_healthy(f"http://127.0.0.1:{port}", server, log)
    return server


def test_deliveries_verify_by_the_readme_and_survive_a_sigkill(swift_bin, tmp_path):
    secret_file = tmp_path / "webhook-secret"
    secret_file.write_text(SECRET + "\n")
    store = f"sqlite://{tmp_path}/threaddesk.sqlite"
    receiver = Receiver()
    with running_emulator(swift_bin / "discord-emulator") as discord, tempfile.TemporaryFile(mode="w+") as log:
        control = discord["controlURL"]
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        server = _start(swift_bin, discord, store, port, secret_file, receiver, log)
        try:
            session = requests.post(base + "/v1/session", json={}, headers={"X-App-Key": APP_KEY}, timeout=10).json()
            auth = {"Authorization": f"Bearer {session['token']}"}

            def send(text: str) -> None:
                answer = requests.post(base + "/v1/messages", json={"content": text}, headers={**auth, "Idempotency-Key": text}, timeout=10)
                assert answer.status_code == 201, answer.text

            send("m0")
            receiver.wait_for("the first message", lambda got: len(got) >= 1)
            deadline = time.monotonic() + 30
            while not requests.get(control + "/threads", timeout=5).json():
                assert time.monotonic() < deadline, "the first message never made the thread"
                time.sleep(0.05)
            thread = requests.get(control + "/threads", timeout=5).json()[0]["id"]
            # An internal note, then a reply: only the reply leaves.
            assert requests.post(f"{control}/threads/{thread}/notes", json={"content": "refund quietly"}, timeout=5).ok
            assert requests.post(f"{control}/threads/{thread}/replies", json={"content": "r1"}, timeout=5).ok
            receiver.wait_for("the reply", lambda got: any(c == "r1" for _, _, c in got))

            # The receiver holds the next delivery; the process dies while it waits for the answer.
            receiver.hold = lambda event: event["data"].get("content") == "m1"
            send("m1")
            send("m2")
            receiver.wait_for("m1 held", lambda got: any(c == "m1" for _, _, c in got))
            held_id = next(i for i, _, c in receiver.contents() if c == "m1")
            server.send_signal(signal.SIGKILL)
            server.wait(timeout=10)
            receiver.hold = None
            receiver.release.set()

            server = _start(swift_bin, discord, store, port, secret_file, receiver, log)
            receiver.wait_for("m1 again and m2", lambda got: [c for _, _, c in got].count("m1") >= 2 and "m2" in [c for _, _, c in got])
            got = receiver.contents()
            assert all(d["verified"] for d in receiver.deliveries), "every delivery verifies by the README"
            assert all(d["header"] == d["event"]["id"] for d in receiver.deliveries)
            schema = webhook_schema()
            for delivery in receiver.deliveries:
                schema.validate(delivery["event"])
            assert [i for i, _, c in got if c == "m1"] == [held_id, held_id], "sent again with the same id"
            # In order: each distinct delivery once (m1 twice, the second time answered), m2 after m1.
            # (The conversation's own events, conversation.created among them, are other tests'.)
            first_seen = []
            for delivery_id, event_type, content in got:
                if event_type == "message.created" and delivery_id not in [i for i, _ in first_seen]:
                    first_seen.append((delivery_id, content))
            assert [c for _, c in first_seen] == ["m0", "r1", "m1", "m2"], got
            assert not any(t in ("message.updated", "message.deleted") for _, t, _ in got), got
            assert not any(b"refund" in d["body"] for d in receiver.deliveries), "a note never leaves"
        finally:
            receiver.release.set()
            if server.poll() is None:
                server.kill()
                server.wait(timeout=10)
            receiver.server.shutdown()
            log.seek(0)
            output = log.read()
            assert "Fatal error" not in output, output[-4000:]
            assert SECRET not in output, "the secret is never logged"


def test_a_webhook_its_receiver_turned_off_is_listed_and_turned_on_by_the_admin(swift_bin, tmp_path):
    secret_file = tmp_path / "webhook-secret"
    secret_file.write_text(SECRET + "\n")
    store = f"sqlite://{tmp_path}/threaddesk.sqlite"
    receiver = Receiver()
    receiver.status = 410
    with running_emulator(swift_bin / "discord-emulator") as discord, tempfile.TemporaryFile(mode="w+") as log:
        port = free_port()
        base = f"http://127.0.0.1:{port}"
        server = _start(swift_bin, discord, store, port, secret_file, receiver, log)
        try:
            session = requests.post(base + "/v1/session", json={}, headers={"X-App-Key": APP_KEY}, timeout=10).json()
            answer = requests.post(base + "/v1/messages", json={"content": "gone?"},
                                   headers={"Authorization": f"Bearer {session['token']}", "Idempotency-Key": "k1"}, timeout=10)
            assert answer.status_code == 201, answer.text
            receiver.wait_for("the delivery answered 410", lambda got: len(got) >= 1)
        finally:
            server.terminate()
            server.wait(timeout=30)
            receiver.server.shutdown()

        def admin(*arguments):
            return subprocess.run([str(swift_bin / "threaddesk"), "admin", "webhooks", *arguments, "--store", store, "--env-file", "/nonexistent"],
                                  capture_output=True, text=True, timeout=60)

        deadline = time.monotonic() + 30
        while "127.0.0.1" not in (listed := admin("list")).stdout:
            assert time.monotonic() < deadline, listed.stdout + listed.stderr
            time.sleep(0.1)
        assert "default  127.0.0.1  off since" in listed.stdout, listed.stdout
        turned = admin("on", receiver.url)
        assert turned.returncode == 0 and "on again" in turned.stdout, turned.stdout + turned.stderr
        assert admin("list").stdout.strip() == "No webhook is off."
        assert "is not off" in admin("on", receiver.url).stdout
