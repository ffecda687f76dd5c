"""The sandbox's two pages in a real headless Chromium: a message typed in the widget reaches the
agent console, a reply typed in the console reaches the widget (over its event stream) and the
APNs emulator, a `:ninja:` note stays in the console only, each side sees the other typing, and
the console shows what the user has read."""
import shutil
import struct
import time
import uuid
import zlib

import pytest
import requests
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.ui import WebDriverWait


def _find(name: str) -> str:
    for candidate in (name, f"/usr/bin/{name}", f"/usr/lib/chromium/{name}"):
        path = shutil.which(candidate)
        if path:
            return path
    pytest.fail(f"{name} is not installed (Debian: apt-get install chromium chromium-driver)")


@pytest.fixture()
def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = _find("chromium")
    for argument in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--window-size=1280,900"):
        options.add_argument(argument)
    # A driver path given up front: Selenium must not try to download one.
    driver = webdriver.Chrome(service=Service(executable_path=_find("chromedriver")), options=options)
    try:
        yield driver
    finally:
        driver.quit()


def _texts(driver, selector: str) -> list[str]:
    # The pages redraw as they poll: an element can go stale between finding and reading it.
    for _ in range(20):
        try:
            return [element.text for element in driver.find_elements(By.CSS_SELECTOR, selector)]
        except StaleElementReferenceException:
            continue
    return []


def _wait_for_text(driver, selector: str, text: str, timeout: float = 20):
    try:
        WebDriverWait(driver, timeout).until(lambda d: any(text in t for t in _texts(d, selector)))
    except TimeoutException:
        pytest.fail(f"{text!r} never appeared in {selector}; saw {_texts(driver, selector)}")


def _png(width: int, height: int, rgb: tuple[int, int, int]) -> bytes:
    """A real PNG a browser can decode: one colour, 8-bit RGB."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    rows = b"".join(b"\x00" + bytes(rgb) * width for _ in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b"")


def _image_shown(driver, selector: str) -> bool:
    """An image under `selector` has loaded and decoded (not a broken-image icon)."""
    return driver.execute_script(
        "return Array.from(document.querySelectorAll(arguments[0])).some(i => i.complete && i.naturalWidth > 0)", selector)


def test_widget_and_console_talk_through_threaddesk(sandbox, browser, tmp_path):
    wait = WebDriverWait(browser, 20)
    question = f"My sync is stuck ({uuid.uuid4().hex[:8]})"
    answer = f"Try pulling to refresh ({uuid.uuid4().hex[:8]})"
    note = f"looks like the timeout bug ({uuid.uuid4().hex[:8]})"

    # The app user, in the widget.
    browser.get(sandbox["url"] + "/sandbox/widget")
    wait.until(lambda d: d.find_element(By.ID, "user-id").text not in ("", "connecting…"), message="no session")
    user_id = browser.find_element(By.ID, "user-id").text
    widget = browser.current_window_handle
    browser.find_element(By.ID, "message-input").send_keys(question)
    browser.find_element(By.ID, "send-button").click()
    _wait_for_text(browser, '#messages .message[data-author="user"]', question)
    assert browser.find_element(By.ID, "error").text == ""
    # Kept by ThreadDesk at once, then delivered: the mark follows the message's delivery.
    _wait_for_text(browser, '#messages .message[data-author="user"] .delivery[data-delivery="sent"]', "Sent")

    # The support agent, in the console: the user's thread shows the question.
    browser.switch_to.new_window("tab")
    console = browser.current_window_handle
    browser.get(sandbox["url"] + "/sandbox/console")
    # Threads are named for the conversation: the question is the thread's name.
    thread = f'//div[@class="name" and starts-with(text(), "{question}")]'
    WebDriverWait(browser, 20, ignored_exceptions=[StaleElementReferenceException]).until(
        lambda d: d.find_element(By.XPATH, thread).click() or True, message="the user's thread never appeared")
    _wait_for_text(browser, '#thread-messages .message[data-author="app"]', question)

    # A note first, then the reply.
    browser.find_element(By.ID, "reply-input").send_keys(note)
    browser.find_element(By.ID, "note-button").click()
    _wait_for_text(browser, "#thread-messages .message.note", note)
    browser.find_element(By.ID, "reply-input").send_keys(answer)
    browser.find_element(By.ID, "reply-button").click()
    _wait_for_text(browser, '#thread-messages .message[data-author="agent"]', answer)

    # The reply reaches the phone as a push (through the gateway and APNs emulators)...
    _wait_for_text(browser, "#pushes .push .body", answer)

    # ...and the widget shows it, without the note: it arrives on the widget's event stream (the
    # page does not poll).
    browser.switch_to.window(widget)
    _wait_for_text(browser, '#messages .message[data-author="support"]', answer)
    assert not any(note in text for text in _texts(browser, "#messages .message")), "an internal note reached the user"
    assert browser.find_element(By.ID, "messages").get_attribute("data-live") == "true"

    # The user starts typing: the console shows it (Discord's typing indicator on the thread).
    browser.find_element(By.ID, "message-input").send_keys("one more thing")
    browser.switch_to.window(console)
    wait.until(lambda d: d.find_element(By.ID, "user-typing").is_displayed(), message="the console never showed the user typing")

    # The widget read the reply when it showed it: the console shows the read receipt on it.
    _wait_for_text(browser, "#thread-messages .message .reactions", "👀")
    read = [t for t in _texts(browser, '#thread-messages .message[data-author="agent"]') if "👀" in t]
    assert len(read) == 1 and answer in read[0], read

    # The agent starts typing: the widget shows "Support is typing…" (TYPING_START through the gateway).
    browser.find_element(By.ID, "reply-input").send_keys("let me check")
    browser.switch_to.window(widget)
    wait.until(lambda d: d.find_element(By.ID, "agent-typing").is_displayed(), message="the widget never showed the agent typing")
    browser.find_element(By.ID, "message-input").clear()

    # Diagnostics from the widget land in the thread as a file, for the agent's eyes only.
    browser.find_element(By.ID, "diagnostics-button").click()
    wait.until(lambda d: d.find_element(By.ID, "diagnostics-status").text.startswith("sent "), message="no upload")
    filename = browser.find_element(By.ID, "diagnostics-status").text.split()[1]
    browser.switch_to.window(console)
    _wait_for_text(browser, "#thread-messages .message.note .files", filename)
    browser.switch_to.window(widget)
    assert not any(filename in text for text in _texts(browser, "#messages .message"))

    # The user sends a screenshot with a line of text: the agent sees the image in the thread.
    screenshot = tmp_path / "screenshot.png"
    screenshot.write_bytes(_png(40, 30, (200, 30, 30)))
    browser.find_element(By.ID, "message-input").send_keys("the screen looks like this")
    browser.find_element(By.ID, "file-input").send_keys(str(screenshot))
    browser.find_element(By.ID, "send-button").click()
    wait.until(lambda d: _image_shown(d, '#messages .message[data-author="user"] img.attachment-image'),
               message="the widget never showed the user's own screenshot")
    assert browser.find_element(By.ID, "error").text == ""
    browser.switch_to.window(console)
    wait.until(lambda d: _image_shown(d, '#thread-messages .message[data-author="app"] img.attachment-image'),
               message="the console never showed the user's screenshot")

    # The agent answers with an image: the widget shows it inline, fetched through ThreadDesk (with
    # the user's token), never from Discord's CDN.
    annotated = tmp_path / "annotated.png"
    annotated.write_bytes(_png(20, 20, (30, 200, 30)))
    browser.find_element(By.ID, "reply-input").clear()
    browser.find_element(By.ID, "reply-input").send_keys("marked the button")
    browser.find_element(By.ID, "reply-file").send_keys(str(annotated))
    browser.find_element(By.ID, "reply-button").click()
    browser.switch_to.window(widget)
    selector = '#messages .message[data-author="support"] img.attachment-image'
    wait.until(lambda d: _image_shown(d, selector), message="the widget never showed the agent's image")
    sources = [image.get_attribute("src") for image in browser.find_elements(By.CSS_SELECTOR, selector)]
    assert sources and all(source.startswith("blob:") for source in sources), sources

    # The desk: the agent runs slash commands from the console's command box, as in Discord.
    browser.switch_to.window(console)

    def run(line: str) -> str:
        box = browser.find_element(By.ID, "command-input")
        box.clear()
        box.send_keys(line)
        before = browser.find_element(By.ID, "desk-answer-text").text
        browser.find_element(By.ID, "command-button").click()
        WebDriverWait(browser, 20).until(
            lambda d: d.find_element(By.ID, "desk-answer-text").text not in ("", before), message=f"{line} got no answer")
        return browser.find_element(By.ID, "desk-answer-text").text

    card = run("/user")
    assert user_id in card and "1.0.0 (1)" in card, card
    # What the widget says about its user: the attributes and what they did, on the card.
    assert "Attributes" in card and "plan" in card and "pro" in card and "support.opened" in card, card
    assert "Added" in run("/snippets add thanks Thanks! You are on {app_version}.")
    assert "Sent" in run("/snippet thanks")
    _wait_for_text(browser, '#thread-messages .message[data-author="agent"]', "Thanks! You are on 1.0.0.")
    # The thread list shows the status tags as Discord's forum list does.
    _wait_for_text(browser, "#threads .thread.selected .tag", "waiting on user")
    assert "being closed" in run("/close Glad it works!")
    _wait_for_text(browser, "#threads .thread.selected .tag", "resolved")
    _wait_for_text(browser, "#threads .thread.selected .meta", "archived")

    # The app shows the snippet and the goodbye as support, with the agent's name.
    browser.switch_to.window(widget)
    _wait_for_text(browser, '#messages .message[data-author="support"]', "Thanks! You are on 1.0.0.")
    _wait_for_text(browser, '#messages .message[data-author="support"]', "Glad it works!")


def test_the_widget_suggests_curated_answers_while_the_user_types(sandbox, browser):
    """The sandbox's FAQ forum holds "I can't connect my TV": a misspelled line finds it, and the
    message sent right after it names it for the agent in a note."""
    browser.get(sandbox["url"] + "/sandbox/widget")
    WebDriverWait(browser, 20).until(lambda d: d.find_element(By.ID, "user-id").text not in ("", "connecting…"), message="no session")
    line = f"cant conect tv ({uuid.uuid4().hex[:6]})"
    browser.find_element(By.ID, "message-input").send_keys("cant conect tv")
    _wait_for_text(browser, "#suggestions .suggestion summary", "I can't connect my TV")
    browser.find_element(By.ID, "message-input").send_keys(Keys.CONTROL, "a")
    browser.find_element(By.ID, "message-input").send_keys(line)
    browser.find_element(By.ID, "send-button").click()
    _wait_for_text(browser, '#messages .message[data-author="user"]', line)
    assert not browser.find_element(By.ID, "suggestions").is_displayed()
    # The agent sees which answer the user had read, in a note of the thread.
    browser.get(sandbox["url"] + "/sandbox/console")
    thread = f'//div[@class="name" and starts-with(text(), "{line}")]'
    WebDriverWait(browser, 20, ignored_exceptions=[StaleElementReferenceException]).until(
        lambda d: d.find_element(By.XPATH, thread).click() or True, message="the user's thread never appeared")
    _wait_for_text(browser, "#thread-messages .message.note", "I can't connect my TV")


def test_the_widget_at_phone_width_shows_no_stray_badge_id_glyph_or_overflow(sandbox, browser, tmp_path):
    """The newcomer's first screen, 480 pixels wide: no unread badge at 0, a title that is not the
    raw user id, the paperclip drawn (not an emoji a browser without the font shows as a box), and
    nothing past the right edge (the file pickers were cut off). A screenshot is kept."""
    browser.set_window_size(480, 900)
    browser.get(sandbox["url"] + "/sandbox/widget")
    WebDriverWait(browser, 20).until(lambda d: d.find_element(By.ID, "user-id").text not in ("", "connecting…"), message="no session")
    user_id = browser.find_element(By.ID, "user-id").text
    # The stream is open and its first `unread` (0) has been shown.
    WebDriverWait(browser, 20).until(
        lambda d: d.execute_script("return document.getElementById('unread').textContent") == "0"
        or not d.find_element(By.ID, "unread").is_displayed(), message="no unread count")
    assert not browser.find_element(By.ID, "unread").is_displayed(), "an unread badge shows 0"
    header = browser.find_element(By.CSS_SELECTOR, ".phone header").text
    assert user_id not in header and header.startswith("Support"), header
    phone_text = browser.find_element(By.CSS_SELECTOR, ".phone").text
    assert "\U0001F4CE" not in phone_text, "the paperclip is an emoji glyph"
    clip = browser.find_element(By.CSS_SELECTOR, "label.pick .icon-clip")
    assert clip.size["width"] > 0 and "svg" in browser.execute_script(
        "return getComputedStyle(arguments[0]).backgroundImage", clip)
    overflow = browser.execute_script("""
        const phone = document.querySelector('.phone').getBoundingClientRect();
        const out = Array.from(document.querySelectorAll('.phone *')).filter((e) => {
            const box = e.getBoundingClientRect();
            return box.width > 1 && (box.right > phone.right + 0.5 || box.right > window.innerWidth + 0.5);
        }).map((e) => e.id || e.className || e.tagName);
        return {out, scroll: document.documentElement.scrollWidth, width: window.innerWidth};""")
    assert overflow["out"] == [] and overflow["scroll"] <= overflow["width"], overflow
    shot = tmp_path / "widget-480.png"
    assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 1000


def test_the_widget_says_when_support_is_away(sandbox, browser):
    """An agent's `/away on` in Discord: the widget says so before the user writes, and stops
    saying it after `/away off`."""
    browser.set_window_size(480, 900)
    browser.get(sandbox["url"] + "/sandbox/widget")
    WebDriverWait(browser, 20).until(lambda d: d.find_element(By.ID, "user-id").text not in ("", "connecting…"), message="no session")
    assert not browser.find_element(By.ID, "away-banner").is_displayed()
    line = f"is anyone there? ({uuid.uuid4().hex[:8]})"
    browser.find_element(By.ID, "message-input").send_keys(line)
    browser.find_element(By.ID, "send-button").click()
    deadline = time.monotonic() + 20
    thread = None
    while thread is None and time.monotonic() < deadline:
        state = requests.get(sandbox["url"] + "/sandbox/api/state", timeout=5).json()
        thread = next((t for t in state["threads"] if any(line in m["content"] for m in t["messages"])), None)
        time.sleep(0.1)
    assert thread, f"no thread holds {line!r}"

    def away(on: bool):
        answer = requests.post(f"{sandbox['url']}/sandbox/api/threads/{thread['id']}/commands",
                               json={"line": "/away on" if on else "/away off"}, timeout=10)
        assert answer.status_code == 200, answer.text

    away(True)
    try:
        browser.refresh()
        WebDriverWait(browser, 20).until(lambda d: d.find_element(By.ID, "away-banner").is_displayed(), message="no away banner")
        assert "away" in browser.find_element(By.ID, "away-banner").text
    finally:
        away(False)
    browser.refresh()
    WebDriverWait(browser, 20).until(lambda d: d.find_element(By.ID, "user-id").text not in ("", "connecting…"), message="no session")
    WebDriverWait(browser, 20).until(lambda d: not d.find_element(By.ID, "away-banner").is_displayed(), message="the banner stayed")


def test_the_widget_opens_as_either_app_and_the_console_shows_both_forums(sandbox, browser):
    """The sandbox runs two apps: the widget opened with ?app=tides is a user of the second app,
    whose message starts a thread in that app's own forum; the console lists both forums' threads,
    each named with its app."""
    config = requests.get(sandbox["url"] + "/sandbox/api/config", timeout=5).json()
    assert [app["id"] for app in config["apps"]] == ["default", "tides"], config["apps"]
    sent = {}
    for app, query in (("Sandbox app", ""), ("Tides", "?app=tides")):
        browser.get(sandbox["url"] + "/sandbox/widget" + query)
        WebDriverWait(browser, 20).until(lambda d: d.find_element(By.ID, "user-id").text not in ("", "connecting…"), message="no session")
        assert browser.find_element(By.ID, "app-name").text == app
        line = f"hello from {app} ({uuid.uuid4().hex[:8]})"
        browser.find_element(By.ID, "message-input").send_keys(line)
        browser.find_element(By.ID, "send-button").click()
        sent[app] = line
    deadline = time.monotonic() + 20
    found = {}
    while len(found) < 2 and time.monotonic() < deadline:
        state = requests.get(sandbox["url"] + "/sandbox/api/state", timeout=5).json()
        for app, line in sent.items():
            thread = next((t for t in state["threads"] if any(line in m["content"] for m in t["messages"])), None)
            if thread:
                found[app] = thread
        time.sleep(0.1)
    assert set(found) == {"Sandbox app", "Tides"}, f"threads found for {sorted(found)}"
    assert found["Tides"]["app"] == "Tides" and found["Sandbox app"]["app"] == "Sandbox app"
    assert found["Tides"]["id"] != found["Sandbox app"]["id"]
    # Each forum's thread holds its own app user's message only.
    assert not any(sent["Sandbox app"] in m["content"] for m in found["Tides"]["messages"])


def test_the_console_draws_a_draft_notes_buttons_and_its_edit_modal(sandbox, browser):
    """A user's message gets a draft note a moment later (the sandbox's model): the console draws
    Send / Edit / Discard under it in Discord's colours; Edit opens the modal prefilled with the
    draft, and its submit sends the edited text, after which the note has nothing to click."""
    base = sandbox["url"]
    token = requests.post(base + "/v1/session", json={}, headers={"X-App-Key": sandbox["app_key"]}, timeout=10).json()["token"]
    key = uuid.uuid4().hex[:8]
    line = f"I can't connect my TV ({key})"
    sent = requests.post(base + "/v1/messages", json={"content": line},
                         headers={"Authorization": f"Bearer {token}", "Idempotency-Key": "draft-" + key}, timeout=10)
    assert sent.status_code == 201, sent.text
    browser.get(base + "/sandbox/console")
    thread = f'//div[@class="name" and starts-with(text(), "{line}")]'
    WebDriverWait(browser, 20, ignored_exceptions=[StaleElementReferenceException]).until(
        lambda d: d.find_element(By.XPATH, thread).click() or True, message="the user's thread never appeared")
    buttons = "#thread-messages .message.note .buttons button"
    WebDriverWait(browser, 30).until(lambda d: _texts(d, buttons) == ["Send", "Edit", "Discard"],
                                     message="the draft note's buttons never appeared")
    styles = [b.get_attribute("class").split()[-1] for b in browser.find_elements(By.CSS_SELECTOR, buttons)]
    assert styles == ["primary", "secondary", "danger"], styles

    edit = '//div[@id="thread-messages"]//div[contains(@class, "note")]//button[text()="Edit"]'
    WebDriverWait(browser, 20, ignored_exceptions=[StaleElementReferenceException]).until(
        lambda d: d.find_element(By.XPATH, edit).click() or True, message="no Edit button to click")
    WebDriverWait(browser, 20).until(lambda d: d.find_element(By.ID, "modal").is_displayed(), message="Edit opened no modal")
    box = browser.find_element(By.CSS_SELECTOR, "#modal-inputs textarea")
    assert box.get_attribute("value").strip(), "the modal's text is not prefilled with the draft"
    edited = f"Restart the TV, then try again ({uuid.uuid4().hex[:8]})"
    box.clear()
    box.send_keys(edited)
    browser.find_element(By.ID, "modal-submit").click()
    _wait_for_text(browser, '#thread-messages .message[data-author="agent"]', edited)
    WebDriverWait(browser, 20).until(lambda d: not d.find_elements(By.CSS_SELECTOR, buttons), message="the sent draft kept its buttons")
    assert not browser.find_element(By.ID, "modal").is_displayed()
    assert browser.find_element(By.ID, "error").text == ""

    # The next draft is discarded (by another agent, say) while its modal is open: the submit's
    # answer shows for the agent only, as Discord shows an ephemeral follow-up.
    again = requests.post(base + "/v1/messages", json={"content": f"Still nothing ({key})"},
                          headers={"Authorization": f"Bearer {token}", "Idempotency-Key": "draft-2-" + key}, timeout=10)
    assert again.status_code == 201, again.text
    WebDriverWait(browser, 30).until(lambda d: _texts(d, buttons) == ["Send", "Edit", "Discard"],
                                     message="the second draft note's buttons never appeared")
    WebDriverWait(browser, 20, ignored_exceptions=[StaleElementReferenceException]).until(
        lambda d: d.find_element(By.XPATH, edit).click() or True, message="no Edit button to click")
    WebDriverWait(browser, 20).until(lambda d: d.find_element(By.ID, "modal").is_displayed(), message="Edit opened no modal")
    state = requests.get(base + "/sandbox/api/state", timeout=10).json()
    ours = next(t for t in state["threads"] if t["name"].startswith(line))
    note = next(m for m in ours["messages"] if m["buttons"])
    discard = requests.post(f"{base}/sandbox/api/messages/{ours['id']}/{note['id']}/click",
                            json={"customId": note["buttons"][2]["customId"]}, timeout=10)
    assert discard.status_code == 201, discard.text
    WebDriverWait(browser, 20).until(lambda d: not d.find_elements(By.CSS_SELECTOR, buttons), message="the discarded draft kept its buttons")
    browser.find_element(By.ID, "modal-submit").click()
    WebDriverWait(browser, 20).until(lambda d: d.find_element(By.ID, "interaction-answer").is_displayed(), message="no answer for the agent")
    answer = browser.find_element(By.ID, "interaction-answer").text
    assert "only you can see this" in answer and "discarded" in answer, answer


def test_a_crash_report_from_the_widget_is_a_note_and_the_rule_answers_the_user(sandbox, browser):
    """The widget's "Send a crash report" sends the sample app MyShop's crash (its dSYM uploaded at
    the sandbox's start): the console shows the note, symbolicated, with the payload attached; after
    `/crash id:C… fixed:4.3` from the console, a 4.2 report is answered in the widget, a 4.3 one is
    a regression."""
    wait = WebDriverWait(browser, 30)
    question = f"The app closed at checkout ({uuid.uuid4().hex[:8]})"
    browser.get(sandbox["url"] + "/sandbox/widget")
    wait.until(lambda d: d.find_element(By.ID, "user-id").text not in ("", "connecting…"), message="no session")
    widget = browser.current_window_handle
    browser.find_element(By.ID, "message-input").send_keys(question)
    browser.find_element(By.ID, "send-button").click()
    _wait_for_text(browser, '#messages .message[data-author="user"] .delivery[data-delivery="sent"]', "Sent")

    def send_crash(version: str) -> str:
        before = browser.find_element(By.ID, "crash-status").get_attribute("data-report")
        field = browser.find_element(By.ID, "crash-version")
        field.clear()
        field.send_keys(version)
        browser.find_element(By.ID, "crash-button").click()
        wait.until(lambda d: d.find_element(By.ID, "crash-status").get_attribute("data-report") not in (None, before),
                   message=f"no answer to the {version} report")
        text = browser.find_element(By.ID, "crash-status").text
        assert f"reported from {version}, symbolicated: yes" in text, (text, browser.find_element(By.ID, "error").text)
        return browser.find_element(By.ID, "crash-status").get_attribute("data-group")

    group = send_crash("4.2")
    assert group.startswith("C"), group

    # The console: the note in the user's thread, the app's frames named, the payload a link.
    browser.switch_to.new_window("tab")
    console = browser.current_window_handle
    browser.get(sandbox["url"] + "/sandbox/console")
    WebDriverWait(browser, 20, ignored_exceptions=[StaleElementReferenceException]).until(
        lambda d: d.find_element(By.XPATH, f'//div[@class="name" and starts-with(text(), "{question}")]').click() or True,
        message="the user's thread never appeared")
    _wait_for_text(browser, "#thread-messages .message.note", f"Crash {group}")
    note = next(t for t in _texts(browser, "#thread-messages .message.note") if f"Crash {group}" in t)
    assert "CheckoutView.submit()" in note and "CheckoutView.swift:42" in note and "4.2" in note, note
    links = browser.find_elements(By.CSS_SELECTOR, "#thread-messages .message.note .files a.attachment-link")
    payload = next(link for link in links if link.text.endswith(".json"))
    attached = requests.get(payload.get_attribute("href"), timeout=10)
    assert attached.status_code == 200 and "crashDiagnostics" in attached.json(), attached.text[:200]

    # The rule, from the console's command box.
    box = browser.find_element(By.ID, "command-input")
    box.send_keys(f"/crash id:{group} fixed:4.3")
    browser.find_element(By.ID, "command-button").click()
    _wait_for_text(browser, "#desk-answer-text", "Marked fixed in 4.3")

    # Another 4.2 report: the user is told to update, in the widget, as support.
    browser.switch_to.window(widget)
    assert send_crash("4.2") == group
    _wait_for_text(browser, '#messages .message[data-author="support"]', "fixed in 4.3", timeout=30)

    # A report from 4.3: the console shows the regression.
    assert send_crash("4.3") == group
    browser.switch_to.window(console)
    _wait_for_text(browser, "#thread-messages .message.note", "Regression: marked fixed in 4.3, seen again in 4.3", timeout=30)

    # Support's numbers, from the same box: the user's conversation counted.
    box = browser.find_element(By.ID, "command-input")
    box.clear()
    box.send_keys("/stats")
    browser.find_element(By.ID, "command-button").click()
    _wait_for_text(browser, "#desk-answer-text", "Support, last 30 days")
    stats = browser.find_element(By.ID, "desk-answer-text").text
    assert "opened" in stats and "First response" in stats, stats


def test_the_widget_help_tab_browses_searches_reads_and_asks(sandbox, browser):
    """The Help tab is the app's help center (the sandbox's FAQ forum): browse by tag, search as
    you type (a typo too), read an article with its screenshot (the read counted), then "Still
    need help?" opens the chat about it and the message sent names the article for support."""
    wait = WebDriverWait(browser, 20)
    browser.set_window_size(480, 900)
    browser.get(sandbox["url"] + "/sandbox/widget")
    wait.until(lambda d: d.find_element(By.ID, "user-id").text not in ("", "connecting…"), message="no session")
    browser.find_element(By.ID, "tab-help").click()
    assert not browser.find_element(By.ID, "message-input").is_displayed()
    _wait_for_text(browser, "#help-list .help-item", "I can't connect my TV")
    titles = _texts(browser, "#help-list .help-item")
    assert len(titles) >= 5, titles

    # By tag: television's articles only.
    wait.until(lambda d: d.find_elements(By.CSS_SELECTOR, '#help-tags button[data-tag="television"]'), message="no tags")
    browser.find_element(By.CSS_SELECTOR, '#help-tags button[data-tag="television"]').click()
    wait.until(lambda d: all("television" in t for t in _texts(d, "#help-list .help-item")) and _texts(d, "#help-list .help-item"),
               message="the tag did not filter")
    browser.find_element(By.CSS_SELECTOR, '#help-tags button[data-tag=""]').click()

    # Search as you type, misspelled.
    browser.find_element(By.ID, "help-search").send_keys("restore purchses")
    wait.until(lambda d: (_texts(d, "#help-list .help-item") or [""])[0].startswith("Restore my purchases"), message="search found nothing")
    browser.find_element(By.ID, "help-search").send_keys(Keys.CONTROL, "a")
    browser.find_element(By.ID, "help-search").send_keys("add by hand button")
    wait.until(lambda d: (_texts(d, "#help-list .help-item") or [""])[0].startswith("Where is the Add by hand button?"),
               message="the article with the screenshot was not found")

    # Read it: the text, the screenshot fetched through ThreadDesk, the read counted.
    browser.find_element(By.CSS_SELECTOR, "#help-list .help-item").click()
    wait.until(lambda d: d.find_element(By.ID, "help-article").is_displayed(), message="the article did not open")
    assert "Bottom right of Settings" in browser.find_element(By.ID, "help-text").text
    assert "keywords" not in browser.find_element(By.ID, "help-text").text
    wait.until(lambda d: _image_shown(d, "#help-article img.attachment-image"), message="the article's screenshot never showed")
    wait.until(lambda d: d.find_element(By.ID, "help-article").get_attribute("data-counted") == "true", message="the read was not counted")
    article_id = browser.find_element(By.ID, "help-article").get_attribute("data-id")

    # Still need help? The chat, about the article: the next message names it for the agent.
    browser.find_element(By.ID, "help-still").click()
    wait.until(lambda d: d.find_element(By.ID, "message-input").is_displayed(), message="the chat did not open")
    assert "Where is the Add by hand button?" in browser.find_element(By.ID, "chat-context").text
    line = f"I cannot find that button ({uuid.uuid4().hex[:8]})"
    browser.find_element(By.ID, "message-input").send_keys(line)
    browser.find_element(By.ID, "send-button").click()
    _wait_for_text(browser, '#messages .message[data-author="user"]', line)
    assert not browser.find_element(By.ID, "chat-context").is_displayed()
    deadline = time.monotonic() + 20
    note = None
    while note is None and time.monotonic() < deadline:
        state = requests.get(sandbox["url"] + "/sandbox/api/state", timeout=5).json()
        thread = next((t for t in state["threads"] if any(line in m["content"] for m in t["messages"])), None)
        note = thread and next((m for m in thread["messages"] if article_id in m["content"] and "Add by hand button" in m["content"]), None)
        time.sleep(0.1)
    assert note, "no note in the thread names the article the user read"
