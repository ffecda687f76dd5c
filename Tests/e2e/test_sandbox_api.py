"""The sandbox's own routes answer bad input with a JSON 4xx, like the API they sit beside."""
import time

import requests


def test_agent_replies_are_validated(sandbox):
    replies = sandbox["url"] + "/sandbox/api/threads/{}/replies"
    cases = [
        ("1", b"not json", 400, "invalid_reply"),
        ("1", b'{"content": "   "}', 400, "invalid_reply"),
        ("1", b'{"content": "' + b"x" * 2001 + b'"}', 400, "invalid_reply"),
        ("123456789", b'{"content": "hello"}', 400, "discord_refused"),
        ("1", b'{"content": "' + b"x" * 70_000 + b'"}', 400, "invalid_reply"),
        # Replies may carry files (base64): the body's limit is 16 MiB.
        ("1", b'{"content": "' + b"x" * (16 * 1024 * 1024) + b'"}', 413, "body_too_large"),
    ]
    for thread, body, status, code in cases:
        answer = requests.post(replies.format(thread), data=body, headers={"Content-Type": "application/json"}, timeout=10)
        assert answer.status_code == status, (thread, body[:40], answer.text)
        assert answer.json()["error"]["code"] == code


def test_state_and_pages_are_served(sandbox):
    state = requests.get(sandbox["url"] + "/sandbox/api/state", timeout=10)
    assert state.status_code == 200 and set(state.json()) == {"threads", "pushes"}
    for page in ("console", "widget"):
        answer = requests.get(sandbox["url"] + "/sandbox/" + page, timeout=10)
        assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/html")
    root = requests.get(sandbox["url"] + "/", allow_redirects=False, timeout=10)
    assert root.status_code == 303 and root.headers["location"] == "/sandbox/console"


def test_the_console_marks_notes_as_the_server_reads_them(sandbox):
    """A note is whatever the server hides from the user: `:ninja:`, `🥷` (what Discord's client
    sends for `:ninja:`), after invisible characters too; a user's own text that starts with a
    marker is posted behind a visible prefix and is no note."""
    base = sandbox["url"]
    token = requests.post(base + "/v1/session", json={}, headers={"X-App-Key": sandbox["app_key"]}, timeout=10).json()["token"]
    auth = {"Authorization": f"Bearer {token}"}
    sent = requests.post(base + "/v1/messages", json={"content": ":ninja: not a note, the user typed it"},
                         headers={**auth, "Idempotency-Key": "console-notes-1"}, timeout=10)
    assert sent.status_code == 201, sent.text
    # The outbox delivers it after the answer.
    deadline = time.monotonic() + 20
    while True:
        state = requests.get(base + "/sandbox/api/state", timeout=10).json()
        ours = [t for t in state["threads"] if any(m["content"].endswith("not a note, the user typed it") for m in t["messages"])]
        if ours or time.monotonic() > deadline:
            break
        time.sleep(0.05)
    assert len(ours) == 1, state
    thread = ours[0]["id"]
    for note in ("🥷 internal one", "\u200b:ninja: internal two"):
        answer = requests.post(base + f"/sandbox/api/threads/{thread}/replies", json={"content": note}, timeout=10)
        assert answer.status_code in (200, 201, 204), answer.text
    state = requests.get(base + "/sandbox/api/state", timeout=10).json()
    messages = next(t for t in state["threads"] if t["id"] == thread)["messages"]
    marks = {m["content"]: m["isNote"] for m in messages}
    assert marks["🥷 internal one"] is True and marks["\u200b:ninja: internal two"] is True, marks
    assert [flag for content, flag in marks.items() if content.endswith("not a note, the user typed it")] == [False], marks
