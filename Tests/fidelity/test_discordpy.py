"""A third Discord library, discord.py 2.7, as it ships with its `speed` extra: it then asks for
`zstd-stream` transport compression by default. Against the emulator's REST and gateway it must
get READY and hear the agent's MESSAGE_CREATE in a forum thread, as it would from Discord."""
import asyncio

import discord
import discord.gateway
import discord.utils
import requests
import yarl


def test_discordpy_connects_with_its_defaults_over_zstd_and_hears_the_agent(emulator, monkeypatch):
    # With `zstandard` installed this is discord.py's default, so the test checks what it does.
    assert discord.utils._ActiveDecompressionContext.COMPRESSION_TYPE == "zstd-stream"
    # discord.py has no setting for the API's or the gateway's address (a plain Client connects to
    # wss://gateway.discord.gg without asking); everything else is left as it ships.
    monkeypatch.setattr(discord.http.Route, "BASE", emulator["restURL"])
    monkeypatch.setattr(discord.gateway.DiscordWebSocket, "DEFAULT_GATEWAY", yarl.URL(emulator["gatewayURL"]))

    async def scenario():
        intents = discord.Intents.default()
        intents.message_content = True
        client = discord.Client(intents=intents)
        ready = asyncio.Event()
        heard: asyncio.Queue = asyncio.Queue()

        @client.event
        async def on_ready():
            ready.set()

        @client.event
        async def on_message(message: discord.Message):
            await heard.put(message)

        runner = asyncio.ensure_future(client.start(emulator["botToken"]))
        try:
            await asyncio.wait_for(ready.wait(), timeout=20)
            assert str(client.user.id) == emulator["botUserID"]
            thread = await asyncio.to_thread(
                requests.post, f"{emulator['restURL']}/channels/{emulator['forumChannelID']}/threads",
                json={"name": "discord.py user", "message": {"content": "hello"}},
                headers={"Authorization": f"Bot {emulator['botToken']}"}, timeout=10)
            assert thread.status_code in (200, 201), thread.text
            thread_id = thread.json()["id"]
            # Enough replies, growing, that later ones lean on the stream's shared window.
            contents = [f"agent answer {index} " + "ab" * (index * 40) for index in range(20)]
            for content in contents:
                answer = await asyncio.to_thread(
                    requests.post, f"{emulator['controlURL']}/threads/{thread_id}/replies", json={"content": content}, timeout=10)
                assert answer.status_code == 200
            received = []
            while len(received) < len(contents):
                message = await asyncio.wait_for(heard.get(), timeout=10)
                if message.content.startswith("agent answer"):
                    assert str(message.channel.id) == thread_id
                    assert not message.author.bot
                    received.append(message.content)
            assert received == contents
        finally:
            await client.close()
            runner.cancel()

    asyncio.run(scenario())
    counters = requests.get(f"{emulator['controlURL']}/counters", timeout=10).json()
    assert counters["zstdGatewayConnections"] >= 1, counters
