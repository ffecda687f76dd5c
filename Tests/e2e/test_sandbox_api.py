"""The sandbox's own routes answer bad input with a JSON 4xx, like the API they sit beside."""
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
