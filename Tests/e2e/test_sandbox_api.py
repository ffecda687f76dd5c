"""The sandbox's own routes answer bad input with a JSON 4xx, like the API they sit beside; the console's
buttons and modals act on a draft note as an agent in Discord does."""
import re
import time
import uuid

import pytest
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
    assert state.status_code == 200 and set(state.json()) == {"threads", "pushes", "webhooks"}
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


def _until(what: str, probe, timeout: float = 30):
    """`probe()`'s first truthy answer; the test fails, naming `what`, once `timeout` seconds pass."""
    deadline = time.monotonic() + timeout
    while True:
        found = probe()
        if found:
            return found
        if time.monotonic() > deadline:
            pytest.fail(f"no {what} within {timeout} s")
        time.sleep(0.1)


def _thread(base: str, thread_id: str) -> dict:
    state = requests.get(base + "/sandbox/api/state", timeout=10).json()
    return next(t for t in state["threads"] if t["id"] == thread_id)


def _draft_text(note: str) -> str:
    """The draft as Send posts it: the note's quoted lines (between the heading and the sources), unescaped."""
    quoted = note.split("\n")[1:-1]
    assert quoted and all(line.startswith("> ") for line in quoted), note
    return re.sub(r"\\(.)", r"\1", "\n".join(line[2:] for line in quoted), flags=re.S)


def test_a_draft_note_is_sent_as_is_or_edited_from_the_console(sandbox):
    """A user's message gets a draft note with Send / Edit / Discard; the console's Send posts the
    draft to the user and the note loses its buttons; on the next message, Edit opens the modal
    prefilled with the draft, and its submit sends the edited text."""
    base = sandbox["url"]
    token = requests.post(base + "/v1/session", json={}, headers={"X-App-Key": sandbox["app_key"]}, timeout=10).json()["token"]
    auth = {"Authorization": f"Bearer {token}"}
    tag = uuid.uuid4().hex[:8]

    def write(text: str, key: str):
        sent = requests.post(base + "/v1/messages", json={"content": text}, headers={**auth, "Idempotency-Key": key}, timeout=10)
        assert sent.status_code == 201, sent.text

    def waiting_draft(thread_id: str, after: set[str]):
        notes = [m for m in _thread(base, thread_id)["messages"] if m["isNote"] and "Draft answer" in m["content"] and m["id"] not in after]
        return next((n for n in notes if n["buttons"]), None)

    def support_reply(text: str):
        messages = requests.get(base + "/v1/messages", headers=auth, timeout=10).json()["messages"]
        return next((m for m in messages if m["author"] == "support" and m["content"] == text), None)

    def interaction(id: str) -> dict:
        answer = requests.get(f"{base}/sandbox/api/interactions/{id}", timeout=10)
        assert answer.status_code == 200, answer.text
        return answer.json()

    def click(thread_id: str, note_id: str, custom_id: str) -> str:
        answer = requests.post(f"{base}/sandbox/api/messages/{thread_id}/{note_id}/click", json={"customId": custom_id}, timeout=10)
        assert answer.status_code == 201, answer.text
        return answer.json()["id"]

    first = f"I can't connect my TV ({tag})"
    write(first, f"drafts-{tag}-1")
    thread = _until("thread for the user's message", lambda: next(
        (t["id"] for t in requests.get(base + "/sandbox/api/state", timeout=10).json()["threads"]
         if any(m["content"].endswith(first) for m in t["messages"])), None))
    note = _until("draft note with buttons", lambda: waiting_draft(thread, set()))
    assert [(b["label"], b["style"], b["disabled"]) for b in note["buttons"]] == [
        ("Send", "primary", False), ("Edit", "secondary", False), ("Discard", "danger", False)], note["buttons"]
    ids = [b["customId"] for b in note["buttons"]]
    draft = re.fullmatch(r"td1:(\d+):s", ids[0])
    assert draft and ids[1:] == [f"td1:{draft[1]}:e", f"td1:{draft[1]}:d"], ids
    text = _draft_text(note["content"])

    # Send, as the console's agent: a deferred update, then the reply reaches the user as the draft says.
    sent = click(thread, note["id"], ids[0])
    assert interaction(sent)["type"] == 3 and interaction(sent)["customId"] == ids[0]
    reply = _until("support reply with the draft's text in GET /v1/messages", lambda: support_reply(text))
    assert reply["authorName"], reply
    settled = _until("note without buttons after Send", lambda: next(
        (m for m in _thread(base, thread)["messages"] if m["id"] == note["id"] and not m["buttons"]), None))
    assert "Draft sent by" in settled["content"], settled["content"]
    answered = interaction(sent)
    assert answered["acknowledged"] and answered["callbackType"] == 6 and answered["followups"] == [], answered
    # The note has nothing to click any more.
    again = requests.post(f"{base}/sandbox/api/messages/{thread}/{note['id']}/click", json={"customId": ids[0]}, timeout=10)
    assert again.status_code == 400 and again.json()["error"]["code"] == "discord_refused", again.text

    # The next message: Edit opens the modal with the draft; its submit sends the edited text.
    write(f"It still does not work ({tag})", f"drafts-{tag}-2")
    second = _until("second draft note with buttons", lambda: waiting_draft(thread, {note["id"]}))
    edit = next(b["customId"] for b in second["buttons"] if b["label"] == "Edit")
    opened = click(thread, second["id"], edit)
    modal = _until("modal answering Edit", lambda: interaction(opened)["modal"])
    assert modal["title"] and not modal["submitted"], modal
    assert [i["customId"] for i in modal["inputs"]] == ["text"] and modal["inputs"][0]["value"] == _draft_text(second["content"]), modal
    # Discord refuses an input the modal does not have; nothing is sent, the modal stays open.
    wrong = requests.post(f"{base}/sandbox/api/interactions/{opened}/modal", json={"values": {"nope": "x"}}, timeout=10)
    assert wrong.status_code == 400 and wrong.json()["error"]["code"] == "discord_refused", wrong.text
    edited = f"Please restart the TV and try again ({tag})."
    submit = requests.post(f"{base}/sandbox/api/interactions/{opened}/modal", json={"values": {"text": edited}}, timeout=10)
    assert submit.status_code == 201, submit.text
    submitted = submit.json()["id"]
    assert submitted != opened and interaction(submitted)["type"] == 5
    _until("support reply with the edited text in GET /v1/messages", lambda: support_reply(edited))
    settled = _until("second note without buttons after the edit", lambda: next(
        (m for m in _thread(base, thread)["messages"] if m["id"] == second["id"] and not m["buttons"]), None))
    assert "edited and sent" in settled["content"], settled["content"]
    assert interaction(opened)["modal"]["submitted"] is True
    # A modal is sent once.
    twice = requests.post(f"{base}/sandbox/api/interactions/{opened}/modal", json={"values": {"text": edited}}, timeout=10)
    assert twice.status_code == 400 and twice.json()["error"]["code"] == "discord_refused", twice.text
    # The user never sees a note.
    messages = requests.get(base + "/v1/messages", headers=auth, timeout=10).json()["messages"]
    assert not any("Draft" in m["content"] for m in messages), messages


def test_clicks_and_modals_are_validated(sandbox):
    base = sandbox["url"]
    click = base + "/sandbox/api/messages/{}/{}/click"
    cases = [
        ("1", "2", b"not json", 400, "invalid_click"),
        ("1", "2", b"{}", 400, "invalid_click"),
        ("1", "2", b'{"customId": ""}', 400, "invalid_click"),
        ("1", "2", b'{"customId": 5}', 400, "invalid_click"),
        ("1", "2", b'{"customId": "' + b"x" * 101 + b'"}', 400, "invalid_click"),
        ("1", "2", b'{"customId": "' + b"x" * 20_000 + b'"}', 400, "invalid_click"),
        # Discord's client shows nothing to click: no such message, or not a snowflake.
        ("123456789", "987654321", b'{"customId": "td1:1:s"}', 400, "discord_refused"),
        ("thread", "message", b'{"customId": "td1:1:s"}', 400, "discord_refused"),
    ]
    for channel, message, body, status, code in cases:
        answer = requests.post(click.format(channel, message), data=body, headers={"Content-Type": "application/json"}, timeout=10)
        assert answer.status_code == status, (channel, message, body[:40], answer.text)
        assert answer.json()["error"]["code"] == code

    for id in ("1", "123456789", "abc"):
        answer = requests.get(f"{base}/sandbox/api/interactions/{id}", timeout=10)
        assert answer.status_code == 404 and answer.json()["error"]["code"] == "unknown_interaction", answer.text

    modal = base + "/sandbox/api/interactions/{}/modal"
    cases = [
        ("1", b"not json", 400, "invalid_modal"),
        ("1", b"{}", 400, "invalid_modal"),
        ("1", b'{"values": {"text": 5}}', 400, "invalid_modal"),
        ("1", b'{"values": ["text"]}', 400, "invalid_modal"),
        ("1", b'{"values": {"text": "' + b"x" * 4001 + b'"}}', 400, "invalid_modal"),
        ("1", b'{"values": {"a": "", "b": "", "c": "", "d": "", "e": "", "f": ""}}', 400, "invalid_modal"),
        ("1", b'{"values": {"text": "' + b"x" * 70_000 + b'"}}', 413, "body_too_large"),
        ("123456789", b'{"values": {"text": "hello"}}', 404, "unknown_interaction"),
        ("abc", b'{"values": {"text": "hello"}}', 404, "unknown_interaction"),
    ]
    for id, body, status, code in cases:
        answer = requests.post(modal.format(id), data=body, headers={"Content-Type": "application/json"}, timeout=10)
        assert answer.status_code == status, (id, body[:40], answer.text)
        assert answer.json()["error"]["code"] == code
