"""A second third-party Discord library, disnake, with its defaults (zlib-stream transport
compression included) against the emulator's REST and gateway: it must get READY and hear the
agent's MESSAGE_CREATE in a forum thread, as it would from Discord."""
import asyncio

import disnake
import requests


def test_disnake_connects_with_its_defaults_and_hears_the_agent(emulator, monkeypatch):
    # disnake has no setting for the API's address; everything else is left as it ships.
    monkeypatch.setattr(disnake.http.Route, "BASE", emulator["restURL"])

    async def scenario():
        intents = disnake.Intents.default()
        intents.message_content = True
        client = disnake.Client(intents=intents)
        ready = asyncio.Event()
        heard: asyncio.Queue = asyncio.Queue()

        @client.event
        async def on_ready():
            ready.set()

        @client.event
        async def on_message(message: disnake.Message):
            await heard.put(message)

        runner = asyncio.ensure_future(client.start(emulator["botToken"]))
        try:
            await asyncio.wait_for(ready.wait(), timeout=20)
            assert str(client.user.id) == emulator["botUserID"]
            thread = await asyncio.to_thread(
                requests.post, f"{emulator['restURL']}/channels/{emulator['forumChannelID']}/threads",
                json={"name": "disnake user", "message": {"content": "hello"}},
                headers={"Authorization": f"Bot {emulator['botToken']}"}, timeout=10)
            assert thread.status_code in (200, 201), thread.text
            thread_id = thread.json()["id"]
            answer = await asyncio.to_thread(
                requests.post, f"{emulator['controlURL']}/threads/{thread_id}/replies", json={"content": "agent answer"}, timeout=10)
            assert answer.status_code == 200
            while True:
                message = await asyncio.wait_for(heard.get(), timeout=10)
                if message.content == "agent answer":
                    break
            assert str(message.channel.id) == thread_id
            assert not message.author.bot
        finally:
            await client.close()
            runner.cancel()

    asyncio.run(scenario())
    counters = requests.get(f"{emulator['controlURL']}/counters", timeout=10).json()
    assert counters["compressedGatewayConnections"] >= 1, counters
