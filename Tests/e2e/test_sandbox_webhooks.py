"""The sandbox's webhook log: both apps' events come back to the sandbox signed, verified there,
and shown in the console, notes never among them."""
import time

import requests


def test_the_console_logs_the_signed_webhooks(sandbox):
    base = sandbox["url"]
    session = requests.post(base + "/v1/session", json={}, headers={"X-App-Key": sandbox["app_key"]}, timeout=10).json()
    auth = {"Authorization": f"Bearer {session['token']}"}
    sent = requests.post(base + "/v1/messages", json={"content": "hello webhooks"},
                         headers={**auth, "Idempotency-Key": "sandbox-webhook-1"}, timeout=10)
    assert sent.status_code == 201, sent.text

    def logged():
        return requests.get(base + "/sandbox/api/state", timeout=10).json()["webhooks"]

    deadline = time.monotonic() + 60
    while not any(h["type"] == "message.created" and "hello webhooks" in h["data"] for h in logged()):
        assert time.monotonic() < deadline, f"no webhook logged: {logged()}"
        time.sleep(0.1)
    hooks = logged()
    assert all(h["verified"] for h in hooks), hooks
    assert all(h["app"] == "default" for h in hooks if "hello webhooks" in h["data"])
    # A delivery that is not signed with the sandbox's secret is refused and shown as such.
    forged = requests.post(base + "/sandbox/webhook", data=b'{"id":"whd_x","type":"message.created","app":"default","data":{}}',
                           headers={"ThreadDesk-Signature": "t=1,v1=00"}, timeout=10)
    assert forged.status_code == 401
    assert any(not h["verified"] and h["id"] == "whd_x" for h in logged())
