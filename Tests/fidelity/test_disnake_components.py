"""disnake posts buttons, answers one click by editing the message (7) and another with a modal (9),
and that modal's submit by deferring (6) and editing the original: the emulator's clicks, modals and
submits must be what disnake parses, and its answers what the emulator takes."""
import asyncio
import time

import disnake
import requests
from disnake.ext import commands


def wait_for(condition, what: str, timeout: float = 20):
    """Polls `condition` until it returns something truthy; fails naming `what` after `timeout` s."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


def test_disnake_answers_clicks_and_modal_submits(emulator, monkeypatch):
    monkeypatch.setattr(disnake.http.Route, "BASE", emulator["restURL"])
    control = emulator["controlURL"]

    def snapshot(interaction_id):
        return requests.get(f"{control}/interactions/{interaction_id}", timeout=10).json()

    def messages(thread):
        return {m["id"]: m for m in requests.get(f"{control}/threads/{thread}/messages", timeout=10).json()}

    async def scenario():
        intents = disnake.Intents.default()
        intents.message_content = True
        bot = commands.InteractionBot(intents=intents)
        submitted = {}

        @bot.listen("on_button_click")
        async def clicked(inter: disnake.MessageInteraction):
            if inter.component.custom_id == "draft:discard":
                await inter.response.edit_message(content=":ninja: discarded", components=[])
            elif inter.component.custom_id == "draft:edit":
                await inter.response.send_modal(
                    title="Edit the draft", custom_id="draft:edit:modal",
                    components=[disnake.ui.TextInput(
                        label="Answer", custom_id="text", style=disnake.TextInputStyle.paragraph, value=inter.message.content,
                        max_length=1500)])

        @bot.listen("on_modal_submit")
        async def sent(inter: disnake.ModalInteraction):
            submitted.update(inter.text_values)
            # Without a message: DEFERRED_UPDATE_MESSAGE (6), the original then being the message clicked.
            await inter.response.defer(with_message=False)
            await inter.edit_original_message(content=inter.text_values["text"], components=[])

        ready = asyncio.Event()

        @bot.event
        async def on_ready():
            ready.set()

        runner = asyncio.ensure_future(bot.start(emulator["botToken"]))
        try:
            await asyncio.wait_for(ready.wait(), timeout=20)
            forum = bot.get_channel(int(emulator["forumChannelID"]))
            created = await forum.create_thread(name="drafts", content="hello")
            thread = created.thread
            buttons = [
                disnake.ui.Button(label="Edit", custom_id="draft:edit"),
                disnake.ui.Button(label="Discard", custom_id="draft:discard", style=disnake.ButtonStyle.danger),
                disnake.ui.Button(label="FAQ", url="https://example.com/faq"),
            ]
            first = await thread.send(":ninja: first draft", components=buttons)
            second = await thread.send(":ninja: second draft", components=buttons)
            shown = messages(thread.id)[str(first.id)]
            assert [b.get("customID") for b in shown["buttons"]] == ["draft:edit", "draft:discard", None]

            def click(message, custom_id):
                answer = requests.post(f"{control}/messages/{thread.id}/{message.id}/click", json={"customId": custom_id}, timeout=10)
                assert answer.status_code == 200, answer.text
                return answer.json()

            discard = await asyncio.to_thread(click, first, "draft:discard")
            done = await asyncio.to_thread(
                wait_for, lambda: (lambda s: s if s["acknowledged"] else None)(snapshot(discard["id"])), "disnake's update")
            assert done["callbackType"] == 7 and done["updatedContent"] == ":ninja: discarded"
            assert messages(thread.id)[str(first.id)]["buttons"] == []

            edit = await asyncio.to_thread(click, second, "draft:edit")
            opened = await asyncio.to_thread(
                wait_for, lambda: (lambda s: s if s["acknowledged"] else None)(snapshot(edit["id"])), "disnake's modal")
            assert opened["callbackType"] == 9 and opened["modal"]["title"] == "Edit the draft"
            assert [(i["customID"], i["value"]) for i in opened["modal"]["inputs"]] == [("text", ":ninja: second draft")]
            submit = await asyncio.to_thread(
                requests.post, f"{control}/interactions/{edit['id']}/modal", json={"values": {"text": "Hello there"}}, timeout=10)
            assert submit.status_code == 200, submit.text
            await asyncio.to_thread(
                wait_for, lambda: messages(thread.id)[str(second.id)]["content"] == "Hello there", "disnake's edit of the original")
            assert snapshot(submit.json()["id"])["callbackType"] == 6 and submitted == {"text": "Hello there"}
            assert messages(thread.id)[str(second.id)]["buttons"] == []
        finally:
            await bot.close()
            runner.cancel()

    asyncio.run(scenario())
