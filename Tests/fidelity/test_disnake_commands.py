"""disnake with its defaults syncs guild slash commands against the emulator (its cache fetch, then
its bulk overwrite, as it does on connect) and creates a forum post with a tag (disnake sends tag
ids as JSON numbers); the emulator must take both as Discord does, and answer in Discord's shapes."""
import asyncio
import time

import disnake
import requests
from disnake.ext import commands

from openapi_schema import response_errors


def wait_for(condition, what: str, timeout: float = 20):
    """Polls `condition` until it returns something truthy; fails naming `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_disnake_syncs_guild_commands_and_posts_with_a_tag(emulator, openapi, monkeypatch):
    monkeypatch.setattr(disnake.http.Route, "BASE", emulator["restURL"])
    guild_id = int(emulator["guildID"])
    control = emulator["controlURL"]

    async def scenario():
        intents = disnake.Intents.default()
        intents.message_content = True
        bot = commands.InteractionBot(intents=intents, test_guilds=[guild_id])

        @bot.slash_command(description="Close the conversation", default_member_permissions=disnake.Permissions(manage_threads=True))
        async def close(inter: disnake.ApplicationCommandInteraction, reason: str, notify: bool = True):
            # disnake answers in Discord's ways: the callback, then a follow-up only the agent sees.
            await inter.response.send_message(f"Closed: {reason} (notify {notify})")
            await inter.followup.send("Only you see this", ephemeral=True)

        @close.autocomplete("reason")
        async def reasons(inter: disnake.ApplicationCommandInteraction, typed: str):
            return ["solved", "duplicate"]

        @bot.slash_command(description="Ticket tools")
        async def ticket(inter: disnake.ApplicationCommandInteraction):
            pass

        @ticket.sub_command(description="Assign the ticket")
        async def assign(inter: disnake.ApplicationCommandInteraction, agent: disnake.Member, priority: int = 1):
            pass

        ready = asyncio.Event()

        @bot.event
        async def on_ready():
            ready.set()

        runner = asyncio.ensure_future(bot.start(emulator["botToken"]))
        try:
            await asyncio.wait_for(ready.wait(), timeout=20)
            synced = await asyncio.to_thread(
                wait_for, lambda: len(requests.get(f"{control}/commands", timeout=10).json()) == 2 and
                requests.get(f"{control}/commands", timeout=10).json(), "disnake's command sync")
            by_name = {command["name"]: command for command in synced}
            assert set(by_name) == {"close", "ticket"}
            assert by_name["close"]["optionNames"] == ["reason", "notify"]
            assert by_name["close"]["defaultMemberPermissions"] == str(disnake.Permissions(manage_threads=True).value)
            assert by_name["ticket"]["optionNames"] == ["assign"]

            forum = bot.get_channel(int(emulator["forumChannelID"]))
            assert isinstance(forum, disnake.ForumChannel), forum
            tag = forum.available_tags[0]
            created = await forum.create_thread(name="tagged by disnake", content="hello", applied_tags=[tag])
            assert [t.id for t in created.thread.applied_tags] == [tag.id]

            # The agent uses the commands; disnake parses INTERACTION_CREATE and answers.
            thread = created.thread.id
            run = await asyncio.to_thread(requests.post, f"{control}/threads/{thread}/commands", timeout=10, json={
                "name": "close", "options": [{"name": "reason", "type": 3, "value": "solved"}, {"name": "notify", "type": 5, "value": False}]})
            assert run.status_code == 200, run.text
            answered = await asyncio.to_thread(
                wait_for, lambda: (lambda s: s if s["followups"] else None)(
                    requests.get(f"{control}/interactions/{run.json()['id']}", timeout=10).json()), "disnake's answer")
            assert answered["acknowledged"] and answered["callbackType"] == 4
            assert answered["content"] == "Closed: solved (notify False)" and not answered["ephemeral"]
            assert answered["followups"] == ["Only you see this"]
            asked = await asyncio.to_thread(requests.post, f"{control}/threads/{thread}/autocomplete", timeout=10, json={
                "name": "close", "options": [{"name": "reason", "type": 3, "value": "so", "focused": True}]})
            assert asked.status_code == 200, asked.text
            completed = await asyncio.to_thread(
                wait_for, lambda: (lambda s: s if s["acknowledged"] else None)(
                    requests.get(f"{control}/interactions/{asked.json()['id']}", timeout=10).json()), "disnake's choices")
            assert completed["callbackType"] == 8 and completed["choices"] == ["solved", "duplicate"]
            messages = requests.get(f"{control}/threads/{thread}/messages", timeout=10).json()
            assert [(m["type"], m["content"]) for m in messages] == [(0, "hello"), (20, "Closed: solved (notify False)")]
        finally:
            await bot.close()
            runner.cancel()

    asyncio.run(scenario())

    counters = requests.get(f"{control}/counters", timeout=10).json()
    assert counters["commandOverwrites"] == 1 and counters["commandCreates"] == 2, counters
    recorded = requests.get(f"{control}/requests", timeout=10).json()
    overwrite = next(r for r in recorded if r["method"] == "PUT" and r["route"].endswith("/guilds/{guild_id}/commands"))
    assert overwrite["status"] == 200
    posted = next(r for r in recorded if r["route"] == "/channels/{channel_id}/threads")
    # disnake sends the tag's id as a JSON number (kept as a number when a double holds it exactly,
    # as the digits when it does not); either way the emulator read the very id.
    tag_id = requests.get(f"{control}/threads", timeout=10).json()[0]["appliedTags"][0]
    sent = posted["body"]["applied_tags"]
    assert posted["status"] == 201 and len(sent) == 1 and int(sent[0]) == int(tag_id), sent

    # The same forum post with the tag id as a string, as other clients send it, and Discord's shapes.
    session = requests.Session()
    session.headers["Authorization"] = f"Bot {emulator['botToken']}"
    as_string = session.post(f"{emulator['restURL']}/channels/{emulator['forumChannelID']}/threads", timeout=10,
                             json={"name": "tagged by string", "applied_tags": [tag_id], "message": {"content": "hi"}})
    assert as_string.status_code == 201 and as_string.json()["applied_tags"] == [tag_id], as_string.text
    threads = {t["name"]: t for t in requests.get(f"{control}/threads", timeout=10).json()}
    assert threads["tagged by disnake"]["appliedTags"] == [tag_id]
    assert threads["tagged by string"]["appliedTags"] == [tag_id]

    listed = session.get(f"{emulator['restURL']}/applications/{emulator['applicationID']}/guilds/{guild_id}/commands", timeout=10)
    template = "/applications/{application_id}/guilds/{guild_id}/commands"
    assert not response_errors(openapi, "GET", template, 200, listed.json())
