"""The emulator's answers, and the requests our Swift client sends, checked against Discord's OpenAPI document."""
import json
import os
import pathlib

import pytest
import requests

from openapi_schema import request_errors, response_errors


class Discord:
    """Raw HTTP against the emulator, checking every answer against Discord's schema."""

    def __init__(self, emulator: dict, openapi: dict):
        self.emulator = emulator
        self.openapi = openapi
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bot {emulator['botToken']}"

    def call(self, method: str, template: str, path: str, expect: int, *, json_body=None, files=None, params=None,
             auth=True):
        if json_body is not None and files is None:
            assert not request_errors(self.openapi, method, template, json_body), "our own test request is invalid"
        headers = {} if auth else {"Authorization": "Bot not-the-token"}
        data = {"payload_json": json.dumps(json_body)} if files else None
        response = self.session.request(
            method, self.emulator["restURL"] + path, json=None if files else json_body, data=data, files=files,
            params=params, headers=headers, timeout=10)
        assert response.status_code == expect, response.text
        body = response.json() if response.content else None
        errors = response_errors(self.openapi, method, template, response.status_code, body)
        assert not errors, f"{method} {template} → {response.status_code} breaks Discord's schema: {errors}"
        if response.status_code != 401:
            for header in ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset-After", "X-RateLimit-Bucket"):
                assert header in response.headers, f"{header} missing on {method} {template}"
        return body, response


@pytest.fixture()
def discord(emulator, openapi):
    return Discord(emulator, openapi)


def test_every_route_answers_in_discords_shapes(discord, emulator):
    forum, guild = emulator["forumChannelID"], emulator["guildID"]
    me, _ = discord.call("GET", "/users/@me", "/users/@me", 200)
    assert me["id"] == emulator["botUserID"] and me["bot"] is True
    application, _ = discord.call("GET", "/oauth2/applications/@me", "/oauth2/applications/@me", 200)
    assert application["id"] == emulator["applicationID"] and application["bot"]["id"] == emulator["botUserID"]
    gateway, _ = discord.call("GET", "/gateway/bot", "/gateway/bot", 200)
    assert gateway["url"] == emulator["gatewayURL"]

    thread, _ = discord.call("POST", "/channels/{channel_id}/threads", f"/channels/{forum}/threads", 201, json_body={
        "name": "user 123", "auto_archive_duration": 10080,
        "message": {"content": "hello @everyone", "allowed_mentions": {"parse": []}},
    })
    thread_id = thread["id"]
    assert thread["message"]["id"] == thread_id and thread["parent_id"] == forum
    assert thread["message"]["mention_everyone"] is False

    uploaded, _ = discord.call("POST", "/channels/{channel_id}/threads", f"/channels/{forum}/threads", 201,
                               json_body={"name": "with file", "message": {"content": "see file"}},
                               files={"files[0]": ("diagnostics.json", b'{"a":1}', "application/json")})
    assert uploaded["message"]["attachments"][0]["filename"] == "diagnostics.json"

    posted, _ = discord.call("POST", "/channels/{channel_id}/messages", f"/channels/{thread_id}/messages", 200,
                             json_body={"content": "second", "nonce": "abc", "enforce_nonce": True,
                                        "allowed_mentions": {"parse": []}})
    again, _ = discord.call("POST", "/channels/{channel_id}/messages", f"/channels/{thread_id}/messages", 200,
                            json_body={"content": "second", "nonce": "abc", "enforce_nonce": True})
    assert again["id"] == posted["id"]
    discord.call("POST", "/channels/{channel_id}/messages", f"/channels/{thread_id}/messages", 200,
                 json_body={"content": "", "attachments": [{"id": 0, "filename": "log.txt"}]},
                 files={"files[0]": ("log.txt", b"line", "text/plain")})

    reply = requests.post(f"{emulator['controlURL']}/threads/{thread_id}/replies",
                          json={"content": "agent here", "replyTo": posted["id"]}, timeout=10).json()
    assert reply["type"] == 19
    requests.post(f"{emulator['controlURL']}/threads/{thread_id}/notes", json={"content": "internal"}, timeout=10)

    page, _ = discord.call("GET", "/channels/{channel_id}/messages", f"/channels/{thread_id}/messages", 200,
                           params={"limit": 10})
    assert [m["content"] for m in page][:2] == [":ninja: internal", "agent here"]
    assert page[1]["referenced_message"]["id"] == posted["id"]
    discord.call("GET", "/channels/{channel_id}/messages/{message_id}", f"/channels/{thread_id}/messages/{posted['id']}", 200)
    discord.call("GET", "/channels/{channel_id}", f"/channels/{thread_id}", 200)
    discord.call("POST", "/channels/{channel_id}/typing", f"/channels/{thread_id}/typing", 204)
    discord.call("PUT", "/channels/{channel_id}/messages/{message_id}/reactions/{emoji_name}/@me",
                 f"/channels/{thread_id}/messages/{posted['id']}/reactions/%E2%9C%85/@me", 204)
    active, _ = discord.call("GET", "/guilds/{guild_id}/threads/active", f"/guilds/{guild}/threads/active", 200)
    assert thread_id in [t["id"] for t in active["threads"]]
    discord.call("PATCH", "/channels/{channel_id}", f"/channels/{thread_id}", 200, json_body={"archived": True})
    # The FAQ forum's archived posts stay answers: ThreadDesk reads them here at start.
    archived, _ = discord.call("GET", "/channels/{channel_id}/threads/archived/public",
                               f"/channels/{forum}/threads/archived/public", 200, params={"limit": 2})
    assert archived["threads"][0]["id"] == thread_id and archived["threads"][0]["thread_metadata"]["archived"] is True
    older, _ = discord.call("GET", "/channels/{channel_id}/threads/archived/public",
                            f"/channels/{forum}/threads/archived/public", 200,
                            params={"before": archived["threads"][0]["thread_metadata"]["archive_timestamp"]})
    assert thread_id not in [t["id"] for t in older["threads"]]


def test_errors_answer_in_discords_shapes(discord, emulator):
    forum = emulator["forumChannelID"]
    body, _ = discord.call("GET", "/channels/{channel_id}", "/channels/1", 404)
    assert body["code"] == 10003
    thread, _ = discord.call("POST", "/channels/{channel_id}/threads", f"/channels/{forum}/threads", 201,
                             json_body={"name": "errors", "message": {"content": "hi"}})
    too_long = {"content": "x" * 2001}
    response = discord.session.post(f"{emulator['restURL']}/channels/{thread['id']}/messages", json=too_long, timeout=10)
    assert response.status_code == 400 and response.json()["code"] == 50035
    assert "_errors" in response.json()["errors"]["content"]
    assert not response_errors(discord.openapi, "POST", "/channels/{channel_id}/messages", 400, response.json())
    body, _ = discord.call("GET", "/users/@me", "/users/@me", 401, auth=False)
    assert body["code"] == 0

    requests.put(f"{emulator['controlURL']}/forum/require-tag", json={"required": True}, timeout=10)
    body, _ = discord.call("POST", "/channels/{channel_id}/threads", f"/channels/{forum}/threads", 400,
                           json_body={"name": "untagged", "message": {"content": "hi"}})
    assert body["code"] == 40067


def test_a_burst_gets_discords_429(discord, emulator):
    forum = emulator["forumChannelID"]
    thread, _ = discord.call("POST", "/channels/{channel_id}/threads", f"/channels/{forum}/threads", 201,
                             json_body={"name": "burst", "message": {"content": "hi"}})
    path = f"/channels/{thread['id']}/messages"
    for index in range(5):
        discord.call("POST", "/channels/{channel_id}/messages", path, 200, json_body={"content": f"m{index}"})
    body, response = discord.call("POST", "/channels/{channel_id}/messages", path, 429, json_body={"content": "over"})
    assert body["global"] is False and 0 < body["retry_after"] <= 5
    assert response.headers["X-RateLimit-Scope"] == "user"
    assert int(response.headers["Retry-After"]) >= 1
    counters = requests.get(f"{emulator['controlURL']}/counters", timeout=10).json()
    assert counters["rateLimited"] == 1


def test_requests_from_our_swift_client_fit_discords_schema(openapi):
    """The Swift tests dump what the emulator received from DiscordREST; every body must be valid."""
    folder = os.environ.get("THREADDESK_FIDELITY_DIR")
    if not folder:
        pytest.skip("run through scripts/test, which runs the Swift tests first")
    recorded = json.loads((pathlib.Path(folder) / "swift-client-requests.json").read_text())
    checked = 0
    for request in recorded:
        if request["method"] in ("POST", "PATCH") and request.get("body") is not None and request["status"] < 400:
            errors = request_errors(openapi, request["method"], request["route"], request["body"])
            assert not errors, f"{request['method']} {request['route']}: {errors}"
            checked += 1
    routes = {r["route"] for r in recorded}
    assert {"/channels/{channel_id}/threads", "/channels/{channel_id}/messages"} <= routes
    assert checked >= 3


def test_the_guild_its_roles_and_the_bots_membership_answer_in_discords_shapes(discord, emulator):
    """What `threaddesk doctor` reads: the guild and its roles, the bot as a member (its managed
    role), the forum's overwrites once the bot is denied a permission there."""
    guild, bot, forum = emulator["guildID"], emulator["botUserID"], emulator["forumChannelID"]
    body, _ = discord.call("GET", "/guilds/{guild_id}", f"/guilds/{guild}", 200)
    assert body["id"] == guild and body["roles"][0]["id"] == guild
    roles, _ = discord.call("GET", "/guilds/{guild_id}/roles", f"/guilds/{guild}/roles", 200)
    bot_role = next(role for role in roles if role.get("tags", {}).get("bot_id") == bot)
    assert bot_role["managed"] is True and int(bot_role["permissions"]) & (1 << 34)
    member, _ = discord.call("GET", "/guilds/{guild_id}/members/{user_id}", f"/guilds/{guild}/members/{bot}", 200)
    assert member["user"]["id"] == bot and member["roles"] == [bot_role["id"]]
    discord.call("GET", "/guilds/{guild_id}/members/{user_id}", f"/guilds/{guild}/members/1", 404)

    assert requests.post(f"{emulator['controlURL']}/forum/deny-bot", json={"permissions": "64"}, timeout=10).status_code == 204
    channel, _ = discord.call("GET", "/channels/{channel_id}", f"/channels/{forum}", 200)
    assert channel["permission_overwrites"] == [{"id": bot, "type": 1, "allow": "0", "deny": "64"}]
    requests.put(f"{emulator['controlURL']}/application/message-content", json={"enabled": False}, timeout=10)
    application, _ = discord.call("GET", "/oauth2/applications/@me", "/oauth2/applications/@me", 200)
    assert application["flags"] & (1 << 18 | 1 << 19) == 0


def test_buttons_clicks_and_modals_fit_discords_schemas(discord, emulator, openapi):
    """A note with buttons, its edit, a click answered by an update (7), another answered by a
    modal (9) whose submit is deferred (6) and then edited through `@original`: every request
    fits Discord's request schema (`discord.call` checks it) and every answer its response schema."""
    control = emulator["controlURL"]
    thread, _ = discord.call("POST", "/channels/{channel_id}/threads", f"/channels/{emulator['forumChannelID']}/threads", 201,
                             json_body={"name": "draft", "message": {"content": "hello"}})
    thread_id = thread["id"]
    row = {"type": 1, "components": [
        {"type": 2, "style": 3, "label": "Send", "custom_id": "draft:send:1"},
        {"type": 2, "style": 2, "label": "Edit", "custom_id": "draft:edit:1"},
        {"type": 2, "style": 4, "label": "Discard", "custom_id": "draft:discard:1"},
        {"type": 2, "style": 5, "label": "FAQ", "url": "https://example.com/faq"},
    ]}
    note, _ = discord.call("POST", "/channels/{channel_id}/messages", f"/channels/{thread_id}/messages", 200,
                           json_body={"content": ":ninja: draft", "components": [row], "allowed_mentions": {"parse": []}})
    assert [b["id"] for b in note["components"][0]["components"]] == [2, 3, 4, 5] and note["components"][0]["id"] == 1
    message_path = f"/channels/{thread_id}/messages/{note['id']}"
    edited, _ = discord.call("PATCH", "/channels/{channel_id}/messages/{message_id}", message_path, 200,
                             json_body={"content": ":ninja: draft (2)", "components": [row]})
    assert edited["content"] == ":ninja: draft (2)" and len(edited["components"][0]["components"]) == 4

    def click(custom_id):
        response = requests.post(f"{control}/messages/{thread_id}/{note['id']}/click", json={"customId": custom_id}, timeout=10)
        assert response.status_code == 200, response.text
        return response.json()

    callback = "/interactions/{interaction_id}/{interaction_token}/callback"
    discard = click("draft:discard:1")
    assert discard["type"] == 3 and discard["messageID"] == note["id"]
    updated, _ = discord.call("POST", callback, f"/interactions/{discard['id']}/{discard['token']}/callback", 200,
                              json_body={"type": 7, "data": {"content": ":ninja: discarded", "components": []}},
                              params={"with_response": "true"})
    assert updated["resource"]["type"] == 7 and updated["resource"]["message"]["components"] == []
    discord.call("PATCH", "/channels/{channel_id}/messages/{message_id}", message_path, 200, json_body={"components": [row]})

    edit = click("draft:edit:1")
    modal = {"type": 9, "data": {"custom_id": "draft:edit:1", "title": "Edit the draft", "components": [
        {"type": 1, "components": [{"type": 4, "custom_id": "text", "style": 2, "label": "Answer", "value": "Hi",
                                    "max_length": 1500}]},
        {"type": 18, "label": "Note", "component": {"type": 4, "custom_id": "note", "style": 1, "required": False}},
    ]}}
    discord.call("POST", callback, f"/interactions/{edit['id']}/{edit['token']}/callback", 204, json_body=modal)
    shown = requests.get(f"{control}/interactions/{edit['id']}", timeout=10).json()
    assert shown["modal"]["title"] == "Edit the draft" and [i["customID"] for i in shown["modal"]["inputs"]] == ["text", "note"]
    submit = requests.post(f"{control}/interactions/{edit['id']}/modal", json={"values": {"text": "Hello"}}, timeout=10).json()
    assert submit["type"] == 5 and submit["customID"] == "draft:edit:1" and submit["messageID"] == note["id"]
    discord.call("POST", callback, f"/interactions/{submit['id']}/{submit['token']}/callback", 204, json_body={"type": 6})
    original, _ = discord.call(
        "PATCH", "/webhooks/{webhook_id}/{webhook_token}/messages/@original",
        f"/webhooks/{emulator['applicationID']}/{submit['token']}/messages/@original", 200,
        json_body={"content": ":ninja: sent", "components": [], "allowed_mentions": {"parse": []}})
    assert original["id"] == note["id"] and original["content"] == ":ninja: sent"
    follow_up, _ = discord.call("POST", "/webhooks/{webhook_id}/{webhook_token}",
                                f"/webhooks/{emulator['applicationID']}/{submit['token']}", 200,
                                json_body={"content": "Sent.", "flags": 64, "allowed_mentions": {"parse": []}})
    assert follow_up["flags"] & 64 and follow_up["interaction_metadata"]["type"] == 5
    again = requests.post(f"{control}/interactions/{submit['id']}/redeliver", timeout=10)
    assert again.status_code == 200 and again.json()["id"] == submit["id"]

    # A limit broken: Discord's error shape, with the field's path.
    response = discord.session.post(f"{emulator['restURL']}/channels/{thread_id}/messages", timeout=10, json={
        "content": "x", "components": [{"type": 1, "components": [{"type": 2, "style": 1, "label": "x" * 81, "custom_id": "l"}]}]})
    assert response.status_code == 400 and response.json()["code"] == 50035
    assert "_errors" in response.json()["errors"]["components"]["0"]["components"]["0"]["label"]
    assert not response_errors(discord.openapi, "POST", "/channels/{channel_id}/messages", 400, response.json())
