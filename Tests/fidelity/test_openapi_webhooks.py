"""The emulator's command, interaction and webhook routes, their answers and errors checked against Discord's OpenAPI document."""
import asyncio
import json

import aiohttp  # disnake's and discord.py's own dependency
import requests

from test_openapi import Discord


def test_command_and_webhook_routes_answer_in_discords_shapes(emulator, openapi):
    discord = Discord(emulator, openapi)
    app, guild, forum = emulator["applicationID"], emulator["guildID"], emulator["forumChannelID"]
    commands = f"/applications/{app}/guilds/{guild}/commands"
    template = "/applications/{application_id}/guilds/{guild_id}/commands"
    registered, _ = discord.call("PUT", template, commands, 200, json_body=[
        {"name": "close", "description": "Close it", "default_member_permissions": 8192, "contexts": [0],
         "options": [{"type": 3, "name": "reason", "description": "Why", "required": True, "autocomplete": True}]},
        {"name": "ticket", "description": "Tools", "options": [
            {"type": 1, "name": "assign", "description": "Assign", "options": [{"type": 6, "name": "agent", "description": "Who"}]}]},
    ])
    assert [c["name"] for c in registered] == ["close", "ticket"]
    discord.call("GET", template, commands, 200)
    discord.call("GET", "/applications/{application_id}/commands", f"/applications/{app}/commands", 200)
    invalid, _ = discord.call("GET", template, f"/applications/1/guilds/{guild}/commands", 404)
    assert invalid["code"] == 10002

    thread, _ = discord.call("POST", "/channels/{channel_id}/threads", f"/channels/{forum}/threads", 201,
                             json_body={"name": "hooked", "message": {"content": "hi"}})
    hook, _ = discord.call("POST", "/channels/{channel_id}/webhooks", f"/channels/{forum}/webhooks", 200,
                           json_body={"name": "relay"})
    discord.call("GET", "/channels/{channel_id}/webhooks", f"/channels/{forum}/webhooks", 200)
    discord.call("GET", "/webhooks/{webhook_id}", f"/webhooks/{hook['id']}", 200)
    execute = "/webhooks/{webhook_id}/{webhook_token}"
    posted, _ = discord.call("POST", execute, f"/webhooks/{hook['id']}/{hook['token']}", 200,
                             params={"wait": "true", "thread_id": thread["id"]},
                             json_body={"content": "from the app", "username": "Jane"})
    assert posted["webhook_id"] == hook["id"] and posted["author"]["username"] == "Jane"
    discord.call("POST", execute, f"/webhooks/{hook['id']}/{hook['token']}", 204,
                 params={"thread_id": thread["id"]}, json_body={"content": "no wait"})
    refused, _ = discord.call("POST", execute, f"/webhooks/{hook['id']}/{hook['token']}", 400, json_body={"content": "x"})
    assert refused["code"] == 220001
    forged = requests.post(f"{emulator['restURL']}/webhooks/{hook['id']}/forged", json={"content": "x"},
                           params={"thread_id": thread["id"]}, timeout=10)
    assert forged.status_code == 401 and forged.json()["code"] == 50027
    discord.call("DELETE", "/webhooks/{webhook_id}", f"/webhooks/{hook['id']}", 204)
    gone, _ = discord.call("GET", "/webhooks/{webhook_id}", f"/webhooks/{hook['id']}", 404)
    assert gone["code"] == 10015
    listed = requests.get(f"{emulator['controlURL']}/webhooks", timeout=10).json()
    assert listed == []


def test_interaction_callbacks_and_follow_ups_answer_in_discords_shapes(emulator, openapi):
    """The token comes over the gateway, as an application gets it (plain JSON, no compression)."""
    discord = Discord(emulator, openapi)
    app, guild, forum, control = emulator["applicationID"], emulator["guildID"], emulator["forumChannelID"], emulator["controlURL"]
    discord.call("PUT", "/applications/{application_id}/guilds/{guild_id}/commands", f"/applications/{app}/guilds/{guild}/commands",
                 200, json_body=[{"name": "close", "description": "Close it"}])
    thread, _ = discord.call("POST", "/channels/{channel_id}/threads", f"/channels/{forum}/threads", 201,
                             json_body={"name": "commands", "message": {"content": "hi"}})

    async def interaction_token() -> dict:
        async with aiohttp.ClientSession() as session:
            async with session.ws_connect(emulator["gatewayURL"] + "?v=10&encoding=json") as socket:
                await socket.receive_json(timeout=10)
                await socket.send_json({"op": 2, "d": {"token": emulator["botToken"], "intents": 0, "properties": {}}})
                await asyncio.to_thread(requests.post, f"{control}/threads/{thread['id']}/commands", json={"name": "close"}, timeout=10)
                while True:
                    payload = json.loads((await socket.receive(timeout=10)).data)
                    if payload.get("t") == "INTERACTION_CREATE":
                        return payload["d"]

    interaction = asyncio.run(interaction_token())
    callback = "/interactions/{interaction_id}/{interaction_token}/callback"
    path = f"/interactions/{interaction['id']}/{interaction['token']}/callback"
    answered, _ = discord.call("POST", callback, path, 200, params={"with_response": "true"},
                               json_body={"type": 4, "data": {"content": "Closed."}})
    assert answered["resource"]["message"]["type"] == 20
    again, _ = discord.call("POST", callback, path, 400, json_body={"type": 4, "data": {"content": "again"}})
    assert again["code"] == 40060
    hook = "/webhooks/{webhook_id}/{webhook_token}"
    follow_up, _ = discord.call("POST", hook, f"/webhooks/{app}/{interaction['token']}", 200, json_body={"content": "More."})
    assert follow_up["interaction_metadata"]["id"] == interaction["id"]
    original = "/webhooks/{webhook_id}/{webhook_token}/messages/@original"
    edited, _ = discord.call("PATCH", original, f"/webhooks/{app}/{interaction['token']}/messages/@original", 200,
                             json_body={"content": "Closed, edited."})
    assert edited["content"] == "Closed, edited."
    discord.call("GET", original, f"/webhooks/{app}/{interaction['token']}/messages/@original", 200)
    discord.call("DELETE", "/webhooks/{webhook_id}/{webhook_token}/messages/{message_id}",
                 f"/webhooks/{app}/{interaction['token']}/messages/{follow_up['id']}", 204)
    snapshot = requests.get(f"{control}/interactions/{interaction['id']}", timeout=10).json()
    assert snapshot["content"] == "Closed, edited." and snapshot["followups"] == []
