"""`threaddesk-chat` (the terminal client built on ThreadDeskKit) against the running sandbox,
driven through a pseudo-terminal as a person would use it."""
import json
import os
import pathlib
import pty
import select
import subprocess
import time
import uuid

import pytest
import requests

ROOT = pathlib.Path(__file__).resolve().parents[2]
KIT = ROOT / "Clients" / "ThreadDeskKit"


@pytest.fixture(scope="module")
def chat_binary() -> pathlib.Path:
    out = subprocess.run(["swift", "build", "--package-path", str(KIT), "--show-bin-path"], check=True, capture_output=True, text=True)
    binary = pathlib.Path(out.stdout.strip()) / "threaddesk-chat"
    assert binary.exists(), "build the SDK package first: swift build --package-path Clients/ThreadDeskKit"
    return binary


class Terminal:
    """A program on a pseudo-terminal: what it printed so far, and lines typed into it."""

    def __init__(self, argv):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            os.execv(argv[0], argv)
        self.output = ""

    def read_until(self, text: str, timeout: float = 20) -> str:
        deadline = time.monotonic() + timeout
        while text not in self.output:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                pytest.fail(f"the terminal never showed {text!r}; it showed:\n{self.output}")
            ready, _, _ = select.select([self.fd], [], [], remaining)
            if ready:
                try:
                    chunk = os.read(self.fd, 4096)
                except OSError:
                    chunk = b""
                if not chunk:
                    pytest.fail(f"the program ended before showing {text!r}; it showed:\n{self.output}")
                self.output += chunk.decode("utf-8", "replace")
        return self.output

    def type(self, line: str) -> None:
        os.write(self.fd, (line + "\n").encode())

    def close(self) -> int:
        try:
            self.type("/quit")
            deadline = time.monotonic() + 10
            while time.monotonic() < deadline:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
                if pid:
                    return os.waitstatus_to_exitcode(status)
                time.sleep(0.05)
            os.kill(self.pid, 9)
            os.waitpid(self.pid, 0)
            pytest.fail("threaddesk-chat did not quit on /quit")
        finally:
            os.close(self.fd)


def thread_with(sandbox, text: str, timeout: float = 10) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        state = requests.get(sandbox["url"] + "/sandbox/api/state", timeout=5).json()
        for thread in state["threads"]:
            if any(text in message["content"] for message in thread["messages"]):
                return thread
        time.sleep(0.1)
    pytest.fail(f"no thread holds {text!r}")


def test_the_sdk_package_resolves_no_dependency():
    out = subprocess.run(
        ["swift", "package", "--package-path", str(KIT), "show-dependencies", "--format", "json"],
        check=True, capture_output=True, text=True)
    assert json.loads(out.stdout)["dependencies"] == []


def test_a_person_chats_with_support_from_the_terminal(sandbox, chat_binary, tmp_path):
    terminal = Terminal([str(chat_binary), "--server", sandbox["url"], "--state", str(tmp_path / "state")])
    try:
        terminal.read_until("Type a message and press Enter.")
        hello = f"hello from a terminal {uuid.uuid4().hex[:8]}"
        terminal.type(hello)
        terminal.read_until(f"you: {hello}")
        thread = thread_with(sandbox, hello)

        # The agent, in the console, types and then answers: the terminal shows both unasked.
        requests.post(f"{sandbox['url']}/sandbox/api/threads/{thread['id']}/typing", timeout=5).raise_for_status()
        terminal.read_until("support is typing…")
        requests.post(
            f"{sandbox['url']}/sandbox/api/threads/{thread['id']}/replies", json={"content": "Hi! Support here."}, timeout=5
        ).raise_for_status()
        terminal.read_until("(support): Hi! Support here.")

        # A file and diagnostics, from disk.
        (tmp_path / "notes.txt").write_text("steps to reproduce\n")
        terminal.type(f"/file {tmp_path / 'notes.txt'} my notes")
        terminal.read_until("[file: notes.txt, 19 bytes]")
        (tmp_path / "diagnostics.json").write_text(json.dumps({"battery": 0.42, "lastError": "timeout"}))
        terminal.type(f"/diagnostics {tmp_path / 'diagnostics.json'}")
        terminal.read_until("diagnostics uploaded as")
        assert terminal.close() == 0
    except BaseException:
        os.kill(terminal.pid, 9)
        raise

    # The chat shows a message once the server accepted it; Discord gets it after (the outbox):
    # the file's message is waited for, within a deadline, before the thread is read.
    deadline = time.monotonic() + 20
    messages = thread_with(sandbox, hello)["messages"]
    while not any(m["content"] == "my notes" for m in messages) and time.monotonic() < deadline:
        time.sleep(0.1)
        messages = thread_with(sandbox, hello)["messages"]
    assert [m["content"] for m in messages if m["author"] == "app" and not m["isNote"]][-2:] == [hello, "my notes"]
    assert any("notes.txt" in m["attachments"] for m in messages)
    # The reply was shown, so the chat marked it read: the console sees the receipt.
    reply = next(m for m in messages if m["content"] == "Hi! Support here.")
    deadline = time.monotonic() + 10
    while "👀" not in reply["reactions"] and time.monotonic() < deadline:
        time.sleep(0.2)
        reply = next(m for m in thread_with(sandbox, hello)["messages"] if m["content"] == "Hi! Support here.")
    assert "👀" in reply["reactions"]

    # Launched again with the same state: the same user, and the conversation so far.
    again = Terminal([str(chat_binary), "--server", sandbox["url"], "--state", str(tmp_path / "state")])
    try:
        again.read_until("Type a message and press Enter.")
        assert hello in again.output and "Hi! Support here." in again.output
        assert again.close() == 0
    except BaseException:
        os.kill(again.pid, 9)
        raise


def test_ask_shows_a_curated_answer_and_the_next_message_names_it(sandbox, chat_binary, tmp_path):
    """The sandbox's FAQ forum holds "I can't connect my TV": /ask with a misspelled line shows it,
    and the message sent next gets a note naming it for the agent."""
    terminal = Terminal([str(chat_binary), "--server", sandbox["url"], "--state", str(tmp_path / "state")])
    try:
        terminal.read_until("Type a message and press Enter.")
        terminal.type("/ask cant conect tv")
        terminal.read_until("💡 I can't connect my TV")
        line = f"adding it by hand fails {uuid.uuid4().hex[:8]}"
        terminal.type(line)
        terminal.read_until(f"you: {line}")
        assert terminal.close() == 0
    except BaseException:
        os.kill(terminal.pid, 9)
        raise
    # The outbox posts the message, then the note naming the answer the user read.
    deadline = time.monotonic() + 20
    while True:
        notes = [m["content"] for m in thread_with(sandbox, line)["messages"] if m["isNote"]]
        if any("I can't connect my TV" in note for note in notes) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert any("I can't connect my TV" in note for note in notes), notes


def test_an_attested_terminal_chats_through_app_attest(sandbox, chat_binary, tmp_path):
    """The sandbox has APP_ATTEST=optional: `--attest` opens the session as an attested device
    (the sandbox's software attester stands in for the Secure Enclave), and its first message,
    file and diagnostics go out signed."""
    terminal = Terminal([str(chat_binary), "--server", sandbox["url"], "--state", str(tmp_path / "state"), "--attest"])
    try:
        terminal.read_until("(an attested device)")
        terminal.read_until("Type a message and press Enter.")
        hello = f"hello from a genuine device {uuid.uuid4().hex[:8]}"
        terminal.type(hello)
        terminal.read_until(f"you: {hello}")
        (tmp_path / "notes.txt").write_text("signed\n")
        terminal.type(f"/file {tmp_path / 'notes.txt'} signed notes")
        terminal.read_until("[file: notes.txt, 7 bytes]")
        (tmp_path / "diagnostics.json").write_text(json.dumps({"battery": 0.9}))
        terminal.type(f"/diagnostics {tmp_path / 'diagnostics.json'}")
        terminal.read_until("diagnostics uploaded as")
        assert terminal.close() == 0
    except BaseException:
        os.kill(terminal.pid, 9)
        raise
    state = json.loads((tmp_path / "state" / "session.json").read_text())
    assert "." in state["token"].split("~")[-1], "the session's token names no device"
    assert hello in [m["content"] for m in thread_with(sandbox, hello)["messages"]]
