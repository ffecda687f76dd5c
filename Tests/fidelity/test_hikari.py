"""A third-party Discord library, hikari, pointed at the emulator: if it works here, the emulator speaks Discord."""
import asyncio

import hikari
import requests

# hikari runs with its defaults: it asks for zlib-stream transport compression, as Discord's
# gateway offers and the emulator speaks.


def test_hikari_creates_a_forum_post_reads_it_and_hears_the_agent(emulator):
    async def scenario():
        bot = hikari.GatewayBot(
            emulator["botToken"], rest_url=emulator["restURL"], banner=None, logs="WARNING",
            intents=hikari.Intents.GUILDS | hikari.Intents.GUILD_MESSAGES | hikari.Intents.MESSAGE_CONTENT,
        )
        heard: asyncio.Queue = asyncio.Queue()

        @bot.listen(hikari.GuildMessageCreateEvent)
        async def on_message(event: hikari.GuildMessageCreateEvent) -> None:
            await heard.put(event)

        await bot.start(check_for_updates=False)
        try:
            me = bot.get_me()
            assert me is not None and str(me.id) == emulator["botUserID"]
            thread = await bot.rest.create_forum_post(int(emulator["forumChannelID"]), "hikari user", "hello from hikari")
            assert str(thread.parent_id) == emulator["forumChannelID"]
            await bot.rest.create_message(thread.id, "second from hikari")
            messages = await bot.rest.fetch_messages(thread.id).limit(10)
            assert [m.content for m in messages] == ["second from hikari", "hello from hikari"]

            answer = await asyncio.to_thread(
                requests.post, f"{emulator['controlURL']}/threads/{thread.id}/replies",
                json={"content": "agent answer"}, timeout=10)
            assert answer.status_code == 200
            while True:
                event = await asyncio.wait_for(heard.get(), timeout=10)
                if event.content == "agent answer":
                    break
            assert event.channel_id == thread.id
            assert not event.author.is_bot
        finally:
            await bot.close()

    asyncio.run(scenario())
    # hikari's default transport: zlib-stream, not plain JSON.
    counters = requests.get(f"{emulator['controlURL']}/counters", timeout=10).json()
    assert counters["compressedGatewayConnections"] >= 1, counters
